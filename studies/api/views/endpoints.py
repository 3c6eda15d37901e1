"""Served endpoints: a researcher's own and the shared ones (the same services as the
command and the admin). Another researcher's endpoint answers 404."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import error_response
from studies.api.serializers.endpoints import EndpointSerializer
from studies.api.views.common import OwnedRowsViewSet
from studies.models import Endpoint
from studies.permissions import may_change_endpoint, visible_endpoints
from studies.services.catalog import endpoints


@extend_schema_view(
    list=extend_schema(summary="Served endpoints you may use: yours and the shared ones"),
    retrieve=extend_schema(summary="A served endpoint (its key is never answered)"),
    create=extend_schema(
        summary="Add a served endpoint of yours (the key is write-only; an io worker probes it)"
    ),
    destroy=extend_schema(summary="Delete an endpoint of yours"),
)
class EndpointViewSet(OwnedRowsViewSet):
    serializer_class = EndpointSerializer
    filterset_fields = ["name", "model_id"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Endpoint.objects.none()
        return visible_endpoints(self.request.user).select_related("owner")

    def perform_create(self, serializer: Any) -> None:
        endpoints.request_probe(serializer.save(owner=self.request.user))  # an io worker probes

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        endpoint = self.get_object()
        if not may_change_endpoint(request.user, endpoint):
            return error_response(403, "Only an admin can delete a shared endpoint.")
        endpoint.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Probe the endpoint again (an io worker; its findings appear on it)",
        request=None,
        responses={202: EndpointSerializer},
    )
    @action(detail=True, methods=["post"])
    def probe(self, request: Request, pk: Any = None) -> Response:
        endpoint = self.get_object()
        if not may_change_endpoint(request.user, endpoint):
            return error_response(403, "Only an admin can probe a shared endpoint.")
        with transaction.atomic():
            endpoints.request_probe(endpoint)
        return Response(self.get_serializer(endpoint).data, status=status.HTTP_202_ACCEPTED)
