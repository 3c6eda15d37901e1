"""Tuning a judge through the client against a live server: ``tune`` starts the same job
as the run page's form and ``manage.py tune_judge`` (the tuned run, pending, sent to its
worker), ``wait_for_run`` follows it until it succeeds, ``tuning`` reads its evidence;
what the server or the client refuses is said. The worker's task runs inline, called
when the client first sees the run waiting (no worker process)."""

from __future__ import annotations

import pytest
from concordia_client import BadRequest, Run

from studies import tasks
from studies.models import Aspect, MetricRun
from studies.services import queue
from studies.services.tuning.splits import make_split
from tests.factories import calibration_request
from tests.studies.judged_file import judged_study

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("defaults_restored")]


def test_tune_returns_the_pending_tuned_run_that_wait_for_run_follows_to_its_evidence(
    api, cast, tmp_path, monkeypatch
):
    study = judged_study(cast["owner"], tmp_path)
    make_split(study, dev=0.2, test=0.4, seed=5)
    start = MetricRun.objects.get(label="judge_b")
    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args, **kw: sent.append((name, args)))

    run = api.tune(
        start.pk,
        aspect="COH",
        tuner="calibration",
        study=study.pk,
        seed=3,
        resamples=200,
        method="isotonic",
    )
    assert run.status == "pending" and run.metric == "tuned:calibration"
    assert run.dataset == start.dataset_id and sent == [(queue.TUNE_JUDGE, (run.id,))]
    coh = Aspect.objects.get(code="COH").pk
    assert MetricRun.objects.get(pk=run.id).config["tuning_request"] == calibration_request(
        start.pk, coh, study.pk, "isotonic"
    )

    seen: list[str] = []

    def worker(state: Run) -> None:  # the worker takes the job once the client sees it wait
        seen.append(state.status)
        if state.status == "pending":
            assert tasks.tune_judge(state.id) == "succeeded"

    ended = api.wait_for_run(run, progress=worker, timeout=60)
    assert seen == ["pending", "succeeded"]
    assert ended.status == "succeeded" and ended.done == ended.total > 0
    evidence = api.tuning(ended)
    stored = MetricRun.objects.get(pk=run.id).config["tuning"]
    assert evidence["tuner"] == "calibration" and evidence["start_run"] == start.pk
    assert evidence["options"] == {"method": "isotonic", "gold": "humans"} == stored["options"]
    assert evidence["test"]["delta"] == pytest.approx(stored["test"]["delta"])

    # the server names what it refuses; the client refuses a field no tuner declares
    with pytest.raises(BadRequest) as refused:
        api.tune(start, aspect="COH", tuner="calibration", k="1,2")
    assert refused.value.errors == {"k": ["calibration has no option k"]}
    with pytest.raises(BadRequest) as refused:
        api.tune(start, aspect="nope", tuner="calibration")
    assert "no aspect 'nope'" in refused.value.detail
    with pytest.raises(ValueError, match="takes no field"):
        api.tune(start, aspect="COH", tuner="calibration", temperature=0.5)
    assert MetricRun.objects.filter(metric="tuned:calibration").count() == 1
    assert [m for m in sent if m[0] == queue.TUNE_JUDGE] == [(queue.TUNE_JUDGE, (run.id,))]
