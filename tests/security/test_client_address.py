"""One function names the client for every limiter: the peer's address, or, behind a
proxy listed in TRUSTED_PROXIES, the right-most forwarded address that is no trusted proxy.
A forwarded header from anyone else is ignored."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evalsite.env import env_networks
from studies.throttling import client_address

PROXY = "10.0.0.1"


@pytest.fixture
def behind_proxy(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """The site behind a reverse proxy at 10.0.0.1 (and a second hop at 10.0.0.2)."""
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.1, 10.0.0.2/32")
    settings.TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")


def address(remote: str, forwarded: str | None = None) -> str:
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return client_address(RequestFactory().get("/", REMOTE_ADDR=remote, **extra))


def test_without_trusted_proxies_the_forwarded_header_is_ignored(settings):
    assert settings.TRUSTED_PROXIES == ()
    assert address("198.51.100.7", "203.0.113.5") == "198.51.100.7"
    assert address(PROXY, "203.0.113.5") == PROXY


def test_a_trusted_proxy_names_the_client_and_spoofed_entries_left_of_it_are_ignored(
    behind_proxy,
):
    assert address(PROXY, "203.0.113.5") == "203.0.113.5"
    # the client wrote "1.2.3.4" itself; the proxy appended what it saw
    assert address(PROXY, "1.2.3.4, 203.0.113.5") == "203.0.113.5"
    # two trusted hops: the client is the first untrusted address from the right
    assert address(PROXY, "1.2.3.4, 203.0.113.5, 10.0.0.2") == "203.0.113.5"
    # an untrusted peer cannot pick its address, whatever it forwards
    assert address("198.51.100.7", "203.0.113.5") == "198.51.100.7"


def test_odd_forwarded_values_never_give_a_made_up_address(behind_proxy):
    assert address(PROXY, "") == PROXY  # no header: the proxy itself
    assert address(PROXY, "10.0.0.2") == "10.0.0.2"  # only proxies: the furthest one
    assert address(PROXY, "not-an-ip") == PROXY  # garbage: counted as the proxy's own
    assert address(PROXY, "203.0.113.5:4711") == "203.0.113.5"  # a port some proxies add
    assert address(PROXY, "[2001:db8::5]:4711") == "2001:db8::5"
    assert address("::ffff:10.0.0.1", "203.0.113.5") == "203.0.113.5"  # IPv4-mapped peer
    assert address("", "203.0.113.5") == ""  # no peer address (axes stores "" as NULL)


def test_bad_tokens_behind_a_trusted_proxy_are_counted_per_forwarded_client(
    behind_proxy, cast, settings
):
    settings.API_FAILED_AUTH_LIMIT = 3
    scanner = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.5")
    scanner.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert [scanner.get("/api/datasets/").status_code for _ in range(4)] == [401, 401, 401, 429]
    neighbour = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.6")
    neighbour.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert neighbour.get("/api/datasets/").status_code == 401  # its own count, not 429


def test_a_spoofed_forwarded_header_does_not_escape_the_token_endpoint_rate(cast, monkeypatch):
    """DRF's own client key believes any X-Forwarded-For (NUM_PROXIES unset); a client
    that changes it on every request must still be limited by its address."""
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"auth": "3/min"})
    client = APIClient(REMOTE_ADDR="198.51.100.7")
    wrong = {"username": "owner", "password": "no"}
    codes = [
        client.post("/api/auth/token/", wrong, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i in range(4)
    ]
    assert codes == [400, 400, 400, 429]


def test_login_lockouts_behind_a_trusted_proxy_are_per_forwarded_client(
    behind_proxy, cast, settings
):
    attacker = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attacker.post(reverse("login"), {"username": "owner", "password": f"wrong-{i}"})
    assert (
        attacker.post(reverse("login"), {"username": "owner", "password": "pw"}).status_code == 429
    )
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.5"}
    owner = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert owner.post(reverse("login"), {"username": "owner", "password": "pw"}).status_code == 302


def test_a_valid_token_passes_from_a_throttled_forwarded_client(behind_proxy, cast, settings):
    settings.API_FAILED_AUTH_LIMIT = 1
    client = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.5")
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert [client.get("/api/datasets/").status_code for _ in range(2)] == [401, 429]
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=cast['owner']).key}")
    assert client.get("/api/datasets/").status_code == 200
