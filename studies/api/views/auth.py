"""The token endpoint: username and password in, the account's API token out."""

from __future__ import annotations

from typing import Any

from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.authentication import ClientRateThrottle
from studies.services.tokens import token_for


class TokenSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField()
    username = serializers.CharField()


@method_decorator(never_cache, name="dispatch")  # the answer is a secret: never stored
class TokenView(ObtainAuthToken):
    """Rate-limited per client address (``API_AUTH_RATE``), successful or not; the
    password check goes through ``authenticate()``, so login throttles (django-axes)
    see these attempts too."""

    parser_classes = [FormParser, MultiPartParser, JSONParser]
    throttle_classes = [ClientRateThrottle]
    throttle_scope = "auth"
    authentication_classes: list[Any] = []

    @extend_schema(
        summary="Get your API token",
        request=AuthTokenSerializer,
        responses={200: TokenSerializer},
        auth=[],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = body.validated_data["user"]
        return Response({"token": token_for(user).key, "username": user.get_username()})
