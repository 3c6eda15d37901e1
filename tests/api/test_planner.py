"""Sentinel baselines and the sample-size planner through the API: the same services
as the pages."""

from __future__ import annotations

import pytest

from studies.models import Aspect, MetricRun
from studies.services.analysis import planner
from studies.services.analysis.planner import PlannerParams

pytestmark = pytest.mark.django_db


def test_posting_sentinels_adds_them_once(world):
    url = f"/api/datasets/{world.dataset.pk}/sentinels/"
    owner = world.client("owner")
    first = owner.post(url, {"seed": 7}, format="json")
    assert first.status_code == 201, first.content
    body = first.json()
    created = {r["metric"] for r in body["created"]}
    assert {"length", "random"} <= created and body["existing"] == []
    assert next(r for r in body["created"] if r["metric"] == "random")["config"]["seed"] == 7
    again = owner.post(url, {"seed": 7}, format="json")
    assert again.status_code == 200 and again.json()["created"] == []
    assert {r["id"] for r in again.json()["existing"]} == {r["id"] for r in body["created"]}
    assert world.client("other_researcher").post(url, {}, format="json").status_code == 404
    assert world.client("anonymous").post(url, {}, format="json").status_code in (401, 403)
    bad = owner.post(url, {"seed": -1}, format="json")
    assert bad.status_code == 400


def test_the_planner_answers_202_then_the_pages_plan(world, django_capture_on_commit_callbacks):
    coh = Aspect.objects.get(code="COH")
    runs = list(MetricRun.objects.filter(dataset=world.dataset).order_by("pk"))
    url = f"/api/datasets/{world.dataset.pk}/planner/"
    query = {"aspect": coh.pk, "a": runs[0].pk, "b": runs[1].pk, "coef": "pearson"}
    owner = world.client("owner")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        pending = owner.get(url, query)
    assert pending.status_code == 202 and pending["Retry-After"] == "5" and len(callbacks) == 1
    params = PlannerParams.from_query({k: str(v) for k, v in query.items()})
    expected = planner.compute_and_cache(world.dataset, params)
    done = owner.get(url, query)
    assert done.status_code == 200
    body = done.json()
    assert body["rows"] == expected["rows"] and body["label"] == "Pearson r"
    assert body["a"]["run"] == runs[0].pk and body["b"]["run"] == runs[1].pk


def test_bad_planner_queries_are_refused(world):
    url = f"/api/datasets/{world.dataset.pk}/planner/"
    owner = world.client("owner")
    coh = Aspect.objects.get(code="COH")
    run = world.run.pk
    assert owner.get(url, {"aspect": coh.pk}).status_code == 400  # a is required
    assert owner.get(url, {"aspect": coh.pk, "a": run, "level": "system"}).status_code == 400
    assert owner.get(url, {"aspect": coh.pk, "a": 999999}).status_code == 404
    assert (
        world.client("other_researcher").get(url, {"aspect": coh.pk, "a": run}).status_code == 404
    )
