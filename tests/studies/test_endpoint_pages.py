"""The researcher's endpoint pages: add one (the key typed once, stored encrypted, never
shown), the probe sent to an io worker and its findings polled in, edit (a blank key
keeps the stored one), delete; another researcher's endpoint is a 404, a shared one an
admin's to change. The probe itself runs against a real server in
tests/studies/test_served_runs.py; here it meets a port nothing listens on."""

from __future__ import annotations

import pytest

from studies.models import Endpoint
from studies.services import queue
from studies.services.catalog.endpoints import create_endpoint, probe_job

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]
KEY = "sk-page-typed-5e1b7c"
FORM = {
    "name": "judge",
    "protocol": "openai",
    "base_url": "http://127.0.0.1:9",
    "model_id": "gpt-judge",
    "api_key": KEY,
    "max_concurrency": "4",
    "price_in": "0.5",
    "price_out": "1.5",
    "timeout": "30",
}


@pytest.fixture
def sent(monkeypatch):  # type: ignore[no-untyped-def]
    """Tasks sent through studies.services.queue (on commit)."""
    messages: list[tuple[object, ...]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args, **kw: messages.append((name, *args, kw)))
    return messages


def test_a_researcher_adds_an_endpoint_and_an_io_worker_probes_it(
    cast, client, sent, django_capture_on_commit_callbacks
):
    client.force_login(cast["owner"])
    assert client.get("/endpoints/new/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/endpoints/new/", FORM)
    endpoint = Endpoint.objects.get(name="judge")
    assert response.status_code == 302 and response["Location"] == f"/endpoints/{endpoint.pk}/"
    assert endpoint.owner == cast["owner"] and endpoint.api_key() == KEY
    assert KEY not in endpoint.api_key_encrypted
    assert sent == [(queue.PROBE_ENDPOINT, endpoint.pk, {"queue": "io"})]
    page = client.get(f"/endpoints/{endpoint.pk}/").content.decode()
    assert "A probe waits for an io worker" in page and "stored (encrypted" in page
    assert KEY not in page and KEY not in client.get("/endpoints/").content.decode()
    assert KEY not in client.get(f"/endpoints/{endpoint.pk}/edit/").content.decode()

    # the worker's probe: nothing listens there, so the error is stored and shown, the
    # key nowhere in it; the polled part stops polling (286)
    said = probe_job(endpoint.pk)
    endpoint.refresh_from_db()
    assert "failed" in said and endpoint.probe_requested_at is None and endpoint.probe_error
    polled = client.get(
        f"/endpoints/{endpoint.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="endpoint-probe"
    )
    assert polled.status_code == 286 and "The last probe failed" in polled.content.decode()
    assert KEY not in polled.content.decode() and KEY not in said
    # Probe again: sent again, and the page polls until it is done
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(f"/endpoints/{endpoint.pk}/probe/")
    assert again.status_code == 302 and len(sent) == 2
    assert 'hx-trigger="every 1s"' in client.get(f"/endpoints/{endpoint.pk}/").content.decode()


def test_editing_keeps_or_clears_the_key_and_names_are_unique_per_owner(cast, client, sent):
    owner = cast["owner"]
    endpoint = create_endpoint("judge", "http://127.0.0.1:9", "m", owner=owner, api_key=KEY)
    create_endpoint("other", "http://127.0.0.1:9", "m", owner=owner)
    client.force_login(owner)
    url = f"/endpoints/{endpoint.pk}/edit/"
    kept = client.post(url, {**FORM, "api_key": "", "price_in": "2"})
    endpoint.refresh_from_db()
    assert kept.status_code == 302 and endpoint.api_key() == KEY and endpoint.price_in == 2
    taken = client.post(url, {**FORM, "name": "other"})
    assert (
        taken.status_code == 400 and "You already have an endpoint named" in taken.content.decode()
    )
    assert Endpoint.objects.get(pk=endpoint.pk).name == "judge"  # nothing changed
    bad = client.post(url, {**FORM, "base_url": "ftp://x"})
    assert bad.status_code == 400 and "http(s) URL" in bad.content.decode()
    client.post(url, {**FORM, "api_key": "", "clear_api_key": "on"})
    endpoint.refresh_from_db()
    assert endpoint.api_key() is None and not endpoint.has_api_key
    # another researcher may use the same name for theirs
    client.force_login(cast["outsider"])
    assert client.post("/endpoints/new/", FORM).status_code == 302
    assert Endpoint.objects.filter(name="judge").count() == 2


def test_another_researchers_endpoint_is_not_found_and_a_shared_one_is_the_admins(
    cast, client, sent
):
    mine = create_endpoint("mine", "http://127.0.0.1:9", "m", owner=cast["owner"])
    shared = create_endpoint("everyones", "http://127.0.0.1:9", "m")
    client.force_login(cast["outsider"])
    listed = client.get("/endpoints/").content.decode()
    assert "everyones" in listed and "mine" not in listed
    for suffix in ("", "edit/", "delete/"):
        assert client.get(f"/endpoints/{mine.pk}/{suffix}").status_code == 404
    assert client.post(f"/endpoints/{mine.pk}/probe/").status_code == 404
    assert client.post(f"/endpoints/{mine.pk}/delete/").status_code == 404
    assert client.get(f"/endpoints/{shared.pk}/").status_code == 200
    assert client.get(f"/endpoints/{shared.pk}/edit/").status_code == 403
    assert client.post(f"/endpoints/{shared.pk}/delete/").status_code == 403
    assert Endpoint.objects.count() == 2 and not sent
    client.force_login(cast["annotator"])
    assert client.get("/endpoints/").status_code == 403


def test_delete_asks_first(cast, client, sent):
    endpoint = create_endpoint("judge", "http://127.0.0.1:9", "m", owner=cast["owner"])
    client.force_login(cast["owner"])
    ask = client.get(f"/endpoints/{endpoint.pk}/delete/")
    assert ask.status_code == 200 and "Delete the endpoint judge?" in ask.content.decode()
    assert Endpoint.objects.filter(pk=endpoint.pk).exists()
    response = client.post(f"/endpoints/{endpoint.pk}/delete/")
    assert response.status_code == 302 and not Endpoint.objects.filter(pk=endpoint.pk).exists()
