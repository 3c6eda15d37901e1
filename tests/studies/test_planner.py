"""The sample-size planner's service, task and page: a worker computes and caches the
plan while the page polls; the numbers are the pure planner's on the dataset's
per-document correlations."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest
from django.http import QueryDict
from django.urls import reverse
from scipy import stats

from scoring.stats import planner as stats_planner
from studies.models import Aspect, MetricRun
from studies.services.analysis import planner
from studies.services.analysis.planner import PlannerParams
from studies.tasks import compute_planner

pytestmark = pytest.mark.django_db


def _params(**overrides):  # type: ignore[no-untyped-def]
    runs = {r.label: r.pk for r in MetricRun.objects.filter(dataset__name="scored")}
    coh = Aspect.objects.get(code="COH").pk
    return PlannerParams(
        aspect=coh, a=runs["good"], b=runs["noise"], resamples=300, trials=40, inner=60, **overrides
    )


def _dataset():  # type: ignore[no-untyped-def]
    return MetricRun.objects.filter(dataset__name="scored").first().dataset


def test_the_plan_resamples_per_document_spearman_values(scored):  # noqa: F811
    params = _params()
    plan = planner.compute_plan(_dataset(), params)
    assert plan["n_documents"] == 12 and plan["sizes"] == stats_planner.size_grid(12)
    # run a's value is the mean of scipy's per-document Spearman correlations
    per_doc = []
    for d in sorted({r["doc_id"] for r in scored}):
        rows = [r for r in scored if r["doc_id"] == d]
        per_doc.append(
            stats.spearmanr(
                [r["metrics"]["good"] for r in rows], [r["human"]["coherence"] for r in rows]
            )[0]
        )
    assert plan["a"]["value"] == pytest.approx(np.mean(per_doc), abs=1e-12)
    expected = stats_planner.half_widths(
        np.array(per_doc), plan["sizes"], np.random.default_rng(0), resamples=300
    )
    np.testing.assert_allclose([r["half_width_a"] for r in plan["rows"]], expected, rtol=1e-12)
    widths = [r["half_width_a"] for r in plan["rows"]]
    assert widths[0] > widths[-1]
    assert all(0 <= r["power"] <= 1 for r in plan["rows"])
    assert sum(r["here"] for r in plan["rows"]) == 1
    plotted = plan["chart"]["layer"][0]["data"]["values"]  # the Vega-Lite lines: a, b, a − b
    assert [v["value"] for v in plotted if v["series"] == "a"] == pytest.approx(widths, abs=1e-6)
    assert len(plotted) == 3 * len(plan["sizes"])
    assert plan["needed"] is None or plan["needed"] in plan["sizes"]


def test_the_same_seed_gives_the_same_plan_and_another_a_different_one(scored):  # noqa: F811
    first = planner.compute_plan(_dataset(), _params())
    again = planner.compute_plan(_dataset(), _params())
    other = planner.compute_plan(_dataset(), _params(seed=5))
    assert first["rows"] == again["rows"] and first["rows"] != other["rows"]


def test_a_worker_computes_the_plan_once_and_the_page_shows_it(
    scored,  # noqa: F811
    client,
    cast,
    django_capture_on_commit_callbacks,
):
    dataset, params = _dataset(), _params()
    client.force_login(cast["owner"])
    url = reverse("studies:planner", args=[dataset.pk]) + "?" + params.query
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = client.get(url)
        client.get(url)  # already asked: not enqueued again
    assert len(callbacks) == 1
    assert first.status_code == 200 and "Computing the plan" in first.content.decode()
    page_params = PlannerParams.from_query(QueryDict(params.query))  # the page's defaults
    assert "computed" not in compute_planner(dataset.pk, asdict(page_params))  # the worker's call
    page = client.get(url).content.decode()
    assert 'data-chart="planner-chart-spec"' in page and 'id="planner-chart-spec"' in page
    assert 'id="planner-table"' in page
    assert "style=" not in page.split("<main")[1]  # CSP: no inline styles
    polled = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="planner")
    assert polled.status_code == 286 and b"<html" not in polled.content


def test_the_planner_refuses_other_levels_and_unknown_runs(scored, client, cast):  # noqa: F811
    dataset = _dataset()
    client.force_login(cast["owner"])
    base = reverse("studies:planner", args=[dataset.pk])
    params = _params()
    page = client.get(base + f"?level=dataset&aspect={params.aspect}&a={params.a}").content.decode()
    assert 'id="planner-problem"' in page and "sample level" in page
    assert client.get(base + "?a=999999").status_code == 404
    assert 'id="planner-choose"' in client.get(base).content.decode()
    client.force_login(cast["outsider"])
    assert client.get(base).status_code == 404


def test_too_few_documents_say_so(scored):  # noqa: F811
    params = _params()
    MetricRun.objects.get(pk=params.b).scores.filter(output__document__doc_key__gt="doc00").delete()
    plan = planner.compute_plan(_dataset(), params)
    assert plan["n_documents"] < 2 and "Fewer than two documents" in plan["problem"]
