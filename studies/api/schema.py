"""The OpenAPI schema: every operation documents the shared error body for the 4xx
answers it can give, besides its own responses."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema

from studies.api.errors import ErrorSerializer

ERROR_CODES = {
    "400": "Bad input; `errors` names the fields.",
    "401": "Not authenticated.",
    "403": "Not allowed for this account.",
    "404": "No such object, or not yours.",
    "409": "The object's state refuses the request.",
    "429": "Too many requests.",
}


class ApiAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for code, description in ERROR_CODES.items():
            if code not in responses:
                response = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                response["description"] = description
                responses[code] = response
        return responses
