"""Token authentication that slows down clients sending invalid tokens, and the rate
limit of the token endpoint, both keyed by ``studies.throttling.client_address``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.throttling import ScopedRateThrottle

from studies.throttling import FailureWindow, client_address

WINDOW_SECONDS = 60
TOKEN_FAILURES = FailureWindow("api-auth-failures", WINDOW_SECONDS)


class ThrottledTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``. A valid token is always accepted. An invalid one
    answers 401, and from a client address that sent ``API_FAILED_AUTH_LIMIT`` invalid
    tokens in the current minute, 429 with ``Retry-After`` until the minute ends.

    A token holds 160 random bits, so guessing one is hopeless whatever the rate: the
    token's length, not this limit, is the defence. The limit tells a client that keeps
    sending bad tokens (a script with a revoked token, a scanner) to back off, and shows
    it in the log. Refusing valid tokens too would let anyone sharing an address (an
    office's NAT, an unconfigured reverse proxy) lock everyone else out."""

    def authenticate(self, request: Any) -> Any:
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            address = client_address(request)
            if TOKEN_FAILURES.count(address) >= settings.API_FAILED_AUTH_LIMIT:
                raise exceptions.Throttled(
                    TOKEN_FAILURES.seconds_left(), "Too many failed authentications."
                ) from None
            TOKEN_FAILURES.record(address)
            raise


class ClientRateThrottle(ScopedRateThrottle):
    """DRF's scoped rate, per ``client_address()`` (DRF's own ``get_ident`` believes any
    ``X-Forwarded-For`` unless ``NUM_PROXIES`` is set, so a client could pick its own key)."""

    def get_ident(self, request: Any) -> str:
        return client_address(request)
