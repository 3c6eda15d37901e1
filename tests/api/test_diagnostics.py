"""A dataset's diagnostics through the API: the page's service, its refusals."""

from __future__ import annotations

import json

import pytest

from studies.models import Aspect
from studies.services.analysis.diagnostics import diagnostics
from studies.services.analysis.params import MatrixParams

pytestmark = pytest.mark.django_db


def test_the_diagnostics_are_the_pages(world):
    coh = Aspect.objects.get(code="COH")
    url = f"/api/datasets/{world.dataset.pk}/diagnostics/"
    query = {"run": world.run.pk, "aspect": coh.pk, "level": "dataset", "coef": "pearson"}
    response = world.client("owner").get(url, query)
    assert response.status_code == 200
    body = response.json()
    expected = diagnostics(
        world.dataset, MatrixParams(level="dataset", coefficient="pearson"), world.run.pk, coh.pk
    )
    assert body["run"] == world.run.pk and body["aspect"] == coh.pk
    assert body["length"]["coefficient"] == "pearson" and body["level"] == "dataset"
    # constant lengths here: no correlation; compared as JSON (an aspect's labels tuple is a list)
    assert body["length"] == json.loads(json.dumps(expected["length"]))
    assert [s["system"] for s in body["agreement"]["systems"]] == [
        s["system"] for s in expected["agreement"]["systems"]
    ]
    assert len(body["agreement"]["documents"]) == expected["agreement"]["n_documents"]
    assert {r["label"] for r in body["runs"]} == {"m_good", "m_noise"}
    default = world.client("owner").get(url).json()
    assert (
        default["run"] == body["runs"][0]["pk"] and default["length"]["coefficient"] == "spearman"
    )


def test_bad_diagnostics_queries_are_refused_with_their_reason(world):
    url = f"/api/datasets/{world.dataset.pk}/diagnostics/"
    owner = world.client("owner")
    unknown = owner.get(url, {"aspect": 999999})
    assert (
        unknown.status_code == 404 and "No judged aspect with id 999999" in unknown.json()["detail"]
    )
    bad = owner.get(url, {"coef": "acc23"})
    assert bad.status_code == 400 and "coef" in bad.json()["errors"]
    assert world.client("other_researcher").get(url).status_code == 404
    assert world.client("annotator").get(url).status_code == 403
    assert world.client("anonymous").get(url).status_code in (401, 403)


def test_a_large_datasets_diagnostics_answer_202_until_a_worker_has_computed_them(
    world, settings, monkeypatch
):
    from studies import tasks
    from studies.services.analysis import diagnostics as service

    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}
    sent = []
    monkeypatch.setattr(service, "send", lambda name, *args: sent.append(args))
    url = f"/api/datasets/{world.dataset.pk}/diagnostics/"
    pending = world.client("owner").get(url)
    assert pending.status_code == 202 and pending["Retry-After"] == "5" and len(sent) == 1
    tasks.compute_diagnostics(*sent[0])
    done = world.client("owner").get(url)
    assert done.status_code == 200 and done.json()["length"]["unit"] == "whitespace tokens"
