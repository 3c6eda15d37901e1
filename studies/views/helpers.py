"""What every app's views share (studies, annotation, learned): the researcher check,
the choice between a page and its htmx partial, the answer that stops htmx polling, an
export's answer while its table is not computed, and the ``Vary: HX-Request`` header,
set here once for every HTML response."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from studies.permissions import is_researcher
from studies.services.computed import Failure

HTMX_STOP_POLLING = 286  # htmx stops polling on this status


def researcher_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Log in first; then only researchers and admins, others get a 403."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not is_researcher(request.user):
            raise PermissionDenied("Only researchers can open this page.")
        return view(request, *args, **kwargs)

    return wrapped


def wants_partial(request: HttpRequest, target: str | None = None) -> bool:
    """An htmx request (aimed at the element ``target``, when given) gets the partial."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and (target is None or htmx.target == target)


def stop_polling_when(response: HttpResponse, finished: bool) -> HttpResponse:
    """Answer 286 once the polled thing has finished, so htmx stops asking."""
    if finished:
        response.status_code = HTMX_STOP_POLLING
    return response


def not_computed(what: str, failed: Failure | None) -> HttpResponse:
    """An export's answer while its table is not in the cache: 503 while a worker
    computes it (ask again), or 500 with why it failed and the error's id (asking again
    changes nothing until someone tries again on its page)."""
    if failed is not None:
        return HttpResponse(
            f"{failed.message(what)} Use “Try again” on its page to compute it again.",
            status=500,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(
        f"The {what} is being computed; try again in a moment.",
        status=503,
        headers={"Retry-After": "5"},
    )


class VaryOnHtmxMiddleware:
    """Adds ``Vary: HX-Request`` to every HTML response: a view may answer the same URL
    with a page or a partial, and no cache may hand one out for the other."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            patch_vary_headers(response, ["HX-Request"])
        return response
