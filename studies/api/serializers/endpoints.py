"""Served endpoints. The API key is write-only: accepted on create, stored encrypted,
answered only as ``has_api_key``. An endpoint created here is the writer's own: it never
reads its key from the workers' environment (``api_key_env`` is read-only: a shared
endpoint's, set by an operator), and its host must resolve to a public address (or one the operator
allows); limits and prices are within their documented bounds."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import serializers

from studies.api.serializers.types import StrictJsonTypes
from studies.models import Endpoint
from studies.models.endpoints import LIMIT_FIELDS
from studies.services.catalog import endpoint_policy
from studies.services.catalog.endpoints import EndpointProblem, create_endpoint

# what the schema states of a base URL: http(s), a host of letters, digits, dots and
# hyphens (no credentials), an optional port and path
PORT = r"(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
BASE_URL = rf"^https?://[A-Za-z0-9.-]+(:{PORT})?(/[!-~]*)?$"


class EndpointSerializer(StrictJsonTypes, serializers.ModelSerializer):  # type: ignore[type-arg]
    base_url = serializers.RegexField(
        BASE_URL,
        max_length=500,
        help_text="The server's root, e.g. http://gpu-1:8000 (a trailing /v1 is fine).",
    )
    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=1000,
        style={"input_type": "password"},
        help_text="Write-only: stored encrypted, never answered.",
    )
    has_api_key = serializers.BooleanField(read_only=True)
    owner = serializers.CharField(
        source="owner.username", read_only=True, default=None, allow_null=True
    )
    capabilities = serializers.DictField(read_only=True)

    class Meta:
        model = Endpoint
        fields = [
            "id",
            "name",
            "protocol",
            "base_url",
            "model_id",
            "api_key",
            "has_api_key",
            "api_key_env",
            *LIMIT_FIELDS,
            "owner",
            "capabilities",
            "probed_at",
            "probe_requested_at",
            "probe_error",
            "created_at",
        ]
        # api_key_env: a shared endpoint's, set by an operator; an endpoint created here
        # is the writer's own and sends its own key (api_key)
        read_only_fields = [
            "api_key_env",
            "probed_at",
            "probe_requested_at",
            "probe_error",
            "created_at",
        ]

    def validate_name(self, name: str) -> str:
        """Names are unique per owner: the writer's own endpoints only are checked."""
        user = self.context["request"].user
        if Endpoint.objects.filter(owner=user, name=name).exists():
            raise serializers.ValidationError(f"You already have an endpoint named {name!r}.")
        return name

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        user = self.context["request"].user
        candidate = Endpoint(owner=user, base_url=attrs.get("base_url", ""))
        try:
            endpoint_policy.check_endpoint(candidate)
        except ValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Endpoint:
        data = dict(validated_data)
        try:
            return create_endpoint(
                data.pop("name"),
                data.pop("base_url"),
                data.pop("model_id"),
                api_key=data.pop("api_key", None) or None,
                **data,
            )
        except EndpointProblem as exc:
            raise serializers.ValidationError({"non_field_errors": [str(exc)]}) from exc
