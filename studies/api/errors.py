"""One error body for every API failure: ``{"detail": "...", "errors": {field: [messages]}}``.

``errors`` is empty when no field is to blame; ``non_field_errors`` holds errors of the
request as a whole. Anything the views do not catch is left to Django (a 500 is a bug).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from studies.services.computed import Failure


class ErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The body of every 4xx answer."""

    detail = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


def _messages(value: Any) -> list[str]:
    if isinstance(value, list):
        return [m for v in value for m in _messages(v)]
    if isinstance(value, dict):
        return [f"{k}: {m}" for k, v in value.items() for m in _messages(v)]
    return [str(value)]


def field_errors(detail: Any) -> dict[str, list[str]]:
    """A ValidationError's detail as {field: [messages]} (nested fields flattened)."""
    if isinstance(detail, dict):
        return {str(k): _messages(v) for k, v in detail.items()}
    return {api_settings.NON_FIELD_ERRORS_KEY: _messages(detail)}


def invalid_input_body(errors: dict[str, list[str]]) -> dict[str, Any]:
    """The body of a 400 for bad input: the first message as the detail."""
    first = next(iter(errors.values()), ["Invalid input."])
    detail = f"Invalid input: {first[0]}" if first else "Invalid input."
    return {"detail": detail, "errors": errors}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if isinstance(exc, RequestDataTooBig | TooManyFieldsSent):
        return error_response(413, str(exc) or "The request is too large.")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = invalid_input_body(field_errors(exc.detail))
    elif isinstance(exc, Http404 | PermissionDenied | exceptions.APIException):
        data = response.data if isinstance(response.data, dict) else {}
        response.data = {"detail": str(data.get("detail", exc)), "errors": {}}
    return response


def error_response(
    status: int, detail: str, errors: dict[str, list[str]] | None = None, **extra: Any
) -> Response:
    """An error answer built by a view (a service refused): same body as raised errors."""
    return Response({"detail": detail, "errors": errors or {}, **extra}, status=status)


def computation_failed(failed: Failure, what: str) -> Response:
    """500: computing a cached page (the matrix, a report card) failed; the body says why,
    with the id the server's log has the traceback under (``retry=true`` asks again)."""
    return error_response(
        500,
        f"{failed.message(what)} Ask with retry=true to compute it again.",
        error_id=failed.error_id,
        failed_at=failed.at,
    )


def form_errors(form: Any) -> exceptions.ValidationError:
    """A page form's errors as the API's validation error (``__all__`` → non_field_errors)."""
    return exceptions.ValidationError(
        {
            (api_settings.NON_FIELD_ERRORS_KEY if field == "__all__" else field): [
                e["message"] for e in errors
            ]
            for field, errors in form.errors.get_json_data().items()
        }
    )


@csrf_exempt  # it changes nothing, and a refused CSRF check would answer an HTML 403
def no_route(request: Any) -> JsonResponse:
    """The API's last route: any other URL under ``/api/`` is a 404 with the error body,
    under DEBUG too (where Django shows its HTML page instead of calling handler404)."""
    return JsonResponse({"detail": "Not found.", "errors": {}}, status=404)


def not_found(request: Any, exception: Exception) -> Any:
    """Django's 404 for URLs no route matches: the API's error body under ``/api/``,
    the usual page elsewhere."""
    if request.path.startswith("/api/"):
        return no_route(request)
    return page_not_found(request, exception)
