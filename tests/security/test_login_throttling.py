"""Login throttling (django-axes): repeated wrong passwords lock a username and address out;
many over usernames (password spraying) lock the address out."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from axes.utils import reset
from django.urls import reverse

pytestmark = pytest.mark.django_db


def attempt(client, url: str, password: str, username: str = "owner"):  # type: ignore[no-untyped-def]
    return client.post(url, {"username": username, "password": password})


@pytest.mark.parametrize("url_name", ["login", "admin:login"])
def test_thirty_wrong_passwords_lock_the_account_out_even_for_the_right_one_until_reset(
    client, cast, settings, url_name
):
    url = reverse(url_name)
    if url_name == "admin:login":
        cast["owner"].is_staff = True
        cast["owner"].save()
    statuses = [attempt(client, url, f"wrong-{i}").status_code for i in range(30)]
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert statuses[limit - 1 :] == [429] * (31 - limit)
    locked = attempt(client, url, "pw")
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    assert "Too many failed logins" in locked.content.decode()
    assert "Try again in 15 minutes" in locked.content.decode()

    assert reset(username="owner") == 1  # what the admin's "delete access attempts" does
    assert attempt(client, url, "pw").status_code == 302
    assert client.session["_auth_user_id"] == str(cast["owner"].pk)


def test_the_lock_is_per_username_and_address(client, cast, settings):
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, reverse("login"), f"wrong-{i}")
    assert attempt(client, reverse("login"), "pw").status_code == 429
    # Another account from the same address, and the same account elsewhere, still log in.
    assert attempt(client, reverse("login"), "pw", username="outsider").status_code == 302
    client.logout()
    other = client.post(
        reverse("login"), {"username": "owner", "password": "pw"}, REMOTE_ADDR="10.0.0.9"
    )
    assert other.status_code == 302


def test_a_success_before_the_limit_clears_the_count(client, cast, settings):
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, reverse("login"), f"wrong-{i}")
    assert attempt(client, reverse("login"), "pw").status_code == 302
    assert not AccessAttempt.objects.filter(username="owner").exists()


def test_spraying_many_accounts_from_one_address_locks_the_address_out(client, cast, settings):
    """108 wrong passwords over 12 accounts, 9 each: no account reaches its own lock, but
    the address does at LOGIN_ADDRESS_FAILURE_LIMIT, and then even a right password from it
    is refused (a weak password must not be guessable by spraying slowly enough)."""
    from django.core.management import call_command

    limit = settings.LOGIN_ADDRESS_FAILURE_LIMIT
    assert settings.AXES_FAILURE_LIMIT < limit < 108
    names = ["owner", "outsider", "annotator", "boss"] + [f"user{i}" for i in range(8)]
    guesses = [(name, f"guess-{i}") for i in range(9) for name in names]
    statuses = [attempt(client, reverse("login"), pw, name).status_code for name, pw in guesses]
    assert statuses == [200] * (limit - 1) + [429] * (108 - limit + 1)
    refused = attempt(client, reverse("login"), "pw", "annotator")
    assert refused.status_code == 429 and "_auth_user_id" not in client.session
    assert "Logins from your address are paused, for every account" in refused.content.decode()
    token = client.post(reverse("api:token"), {"username": "annotator", "password": "pw"})
    assert token.status_code == 400  # the API's token endpoint is behind the same lock
    # another address is not affected, and the lock can be lifted by hand
    elsewhere = client.__class__(REMOTE_ADDR="10.0.0.9")
    assert attempt(elsewhere, reverse("login"), "pw", "annotator").status_code == 302
    call_command("axes_reset_ip", "127.0.0.1")
    assert attempt(client, reverse("login"), "pw", "annotator").status_code == 302


def test_a_user_who_mistypes_and_then_logs_in_never_counts_toward_the_address_lock(
    client, cast, settings
):
    """Behind one address (an office), users mistype and then log in, far more often than
    the address limit: each success clears that user's failures."""
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT
    for round_ in range(3 * settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        name = ["owner", "outsider", "annotator"][round_ % 3]
        assert attempt(client, reverse("login"), "typo", name).status_code == 200
        assert attempt(client, reverse("login"), "pw", name).status_code == 302
        client.logout()


def test_one_user_retrying_a_stale_password_never_locks_the_address(client, cast, settings):
    """A script with an old password keeps failing: its account locks, and each refused
    retry is recorded, but a username counts at most its own limit toward the address's."""
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT + 1
    for i in range(3 * settings.AXES_FAILURE_LIMIT):
        attempt(client, reverse("login"), f"stale-{i}")
    assert attempt(client, reverse("login"), "pw").status_code == 429
    assert attempt(client, reverse("login"), "pw", username="annotator").status_code == 302


def test_staff_see_and_reset_lockouts_in_the_admin(client, cast, settings):
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, reverse("login"), f"wrong-{i}")
    attempt_row = AccessAttempt.objects.get(username="owner")
    admin = client.__class__()
    admin.force_login(cast["admin"])
    listing = admin.get(reverse("admin:axes_accessattempt_changelist"))
    assert listing.status_code == 200 and "owner" in listing.content.decode()
    deleted = admin.post(
        reverse("admin:axes_accessattempt_changelist"),
        {"action": "delete_selected", "_selected_action": [attempt_row.pk], "post": "yes"},
    )
    assert deleted.status_code == 302 and not AccessAttempt.objects.exists()
    assert attempt(client, reverse("login"), "pw").status_code == 302


def test_rest_framework_basic_authentication_is_locked_out_too(cast, settings):
    """The API (DRF) authenticates through the same backends: after the limit, the right
    password is refused there as well (401; DRF answers before axes' middleware would)."""
    import base64

    from rest_framework.authentication import BasicAuthentication
    from rest_framework.response import Response
    from rest_framework.test import APIRequestFactory
    from rest_framework.views import APIView

    class Me(APIView):
        authentication_classes = [BasicAuthentication]

        def get(self, request):  # type: ignore[no-untyped-def]
            return Response({"user": request.user.username})

    def call(password: str):  # type: ignore[no-untyped-def]
        token = base64.b64encode(f"owner:{password}".encode()).decode()
        request = APIRequestFactory().get("/api/me/", HTTP_AUTHORIZATION=f"Basic {token}")
        return Me.as_view()(request)

    assert call("pw").data == {"user": "owner"}
    assert [call(f"wrong-{i}").status_code for i in range(settings.AXES_FAILURE_LIMIT)] == [
        401
    ] * settings.AXES_FAILURE_LIMIT
    assert call("pw").status_code == 401
    reset(username="owner")
    assert call("pw").status_code == 200
