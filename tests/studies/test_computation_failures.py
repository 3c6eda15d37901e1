"""A report card or a matrix whose computation fails: the page shows the error with its
id and a *Try again* button and stops polling, nothing is sent to the worker again until
someone tries again, the export says why (not 503 forever), and the API answers with
the error. The failure is injected into the statistic the worker runs (the defect the
issue found, ``answers off the scale``, is fixed, so it cannot be the real one here)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from studies import tasks
from studies.services.analysis import dashboards
from studies.services.analysis.report_card import store
from studies.services.jobs import all_jobs
from studies.services.tokens import token_for

pytestmark = pytest.mark.django_db
ERROR_ID = re.compile(r"error ([0-9a-f]{8})")


@pytest.fixture
def sent(monkeypatch, settings):  # type: ignore[no-untyped-def]
    """Every computation goes to the (captured) light worker."""
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}
    found: list[tuple[str, tuple[object, ...]]] = []
    monkeypatch.setattr(store, "send", lambda name, *args: found.append((name, args)))
    monkeypatch.setattr(dashboards.queue, "send", lambda name, *args: found.append((name, args)))
    return found


def _off_scale(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise ValueError("answers off the scale [1.0, 1.333]: [2.0]")


def _poll(client, url: str, target: str, **query):  # type: ignore[no-untyped-def]
    return client.get(
        url, {**query, "poll": "1"}, headers={"HX-Request": "true", "HX-Target": target}
    )


def test_a_failed_card_shows_its_error_and_is_not_sent_again_until_tried_again(
    client, cast, panel, sent, monkeypatch
):
    monkeypatch.setattr(store, "compute_card", _off_scale)
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-report-card", args=[panel.dataset.pk])
    assert 'id="report-card-waiting"' in client.get(url).content.decode()
    assert len(sent) == 1
    with pytest.raises(ValueError, match="off the scale"):
        tasks.compute_report_card(*json.loads(json.dumps(sent[0][1])))
    assert not any(j.kind == "report card" for j in all_jobs())  # off the jobs page
    for _ in range(3):  # the page polls: it stops, and nothing is sent again
        polled = _poll(client, url, "report-card")
        assert polled.status_code == 286
    assert len(sent) == 1
    body = polled.content.decode()
    assert "Computing the report card failed: ValueError: answers off the scale" in body
    error_id = ERROR_ID.search(body)
    assert error_id is not None and 'id="report-card-retry"' in body
    assert "hx-trigger" not in body

    export = client.get(
        reverse("studies:dataset-report-card-export", args=[panel.dataset.pk, "csv"])
    )
    assert export.status_code == 500 and error_id.group(1) in export.content.decode()
    api = client.get(
        f"/api/datasets/{panel.dataset.pk}/report-card/",
        HTTP_AUTHORIZATION=f"Token {token_for(cast['owner'])}",
    )
    assert api.status_code == 500 and api.json()["error_id"] == error_id.group(1)
    assert "answers off the scale" in api.json()["detail"]

    action = re.search(r'<form method="post" action="([^"]+)">', body)
    assert action is not None and action.group(1).startswith(url + "?")
    again = client.post(action.group(1).replace("&amp;", "&"))  # Try again: one more send
    assert again.status_code == 302 and again["Location"].startswith(url)
    assert 'id="report-card-waiting"' in client.get(url).content.decode()
    assert len(sent) == 2


def test_a_failed_matrix_shows_its_error_and_its_export_says_why(
    client, cast, panel, sent, monkeypatch
):
    monkeypatch.setattr(dashboards, "compute_matrix", _off_scale)
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[panel.dataset.pk])
    assert "Computing the matrix" in client.get(url).content.decode()
    with pytest.raises(ValueError, match="off the scale"):
        tasks.compute_correlations(*json.loads(json.dumps(sent[0][1])))
    polled = _poll(client, url, "matrix")
    assert polled.status_code == 286 and 'id="matrix-retry"' in polled.content.decode()
    assert "Computing the correlation matrix failed: ValueError" in polled.content.decode()
    assert len(sent) == 1
    export = client.get(reverse("studies:correlations-export", args=[panel.dataset.pk, "csv"]))
    assert export.status_code == 500 and b"answers off the scale" in export.content
    token = f"Token {token_for(cast['owner'])}"
    api = client.get(f"/api/datasets/{panel.dataset.pk}/correlations/", HTTP_AUTHORIZATION=token)
    assert api.status_code == 500 and ERROR_ID.search(api.json()["detail"])
    retried = client.get(
        f"/api/datasets/{panel.dataset.pk}/correlations/",
        {"retry": "true"},
        HTTP_AUTHORIZATION=token,
    )
    assert retried.status_code == 202 and len(sent) == 2  # retry=true asks the worker again


def test_a_small_card_that_fails_in_the_request_shows_the_error_not_a_500(
    client, cast, panel, monkeypatch
):
    monkeypatch.setattr(store, "compute_card", _off_scale)
    client.force_login(cast["owner"])
    response = client.get(reverse("studies:dataset-report-card", args=[panel.dataset.pk]))
    assert response.status_code == 200
    assert 'id="report-card-error"' in response.content.decode()
