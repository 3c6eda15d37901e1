"""What can go wrong talking to a served endpoint: each error's message is safe to show
(never a key, never what a researcher's server answered)."""

from __future__ import annotations

from typing import Any

ENDPOINT_WIDE = (401, 403, 404)  # refusals that no request of the batch can escape


class EndpointError(Exception):
    """Something went wrong talking to an endpoint; the message is safe to show."""


class EndpointUnavailable(EndpointError):
    """The endpoint kept failing (5xx, 429, timeouts, no connection) past the retries."""


class EndpointBlocked(EndpointError):
    """The egress policy refuses the endpoint's host: nothing was sent, and nothing of
    the batch will be."""


class BadAnswer(EndpointError):
    """The endpoint answered a request with something that cannot be used (not JSON,
    NaN or Infinity, a usage that is not a token count, too large): that request's
    error, not retried."""


class RequestRefused(EndpointError):
    """The endpoint answered a request with a 4xx other than 429: the request is at fault
    (a prompt longer than the model's context, a parameter it does not take), or, for
    401/403/404 and redirects (:attr:`endpoint_wide`), the endpoint's settings (key,
    model id, URL)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status

    @property
    def endpoint_wide(self) -> bool:
        return self.status in ENDPOINT_WIDE or 300 <= self.status < 400


class ModelChanged(EndpointError):
    """The server answered from another model version (``system_fingerprint``) than the
    one the client expects: its answers would mix two models, so nothing more is sent
    and the answer is not cached."""


class CostCapReached(EndpointError):
    """Sending the request would take the spending past the cost cap.

    ``partial`` (set by the model backends) holds the results finished before the cap,
    aligned with the requests (``None`` where nothing was scored)."""

    partial: list[Any] | None = None
