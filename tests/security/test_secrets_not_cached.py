"""Every response that shows a secret (an API token) says ``Cache-Control: no-store``, so
neither the browser's cache nor a proxy keeps a copy after logout.

The pages and API routes are found by walking the URL resolver (as the authorization
matrix does), so a new page that shows a token cannot escape: any response whose body holds
a token key must carry no-store. Password forms (the login pages) must too."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from studies.services.tokens import token_for
from tests.api.conftest import build_world
from tests.api.routes import admin_urls, kwarg_value, routes

pytestmark = pytest.mark.django_db


def body(response: Any) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def stored(response: Any) -> bool:
    """Whether a cache may keep the response (no ``no-store`` in its Cache-Control)."""
    return "no-store" not in response.get("Cache-Control", "")


def test_every_response_showing_a_token_says_no_store(cast, write_jsonl):
    world = build_world(cast, write_jsonl)
    keys = [token_for(user).key.encode() for user in get_user_model().objects.all()]
    urls = [
        reverse(r.full_name, kwargs={k: kwarg_value(world, r, k) for k in r.kwargs})
        for r in routes()
        if r.full_name != "logout"
    ]
    admin = world.users["admin"]
    urls += admin_urls() + [
        reverse("admin:auth_user_change", args=[admin.pk]),
        reverse("admin:authtoken_tokenproxy_change", args=[admin.pk]),
    ]
    showing, cached = set(), []
    for role in ("owner", "admin"):  # an annotator reaches a subset of these pages
        client = Client()
        client.force_login(world.users[role])
        for url in urls:
            response = client.get(url)
            if any(key in body(response) for key in keys):
                showing.add(url)
                if stored(response):
                    cached.append(
                        f"GET {url} as {role}: Cache-Control={response.get('Cache-Control')!r}"
                    )
    # the walk finds the token page and the admin's token pages, so it can see a secret
    assert {
        reverse("studies:api-token"),
        reverse("admin:authtoken_tokenproxy_changelist"),
    } <= showing
    assert not cached, "\n".join(cached)


def test_the_token_page_and_the_token_endpoint_say_no_store(cast):
    client = Client()
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:api-token"))
    assert Token.objects.get(user=cast["owner"]).key in page.content.decode()
    assert "no-store" in page["Cache-Control"]
    answer = APIClient().post(reverse("api:token"), {"username": "owner", "password": "pw"})
    assert answer.status_code == 200 and answer.json()["token"]
    assert "no-store" in answer["Cache-Control"]


@pytest.mark.parametrize("url_name", ["login", "admin:login"])
def test_password_forms_say_no_store(client, url_name):
    assert not stored(client.get(reverse(url_name)))
