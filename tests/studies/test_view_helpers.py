"""The shared view helpers (studies/views/helpers.py): one researcher check, one page-or-
partial switch, one stop-polling answer, and ``Vary: HX-Request`` set in one place."""

from __future__ import annotations

import re

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse
from django_htmx.middleware import HtmxDetails

from studies.views.helpers import HTMX_STOP_POLLING, stop_polling_when, wants_partial
from tests.conftest import ROOT
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def _request(**headers: str):  # type: ignore[no-untyped-def]
    request = RequestFactory().get("/", headers=headers)
    request.htmx = HtmxDetails(request)
    return request


def test_wants_partial_only_for_htmx_and_the_named_target():
    assert not wants_partial(_request())
    assert wants_partial(_request(**HTMX))
    assert wants_partial(_request(**HTMX, **{"HX-Target": "matrix"}), "matrix")
    assert not wants_partial(_request(**HTMX, **{"HX-Target": "other"}), "matrix")
    assert not wants_partial(_request(**{"HX-Target": "matrix"}), "matrix")


def test_stop_polling_answers_286_only_when_finished():
    assert stop_polling_when(HttpResponse(), finished=False).status_code == 200
    assert stop_polling_when(HttpResponse(), finished=True).status_code == HTMX_STOP_POLLING == 286


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "partial"])
def test_pages_and_partials_vary_on_hx_request(client, cast, headers):
    client.force_login(cast["owner"])
    run = MetricRunFactory(dataset__owner=cast["owner"])
    for url in (
        reverse("studies:run-detail", args=[run.pk]),
        reverse("studies:dataset-detail", args=[run.dataset.pk]),
        reverse("studies:dataset-list"),
        reverse("annotation:campaign-list"),
        reverse("learned:list"),
    ):
        response = client.get(url, headers=headers)
        assert response.status_code in (200, 286), url
        assert "HX-Request" in response["Vary"], url


def test_a_download_does_not_vary_on_hx_request(client, cast):
    client.force_login(cast["owner"])
    run = MetricRunFactory(dataset__owner=cast["owner"])
    response = client.get(reverse("studies:dataset-export", args=[run.dataset.pk, "csv"]))
    assert response.status_code == 200
    assert "HX-Request" not in response.get("Vary", "")


def test_the_researcher_check_refuses_annotators_and_sends_strangers_to_log_in(client, cast):
    url = reverse("learned:list")
    assert client.get(url)["Location"].startswith(reverse("login"))
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403
    client.force_login(cast["owner"])
    assert client.get(url).status_code == 200


def test_the_helpers_are_defined_once_and_imported_everywhere():
    """No app keeps its own copy: the 286, the decorator and the Vary header live in
    studies/views/helpers.py, and every view module that uses them imports from there."""
    helpers = ROOT / "studies" / "views" / "helpers.py"
    copies = re.compile(r"= 286\b|def researcher_required|patch_vary_headers\(|request\.htmx\b")
    apps = ("studies", "learned", "evalsite")  # the project's code, not .venv or data/
    sources = [p for app in apps for p in sorted((ROOT / app).rglob("*.py")) if p != helpers]
    assert [str(p.relative_to(ROOT)) for p in sources if copies.search(p.read_text("utf-8"))] == []
    users = [p for p in sources if "@researcher_required" in p.read_text("utf-8")]
    assert {p.relative_to(ROOT).parts[0] for p in users} >= {"studies", "learned"}
    for path in users:
        assert "from studies.views.helpers import" in path.read_text("utf-8"), path


def test_the_middleware_is_installed_once(settings):
    middleware = [m for m in settings.MIDDLEWARE if m.endswith("VaryOnHtmxMiddleware")]
    assert middleware == ["studies.views.helpers.VaryOnHtmxMiddleware"]
