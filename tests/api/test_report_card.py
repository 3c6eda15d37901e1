"""A dataset's judge report card through the API: the page's service, its refusals, and
a large dataset's card from the light worker."""

from __future__ import annotations

import pytest

from studies.models import Aspect
from studies.services.analysis.report_card import CardParams, compute_card, sorted_rows
from tests.api.conftest import errors_body

pytestmark = pytest.mark.django_db


def url(world) -> str:  # type: ignore[no-untyped-def]
    return f"/api/datasets/{world.dataset.pk}/report-card/"


def test_the_report_card_is_the_pages(world):
    query = {"level": "dataset", "coef": "pearson", "eps": "0.1", "ci": "0.9", "sort": "-corr"}
    response = world.client("owner").get(url(world), query)
    assert response.status_code == 200
    body = response.json()
    params = CardParams(level="dataset", coefficient="pearson", epsilon=0.1, confidence=0.9)
    expected = compute_card(world.dataset, params)
    assert body["epsilon"] == 0.1 and body["confidence"] == 0.9
    assert body["statistic"] == "Pearson r, dataset-level"
    got = [(r["run"]["label"], r["aspect"]["code"]) for r in body["rows"]]
    assert got == [(r["run"]["label"], r["aspect"]["code"]) for r in sorted_rows(expected, "-corr")]
    assert len(got) == 4  # two imported judges × two aspects
    good = next(
        r for r in body["rows"] if r["run"]["label"] == "m_good" and r["aspect"]["code"] == "COH"
    )
    mine = next(
        r
        for r in expected["rows"]
        if r["run"]["label"] == "m_good" and r["aspect"]["code"] == "COH"
    )
    assert good["correlation"] == pytest.approx(mine["correlation"])
    # one annotator (the imported file), scores with decimals: no ordinal agreement, no alt-test
    assert "do not apply" in good["agreement"]["problem"]
    assert good["alt_test"]["problem"] == "no_items" and good["verdict"]["code"] == "unclear"
    only = world.client("owner").get(url(world), {"aspects": "FLU"}).json()
    assert {r["aspect"]["code"] for r in only["rows"]} == {"FLU"}


def test_bad_report_card_queries_are_refused_naming_the_parameter(world):
    owner = world.client("owner")
    for query, parameter in (
        ({"eps": "1.5"}, "eps"),
        ({"ci": "0.5"}, "ci"),
        ({"coef": "spa"}, "coef"),  # not at sample level
        ({"aspects": "COH;FLU"}, "aspects"),
        ({"sort": "price"}, "sort"),
        ({"runs": "some"}, "runs"),
    ):
        response = owner.get(url(world), query)
        assert response.status_code == 400 and parameter in errors_body(response)["errors"], query
    assert world.client("other_researcher").get(url(world)).status_code == 404
    assert world.client("annotator").get(url(world)).status_code == 403
    assert world.client("anonymous").get(url(world)).status_code in (401, 403)


def test_a_large_datasets_card_answers_202_until_the_worker_has_computed_it(
    world, settings, monkeypatch
):
    from studies import tasks
    from studies.services.analysis.report_card import store

    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}
    sent = []
    monkeypatch.setattr(store, "send", lambda name, *args: sent.append(args))
    pending = world.client("owner").get(url(world))
    assert pending.status_code == 202 and pending["Retry-After"] == "5" and len(sent) == 1
    assert pending.json()["progress"] == {"done": 0, "total": 0}
    tasks.compute_report_card(*sent[0])
    done = world.client("owner").get(url(world))
    assert done.status_code == 200 and len(done.json()["rows"]) == 4


def test_a_studys_report_card_is_its_datasets_on_the_studys_aspects(world):
    world.study.aspects.set(Aspect.objects.filter(code="FLU"))
    study_url = f"/api/studies/{world.study.pk}/report-card/"
    body = world.client("owner").get(study_url, {"level": "dataset"}).json()
    dataset_card = world.client("owner").get(url(world), {"level": "dataset", "aspects": "FLU"})
    assert {r["aspect"]["code"] for r in body["rows"]} == {"FLU"}
    assert body["rows"] == dataset_card.json()["rows"]
    assert world.client("owner").get(study_url, {"eps": "2"}).status_code == 400
    assert world.client("other_researcher").get(study_url).status_code == 404
    assert world.client("annotator").get(study_url).status_code == 403
