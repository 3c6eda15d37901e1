"""Token authentication that refuses a client after too many failed tokens."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

WINDOW_SECONDS = 60


def client_address(request: Any) -> str:
    """The client's address as the throttles see it (``REMOTE_ADDR``)."""
    return str(request.META.get("REMOTE_ADDR", "unknown"))


def _key(request: Any) -> str:
    return f"api-auth-failures:{client_address(request)}"


class ThrottledTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``; after ``API_FAILED_AUTH_LIMIT`` invalid tokens in
    a minute from one address, every token request from it answers 429 until the
    minute is over (guessing tokens is as slow as guessing passwords)."""

    def authenticate(self, request: Any) -> Any:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.lower().startswith("token"):
            return None
        if (cache.get(_key(request)) or 0) >= settings.API_FAILED_AUTH_LIMIT:
            raise exceptions.Throttled(WINDOW_SECONDS, "Too many failed authentications.")
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            key = _key(request)
            if not cache.add(key, 1, WINDOW_SECONDS):
                try:
                    cache.incr(key)
                except ValueError:  # expired between add and incr
                    cache.add(key, 1, WINDOW_SECONDS)
            raise
