"""Checks on an API request before it reaches a view."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from studies.api.errors import invalid_input_body


class SingleQueryValuesMiddleware:
    """Under ``/api/``, a query parameter given more than once is a 400 naming it. Every
    parameter the schema documents takes one value (a list is comma-separated, as in
    ``?include=judgments,scores``), and reading one of several would answer a question
    the client did not ask."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            repeated = [name for name, values in request.GET.lists() if len(values) > 1]
            if repeated:
                errors = {name: ["Given more than once: give it once."] for name in repeated}
                return JsonResponse(invalid_input_body(errors), status=400)
        return self.get_response(request)
