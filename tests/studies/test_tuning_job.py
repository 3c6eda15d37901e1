"""Tuning as a worker job (studies/services/tuning/job.py): the tuned run saved PENDING at
once, its task (called inline, no worker) filling that run as the command does, its
progress, cancel, the sweeper taking back a job whose worker died, the jobs page and the
API that starts one. On the judged file's study (no model)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from studies import tasks
from studies.models import Aspect, MetricRun, Study
from studies.services import jobs, queue
from studies.services.recovery import sweep_stale_work
from studies.services.runs import cancel_run
from studies.services.tuning import registry
from studies.services.tuning.job import execute_tuning, start_tuning
from studies.services.tuning.splits import make_split
from studies.services.tuning.types import Tuned, Tuner
from tests.studies.judged_file import judged_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(cast, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    found = judged_study(cast["owner"], tmp_path)
    make_split(found, dev=0.2, test=0.4, seed=5)
    return found


@pytest.fixture
def sent(monkeypatch):  # type: ignore[no-untyped-def]
    """Tasks sent through studies.services.queue: (name, args, queue)."""
    messages: list[tuple[Any, ...]] = []

    def send(name: str, *args: object, queue: str | None = None, **_: object) -> None:
        messages.append((name, args, queue))

    monkeypatch.setattr(queue, "send", send)
    return messages


def judge(label: str = "judge_b") -> MetricRun:
    return MetricRun.objects.get(label=label)


def coherence() -> Aspect:
    return Aspect.objects.get(code="COH")


def toy_tuner(monkeypatch, tune) -> str:  # type: ignore[no-untyped-def]
    """Register a tuner made of ``tune`` (it maps stored scores: a light job)."""
    monkeypatch.setitem(registry._TUNERS, "toy", Tuner("toy", "toy", (), tune))
    return "toy"


def test_a_calibration_job_is_pending_at_once_and_its_task_fills_that_run_as_the_command(
    study, cast, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = start_tuning(
            judge(), coherence(), "calibration", resamples=200, seed=3, by=cast["owner"]
        )
    assert job.status == MetricRun.Status.PENDING and job.metric == "tuned:calibration"
    assert job.config["tuning_request"] == {
        "start_run": judge().pk,
        "aspect": coherence().pk,
        "study": study.pk,
        "tuner": "calibration",
        "options": {"method": "auto", "gold": "humans"},
        "seed": 3,
        "resamples": 200,
        "queue": "light",
    }
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    assert tasks.tune_judge(job.pk) == "succeeded"
    assert tasks.tune_judge(job.pk) == "not pending"  # a second delivery writes nothing
    job.refresh_from_db()
    assert job.status == MetricRun.Status.SUCCEEDED and job.error == ""
    assert job.done == job.total == job.scores.count() > 0
    # the command (the same job, inline) finds the same evidence and scores
    out = StringIO()
    call_command(
        "tune_judge",
        *("--run", str(judge().pk), "--aspect", "COH", "--tuner", "calibration"),
        *("--resamples", "200", "--seed", "3"),
        stdout=out,
    )
    first, second = out.getvalue().strip().splitlines()
    again = MetricRun.objects.get(pk=int(first))
    assert again.pk != job.pk and again.config["tuning"] == job.config["tuning"]
    assert dict(again.scores.values_list("output_id", "value")) == dict(
        job.scores.values_list("output_id", "value")
    )
    assert f"test Δ spearman (sample): {job.config['tuning']['test']['delta']:+.4f}" in second


def test_the_tuners_progress_is_the_runs_done_and_total(study, monkeypatch, sent):
    seen: list[tuple[int, int]] = []

    def tune(context):  # type: ignore[no-untyped-def]
        for done in range(5):
            context.progress(done, 3)
            row = MetricRun.objects.get(pk=job.pk)
            seen.append((row.done, row.total))
        return Tuned(scores=dict(context.scores))

    job = start_tuning(judge(), coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    assert execute_tuning(job.pk) == "succeeded"
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3), (3, 3)]  # held at total past it
    job.refresh_from_db()
    assert job.done == job.total == judge().scores.count()


def test_a_job_cancelled_mid_way_stops_at_its_next_report_and_stays_cancelled(
    study, monkeypatch, sent
):
    reached: list[int] = []

    def tune(context):  # type: ignore[no-untyped-def]
        context.progress(1, 10)
        cancel_run(MetricRun.objects.get(pk=job.pk))  # the Cancel button, meanwhile
        reached.append(1)
        context.progress(2, 10)
        reached.append(2)
        return Tuned(scores=dict(context.scores))

    job = start_tuning(judge(), coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    assert execute_tuning(job.pk) == "cancelled"
    job.refresh_from_db()
    assert reached == [1] and job.status == MetricRun.Status.CANCELLED
    assert not job.scores.exists() and "tuning" not in job.config


def test_a_failing_tuner_ends_its_run_failed_with_the_error(study, monkeypatch, sent):
    def tune(context):  # type: ignore[no-untyped-def]
        raise ValueError("nothing to learn from")

    job = start_tuning(judge(), coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    assert execute_tuning(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == MetricRun.Status.FAILED
    assert job.error == "ValueError: nothing to learn from" and job.finished_at


def test_a_job_whose_worker_died_is_taken_back_by_the_sweeper_and_succeeds(
    study, sent, settings, django_capture_on_commit_callbacks
):
    job = start_tuning(judge(), coherence(), "calibration", resamples=50, enqueue=False)
    lease = settings.CONCORDIA["RUN_LEASE_SECONDS"]
    now = timezone.now()
    # claimed by a worker that was killed: RUNNING, no heartbeat for longer than the lease
    MetricRun.objects.filter(pk=job.pk).update(
        status=MetricRun.Status.RUNNING, heartbeat_at=now - timedelta(seconds=lease + 5)
    )
    with django_capture_on_commit_callbacks(execute=True):
        counts = sweep_stale_work(now)
    assert counts["running_runs"] == 1
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    job.refresh_from_db()
    assert job.status == MetricRun.Status.PENDING
    assert "worker died" in job.provenance["recoveries"][0]["reason"]
    assert tasks.tune_judge(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.status == MetricRun.Status.SUCCEEDED and job.config["tuning"]["test"]
    # a pending job whose message was lost is sent again too
    lost = start_tuning(judge(), coherence(), "calibration", enqueue=False)
    grace = settings.CONCORDIA["PENDING_GRACE_SECONDS"]
    later = timezone.now() + timedelta(seconds=grace + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stale_work(later)["pending_runs"] == 1
    assert sent[-1] == (queue.TUNE_JUDGE, (lost.pk,), "light")


def test_a_tuning_job_shows_on_the_jobs_page_in_its_lane(study, cast, sent, client):
    job = start_tuning(judge(), coherence(), "calibration", enqueue=False)
    lanes = {lane.name: lane for lane in jobs.lanes_for(cast["owner"])}
    found = [j for j in lanes["light"].jobs if j.url.endswith(f"/runs/{job.pk}/")]
    assert len(found) == 1 and not found[0].running and found[0].position == 1
    client.force_login(cast["owner"])
    page = client.get(f"/runs/{job.pk}/").content.decode()  # its page: progress and Cancel
    assert f"/runs/{job.pk}/cancel/" in page
    execute_tuning(job.pk)
    assert not [j for j in jobs.all_jobs() if j.url.endswith(f"/runs/{job.pk}/")]


def test_the_api_starts_a_tuning_with_the_tuners_options(
    study, cast, client, sent, django_capture_on_commit_callbacks
):
    client.force_login(cast["owner"])
    url = f"/api/runs/{judge().pk}/tune/"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {"aspect": "COH", "tuner": "calibration", "method": "isotonic", "resamples": 50},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "pending" and body["metric"] == "tuned:calibration"
    job = MetricRun.objects.get(pk=body["id"])
    assert job.config["tuning_request"]["options"] == {"method": "isotonic", "gold": "humans"}
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    refused = client.post(
        url, {"aspect": "COH", "tuner": "calibration", "k": "1,2"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "calibration has no option k" in refused.content.decode()
    refused = client.post(
        url, {"aspect": "nope", "tuner": "calibration"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "no aspect 'nope'" in refused.json()["detail"]
    refused = client.post(
        url,
        {"aspect": "COH", "tuner": "calibration", "method": "platt"},
        content_type="application/json",
    )
    assert refused.status_code == 202  # platt on a scale aspect: the job fails, saying why
    failed = MetricRun.objects.get(pk=refused.json()["id"])
    assert execute_tuning(failed.pk) == "failed"
    failed.refresh_from_db()
    assert "binary" in failed.error


def test_the_command_with_enqueue_sends_the_job_and_prints_its_run(
    study, sent, django_capture_on_commit_callbacks
):
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "tune_judge",
            *("--run", str(judge().pk), "--aspect", "COH", "--tuner", "calibration"),
            "--enqueue",
            stdout=out,
        )
    job = MetricRun.objects.get(pk=int(out.getvalue().strip()))
    assert job.status == MetricRun.Status.PENDING and job.metric == "tuned:calibration"
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]


def test_a_served_tunings_usage_counts_every_attempt_after_its_worker_was_killed(
    study, monkeypatch, sent, settings, django_capture_on_commit_callbacks
):
    start = judge()
    start.config = {**start.config, "endpoint": {"name": "served"}}  # a served judge's run
    start.usage = {"requests": 40, "cost": 2.0}  # what making it spent
    start.save(update_fields=["config", "usage"])
    attempts: list[int] = []

    def tune(context):  # type: ignore[no-untyped-def]
        attempts.append(1)
        row = MetricRun.objects.get(pk=context.run.pk)  # the served client adds as it goes
        if len(attempts) == 1:
            row.usage = {**row.usage, "requests": 45, "cost": 2.5}
            row.save(update_fields=["usage"])
            raise SystemExit("the worker is killed")  # no handler: the run stays RUNNING
        row.usage = {**row.usage, "cache_hits": 5}  # the same requests, from the cache
        row.save(update_fields=["usage"])
        return Tuned(scores=dict(context.scores))

    job = start_tuning(start, coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    with pytest.raises(SystemExit):
        execute_tuning(job.pk)
    lease = settings.CONCORDIA["RUN_LEASE_SECONDS"]
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stale_work(timezone.now() + timedelta(seconds=lease + 5))["running_runs"]
    assert execute_tuning(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.usage["requests"] == 5 and job.usage["cache_hits"] == 5
    assert job.usage["cost"] == pytest.approx(0.5)
