"""The OpenAPI schema: every operation documents the shared error body for the 4xx
answers it can give, besides its own responses; only a GET is a filtered, paginated list;
request strings are documented NUL-free (a postprocessing hook). tests/api/test_schema_fuzz.py
checks that the API answers as this schema says."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema

from studies.api.errors import ErrorSerializer
from studies.api.serializers.types import TaskField, task_codes

ERROR_CODES = {
    "400": "Bad input; `errors` names the fields.",
    "401": "Not authenticated.",
    "403": "Not allowed for this account.",
    "404": "No such object, or not yours.",
    "409": "The object's state refuses the request.",
    "413": "The request body is too large.",
    "429": "Too many requests.",
}


class ApiAutoSchema(AutoSchema):
    # Only a GET lists: a POST answering a list (POST /api/runs/ starts several runs) is
    # neither filtered nor paginated, whatever its view does for GET.
    def _get_paginator(self) -> Any:
        return super()._get_paginator() if self.method == "GET" else None

    def _get_filter_parameters(self) -> list[Any]:
        return list(super()._get_filter_parameters()) if self.method == "GET" else []

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        takes_body = self.method in ("POST", "PUT", "PATCH") and bool(self.get_request_serializer())
        for code, description in ERROR_CODES.items():
            if code not in responses and (code != "413" or takes_body):
                response = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                response["description"] = description
                responses[code] = response
        return responses


class TaskCodesExtension(OpenApiSerializerFieldExtension):
    """A task field's schema lists the task codes there are now (an admin may add one)."""

    target_class = TaskField

    def get_name(self) -> str:
        return "TaskCode"  # one component, whichever field names a task

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        return {"type": "string", "enum": task_codes()}


# Django and DRF refuse text holding the NUL character (PostgreSQL cannot store it), so
# every string a request carries is documented as NUL-free; DRF trims a text field, so
# one that may not be blank needs a character other than Python's whitespace.
NO_NUL = r"^[^\u0000]*$"
SPACE = r"\t\n\u000b\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK = rf"^[^\u0000]*[^\u0000{SPACE}][^\u0000]*$"


def _document_text(schema: Any) -> None:
    if isinstance(schema, list):
        for item in schema:
            _document_text(item)
    elif isinstance(schema, dict):
        if schema.get("type") == "string" and not {"enum", "pattern", "format"} & set(schema):
            schema["pattern"] = NOT_BLANK if schema.get("minLength", 0) > 0 else NO_NUL
        for key in ("properties", "additionalProperties", "items", "allOf", "anyOf", "oneOf"):
            value = schema.get(key)
            if key == "properties" and isinstance(value, dict):
                _document_text(list(value.values()))
            elif value is not None:
                _document_text(value)


def document_request_text(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: the request side's strings (parameters and request bodies)
    say they cannot hold NUL, nor be blank where the field refuses a blank."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):
            _document_text(component)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _document_text(parameter.get("schema"))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                _document_text(media.get("schema"))
    return result
