"""Who the client is, and how its failed authentications are limited.

Every limiter (the API's bad-token limiter, its token endpoint's rate, django-axes' login
lockouts) asks ``client_address()`` who the client is, so that one setting,
``TRUSTED_PROXIES``, decides for all of them whether ``X-Forwarded-For`` is believed.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.core.cache import cache
from django.db.models import Sum, Value
from django.db.models.functions import Least
from django.http import HttpResponse
from django.shortcuts import render

log = logging.getLogger(__name__)

_warned_untrusted_forwarding = False


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as an address (an IPv4-mapped IPv6 one as IPv4; a proxy's ``1.2.3.4:port``
    or ``[v6]:port`` without the port), or None when it is no address."""
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped:
        return found.ipv4_mapped
    return found


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    return address is not None and any(address in net for net in settings.TRUSTED_PROXIES)


def client_address(request: Any) -> str:
    """The client's address for every limiter: ``REMOTE_ADDR``, unless that is one of the
    ``TRUSTED_PROXIES``; then the right-most ``X-Forwarded-For`` entry that is not itself
    a trusted proxy (each proxy appends the address it saw, so entries left of it could
    have been written by anyone). "" when the server gives no address.

    A header from an untrusted peer is ignored: it could say anything. A trusted proxy
    whose header is missing or unreadable counts as the client (limiting it is the safe
    mistake; the warning in the log says why). An unreadable ``REMOTE_ADDR`` gives "" (axes
    stores the address in an IP field)."""
    remote = request.META.get("REMOTE_ADDR") or ""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    peer = _ip(remote)
    if not _trusted(peer):
        if forwarded and not settings.TRUSTED_PROXIES:
            _warn_once(remote)
        return str(peer) if peer is not None else ""
    hops = [entry for entry in forwarded.split(",") if entry.strip()]
    for entry in reversed(hops):
        hop = _ip(entry)
        if hop is None:
            log.warning(
                "X-Forwarded-For from trusted proxy %s holds %r, not an address; counting "
                "the request as the proxy's own",
                remote,
                entry.strip(),
            )
            return str(peer)
        if not _trusted(hop):
            return str(hop)
        peer = hop  # one more trusted proxy: the client is further left
    return str(peer)


def _warn_once(remote: str) -> None:
    """Say once per process that a forwarded address was ignored: behind a proxy that is
    not in TRUSTED_PROXIES, every client shares the proxy's limits."""
    global _warned_untrusted_forwarding
    if _warned_untrusted_forwarding:
        return
    _warned_untrusted_forwarding = True
    log.warning(
        "A request from %s carried X-Forwarded-For, which is ignored because TRUSTED_PROXIES "
        "is empty. If %s is your reverse proxy, list it in TRUSTED_PROXIES, or every client "
        "shares its login and API limits.",
        remote,
        remote,
    )


class FailureWindow:
    """Failed attempts per client address in clock-aligned windows of ``seconds``.

    The window is part of the key, so a count ends with its window on every cache backend
    (Django's file cache rewrites a key's expiry on ``incr``, to the cache's default)."""

    def __init__(self, prefix: str, seconds: int) -> None:
        self.prefix = prefix
        self.seconds = seconds

    def _key(self, address: str) -> str:
        return f"{self.prefix}:{int(time.time() // self.seconds)}:{address}"

    def count(self, address: str) -> int:
        """Failures recorded for ``address`` in the current window."""
        return int(cache.get(self._key(address)) or 0)

    def record(self, address: str) -> None:
        """One more failure for ``address`` in the current window."""
        key = self._key(address)
        if cache.add(key, 1, self.seconds):
            return
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, self.seconds)
        else:
            cache.touch(key, self.seconds)  # the file cache's incr reset it to a week

    def seconds_left(self) -> int:
        """Whole seconds until the current window ends (at least 1)."""
        return max(1, int(self.seconds - time.time() % self.seconds + 0.999))


class LoginLockoutHandler(AxesDatabaseHandler):
    """django-axes' database handler with a second lock, per client address over all
    usernames: once ``LOGIN_ADDRESS_FAILURE_LIMIT`` recent failed logins come from one
    address (password spraying: a few guesses at each of many accounts), every login from
    it is refused, the right password included, until ``LOGIN_COOLOFF_MINUTES`` pass
    without one or an administrator deletes its access attempts. Each username counts at
    most ``LOGIN_FAILURE_LIMIT`` (its own lock) toward it.

    "Recent" is axes' own: a (username, address) row counts while its latest failure is
    within the cool-off. A user who mistypes and then logs in has their row deleted
    (``AXES_RESET_ON_SUCCESS``), so typos followed by a success never add up; the
    success clears only that user's row, so a sprayer's own account cannot clear the rest.
    """

    def address_failures(self, request: Any) -> int:
        """Failed logins from the request's address, over all usernames, still counting."""
        if not request.axes_ip_address:
            return 0
        recent = AccessAttempt.objects.filter(
            ip_address=request.axes_ip_address, attempt_time__gte=get_cool_off_threshold(request)
        )
        # One row per username (and browser) counts at most up to its own lock, so a user
        # (or their script) retrying a stale password never locks out the whole address.
        each = Least("failures_since_start", Value(settings.AXES_FAILURE_LIMIT))
        return int(recent.aggregate(total=Sum(each))["total"] or 0)

    def _address_locked(self, request: Any) -> bool:
        locked = self.address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT
        if locked:
            request.axes_locked_by_address = True
        return locked

    def is_locked(self, request: Any, credentials: dict[str, Any] | None = None) -> bool:
        """Locked for this username and address, or for the whole address."""
        return bool(super().is_locked(request, credentials)) or self._address_locked(request)

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
    ) -> None:
        """Record the failure (axes); the failure that fills the address's allowance is
        answered with the lockout page, as the one that fills a username's is."""
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is None or request.axes_locked_out or self.is_whitelisted(request, credentials):
            return
        if self._address_locked(request):
            log.warning(
                "Locking out address %s after repeated failed logins (all usernames)",
                request.axes_ip_address,
            )
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send(
                "axes",
                request=request,
                username=get_client_username(request, credentials),
                ip_address=request.axes_ip_address,
            )


def lockout_response(
    request: Any, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """The lockout page (429): which lock holds (this account from this address, or the
    whole address), after how many failures, and for how long."""
    by_address = bool(getattr(request, "axes_locked_by_address", False))
    context = {
        "by_address": by_address,
        "failure_limit": settings.LOGIN_ADDRESS_FAILURE_LIMIT
        if by_address
        else settings.AXES_FAILURE_LIMIT,
        "cooloff_minutes": int(get_cool_off(request).total_seconds() // 60),
    }
    return render(
        request, settings.AXES_LOCKOUT_TEMPLATE, context, status=settings.AXES_HTTP_RESPONSE_CODE
    )
