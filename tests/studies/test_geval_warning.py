"""The run page warns when a G-Eval model does not follow the form, from stored scores."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scoring.metrics.geval_check import MIN_OUTPUTS
from studies.models import MetricRun, MetricScore
from studies.services.runs.geval_check import form_check
from tests.factories import MetricRunFactory, OutputFactory

pytestmark = pytest.mark.django_db

CONFIG = {"task": "summarization", "aspect": "COH", "scale": [1, 2, 3, 4, 5], "weighting": "prob"}
FLAT = {"1": 0.45, "2": 0.15, "3": 0.26, "4": 0.06, "5": 0.08}  # the default model's shape


def _peaked(label: int) -> dict[str, float]:
    return {str(v): (0.8 if v == label else 0.05) for v in range(1, 6)}


def _run(owner, details: list[dict[str, object]], **fields: object) -> MetricRun:  # type: ignore[no-untyped-def]
    fields.setdefault("status", MetricRun.Status.SUCCEEDED)
    fields.setdefault("config", CONFIG)
    fields.setdefault("metric", "geval")
    run = MetricRunFactory(dataset__owner=owner, **fields)
    for d in details:
        output = OutputFactory(document__dataset=run.dataset)
        MetricScore.objects.create(run=run, output=output, value=2.0, details=d)
    return run


def _probs(dist: dict[str, float], mass: float) -> dict[str, object]:
    return {"distribution": dist, "label_mass": mass, "sampled": False, "argmax": 1.0}


def test_the_run_page_warns_about_a_model_that_does_not_follow_the_form(client, cast):
    run = _run(cast["owner"], [_probs(FLAT, 0.03)] * 12)
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert 'id="geval-warning"' in page
    assert "a median 3.0% of the model&#x27;s probability went to the rating labels" in page
    assert "the most probable label is 1 for 100% of the 12 outputs" in page
    assert "nearly flat" in page


def test_no_warning_for_a_model_that_follows_the_form(client, cast):
    run = _run(cast["owner"], [_probs(_peaked(1 + k % 5), 0.97) for k in range(12)])
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert 'id="geval-warning"' not in page
    check = form_check(run)
    assert check is not None and check.label_mass == pytest.approx(0.97)


def test_sampled_runs_count_the_answers_that_named_a_label(cast):
    sampled = {
        "distribution": _peaked(3),
        "label_mass": None,
        "sampled": True,
        "n_samples": 20,
        "n_unparsed": 15,
    }
    check = form_check(_run(cast["owner"], [sampled] * 3))
    assert check is not None and check.label_mass == pytest.approx(0.25) and check.warns


def test_only_finished_geval_runs_with_distributions_are_checked(cast):
    flat = [_probs(FLAT, 0.03)] * MIN_OUTPUTS
    assert form_check(_run(cast["owner"], flat, status=MetricRun.Status.RUNNING)) is None
    assert form_check(_run(cast["owner"], flat, metric="gptscore")) is None
    failed = [{"sampled": False}] * 3  # failed outputs store no distribution
    assert form_check(_run(cast["owner"], failed)) is None


def test_the_running_page_polls_then_shows_the_warning_in_its_fragment(client, cast):
    run = _run(cast["owner"], [_probs(FLAT, 0.03)] * 12, status=MetricRun.Status.RUNNING)
    client.force_login(cast["owner"])
    url = reverse("studies:run-detail", args=[run.pk])
    assert b'id="geval-warning"' not in client.get(url, headers={"HX-Request": "true"}).content
    run.status = MetricRun.Status.SUCCEEDED
    run.save(update_fields=["status"])
    done = client.get(url, headers={"HX-Request": "true"})
    assert done.status_code == 286 and b'id="geval-warning"' in done.content
