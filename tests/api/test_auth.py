"""Tokens (endpoint, command, page), rate limits on authentication, the schema and the
offline docs."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.api.conftest import errors_body

pytestmark = pytest.mark.django_db


def test_token_endpoint_gives_the_token_and_it_authenticates(cast):
    client = APIClient()
    response = client.post(
        "/api/auth/token/", {"username": "owner", "password": "pw"}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert token == Token.objects.get(user=cast["owner"]).key
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/datasets/").status_code == 200


def test_wrong_password_is_a_400_and_too_many_attempts_a_429(cast, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"auth": "3/min"},
    }
    from rest_framework.throttling import ScopedRateThrottle

    ScopedRateThrottle.THROTTLE_RATES = {"auth": "3/min"}
    try:
        client = APIClient()
        codes = [
            client.post("/api/auth/token/", {"username": "owner", "password": "no"}).status_code
            for _ in range(4)
        ]
        assert codes == [400, 400, 400, 429]
        blocked = client.post("/api/auth/token/", {"username": "owner", "password": "pw"})
        assert blocked.status_code == 429 and errors_body(blocked)["detail"]
    finally:
        from rest_framework.settings import api_settings

        ScopedRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES


def test_bad_tokens_are_throttled_per_client_but_a_valid_token_always_passes(cast, settings):
    assert settings.API_FAILED_AUTH_LIMIT == 20
    good = Token.objects.create(user=cast["owner"]).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert [client.get("/api/datasets/").status_code for _ in range(21)] == [401] * 20 + [429]
    refused = client.get("/api/datasets/")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    client.credentials(HTTP_AUTHORIZATION=f"Token {good}")
    assert client.get("/api/datasets/").status_code == 200  # the same address, a valid token
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get("/api/datasets/").status_code == 429  # its bad tokens still wait
    other = APIClient(REMOTE_ADDR="10.0.0.2")
    other.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert other.get("/api/datasets/").status_code == 401


def test_the_bad_token_count_ends_with_its_minute(cast, settings, monkeypatch):
    """Counts live in clock-aligned windows: the next minute starts from zero on every
    cache backend (Django's file cache, the default, gives a key a week on ``incr``)."""
    import types

    from studies import throttling

    clock = [60 * 20_000 + 20.0]  # 20 s into a minute
    monkeypatch.setattr(throttling, "time", types.SimpleNamespace(time=lambda: clock[0]))
    settings.API_FAILED_AUTH_LIMIT = 3
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert [client.get("/api/datasets/").status_code for _ in range(4)] == [401, 401, 401, 429]
    assert client.get("/api/datasets/")["Retry-After"] == "40"
    clock[0] += 40
    assert [client.get("/api/datasets/").status_code for _ in range(4)] == [401, 401, 401, 429]


def test_api_token_command_creates_once_and_regenerates(cast, capsys):
    call_command("api_token", "owner")
    first = capsys.readouterr().out.strip()
    call_command("api_token", "owner")
    assert capsys.readouterr().out.strip() == first == Token.objects.get(user=cast["owner"]).key
    call_command("api_token", "owner", "--regenerate")
    assert capsys.readouterr().out.strip() not in ("", first)
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user"):
        call_command("api_token", "ghost")


def test_token_page_shows_and_regenerates_the_token(client, cast):
    assert client.get("/account/token/").status_code == 302  # login first
    client.force_login(cast["annotator"])
    page = client.get("/account/token/").content.decode()
    key = Token.objects.get(user=cast["annotator"]).key
    assert key in page
    client.post("/account/token/")
    new = Token.objects.get(user=cast["annotator"]).key
    assert new != key and new in client.get("/account/token/").content.decode()


def test_schema_and_offline_docs_are_served(cast, client):
    schema = APIClient().get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/datasets/{id}/correlations/" in paths and "/api/runs/{id}/cancel/" in paths
    docs = client.get("/api/docs/").content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist" in docs and "cdn" not in docs.lower()
    from django.contrib.staticfiles import finders

    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")


def test_every_operation_documents_its_request_and_responses(cast):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            assert op.get("summary") or op.get("description"), (method, path)
            assert {"200", "201", "202", "204"} & set(op["responses"]), (method, path)
            assert "400" in op["responses"] and "404" in op["responses"], (method, path)
            if method in ("post", "put", "patch") and not path.endswith(
                (
                    "/cancel/",
                    "/resume/",
                    "/next/",
                    "/probe/",
                    "/complete/",
                )  # actions without a body
            ):
                assert "requestBody" in op, (method, path)
