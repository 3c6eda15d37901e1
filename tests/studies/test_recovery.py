"""The sweeper (studies/services/recovery.py) on rows: which runs and imports it takes
back, what it records, and what it leaves alone. Real worker processes: test_recovery_worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from studies.models import ImportJob, MetricRun, MetricScore
from studies.services import queue
from studies.services.imports import run_import_job
from studies.services.recovery import sweep_stale_work
from studies.services.runs import RunRequest, execute_run, start_run
from tests.studies.conftest import import_baseline_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):  # type: ignore[no-untyped-def]
    """Tasks sent through studies.services.queue (on commit: captured by the test)."""
    messages: list[tuple[object, ...]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args: messages.append((name, *args)))
    return messages


@pytest.fixture
def run(write_jsonl, cast, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    dataset = import_baseline_dataset(write_jsonl, cast["owner"])
    return start_run(dataset, RunRequest(metric="rougeL"), enqueue=False)


def sweep(now, callbacks) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with callbacks(execute=True):
        return sweep_stale_work(now)


def age(model, pk: int, **fields) -> None:  # type: ignore[no-untyped-def]
    model.objects.filter(pk=pk).update(**fields)


def test_a_running_run_without_heartbeat_for_a_lease_is_put_back_and_enqueued_once(
    run, sent, settings, django_capture_on_commit_callbacks
):
    now = timezone.now()
    lease = settings.CONCORDIA["RUN_LEASE_SECONDS"]
    age(MetricRun, run.pk, status="running", heartbeat_at=now - timedelta(seconds=lease + 5))
    counts = sweep(now, django_capture_on_commit_callbacks)
    assert counts == {
        "running_runs": 1,
        "pending_runs": 0,
        "running_imports": 0,
        "pending_imports": 0,
        "running_shards": 0,
        "unsent_tasks": 0,
        "expired_uploads": 0,
    }
    run.refresh_from_db()
    assert run.status == "pending" and run.heartbeat_at == now
    assert sent == [("studies.tasks.run_metric_quick", run.pk)]
    (entry,) = run.provenance["recoveries"]
    assert entry["was"] == "running"
    assert entry["reason"] == f"no heartbeat for {lease + 5} s while scoring: its worker died"
    # Swept again at once: it was just enqueued, so nothing happens.
    assert not any(sweep(now, django_capture_on_commit_callbacks).values())
    assert len(sent) == 1


def test_live_finished_and_cancelled_runs_are_left_alone(
    run, sent, settings, django_capture_on_commit_callbacks
):
    now = timezone.now()
    age(MetricRun, run.pk, status="running", heartbeat_at=now - timedelta(seconds=10))
    for status in ("succeeded", "failed", "cancelled", "waiting"):  # waiting: for batch answers
        other = MetricRun.objects.create(
            dataset=run.dataset,
            metric="rougeL",
            label=status,
            status=status,
            heartbeat_at=now - timedelta(days=9),
        )
        assert other.kind == "computed"
    assert not any(sweep(now, django_capture_on_commit_callbacks).values())
    assert sent == []


def test_a_pending_run_whose_task_vanished_is_enqueued_again_with_backoff(
    run, sent, settings, django_capture_on_commit_callbacks
):
    grace = timedelta(seconds=settings.CONCORDIA["PENDING_GRACE_SECONDS"])
    start = run.heartbeat_at
    assert not any(sweep(start + grace / 2, django_capture_on_commit_callbacks).values())
    first = start + grace + timedelta(seconds=1)
    assert sweep(first, django_capture_on_commit_callbacks)["pending_runs"] == 1
    # Still waiting (a long queue, or lost again): the next try waits twice the grace.
    assert not any(sweep(first + grace * 1.5, django_capture_on_commit_callbacks).values())
    assert sweep(first + grace * 2.1, django_capture_on_commit_callbacks)["pending_runs"] == 1
    run.refresh_from_db()
    assert [e["was"] for e in run.provenance["recoveries"]] == ["pending", "pending"]
    assert sent == [("studies.tasks.run_metric_quick", run.pk)] * 2
    # The recovered run then runs as usual and keeps its log.
    assert execute_run(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.status == "succeeded" and len(run.provenance["recoveries"]) == 2
    assert MetricScore.objects.filter(run=run).count() == run.total == 12


def test_a_run_claimed_after_the_sweeper_read_it_is_not_touched(
    run, sent, settings, django_capture_on_commit_callbacks, monkeypatch
):
    from studies.services import recovery

    now = timezone.now()
    age(MetricRun, run.pk, status="running", heartbeat_at=now - timedelta(hours=1))
    real = recovery._recover_run

    def worker_writes_first(row, reason, at):  # type: ignore[no-untyped-def]
        age(MetricRun, row.pk, heartbeat_at=timezone.now())  # a heartbeat lands in between
        return real(row, reason, at)

    monkeypatch.setattr(recovery, "_recover_run", worker_writes_first)
    assert sweep(now, django_capture_on_commit_callbacks)["running_runs"] == 0
    run.refresh_from_db()
    assert run.status == "running" and "recoveries" not in run.provenance and sent == []


def test_the_run_page_shows_the_recoveries(
    run, client, cast, sent, settings, django_capture_on_commit_callbacks
):
    now = timezone.now()
    age(MetricRun, run.pk, status="running", heartbeat_at=now - timedelta(hours=1))
    sweep(now, django_capture_on_commit_callbacks)
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert "Sent again by the sweeper 1 time" in page and "no heartbeat for 3600 s" in page
    assert "its task was lost" not in page


def test_import_jobs_pending_or_stuck_running_are_enqueued_again_and_import_once(
    client, cast, sent, settings, django_capture_on_commit_callbacks
):
    client.force_login(cast["owner"])
    content = b'{"doc_id": "d1", "system_id": "s1", "source": "S", "output": "O", "human": {"fluency": 3}}\n'
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("studies:upload"),
            {
                "file": SimpleUploadedFile("a.jsonl", content),
                "dataset": "swept",
                "task": "summarization",
            },
        )
    job = ImportJob.objects.get()
    assert sent == [("studies.tasks.import_upload", job.pk)]
    grace = timedelta(seconds=settings.CONCORDIA["PENDING_GRACE_SECONDS"])
    later = job.heartbeat_at + grace + timedelta(seconds=1)
    assert sweep(later, django_capture_on_commit_callbacks)["pending_imports"] == 1
    # Claimed by a worker that then died inside its (rolled back) transaction.
    age(ImportJob, job.pk, status="running", heartbeat_at=later)
    lease = timedelta(seconds=settings.CONCORDIA["IMPORT_LEASE_SECONDS"])
    assert not sweep(later + lease / 2, django_capture_on_commit_callbacks)["running_imports"]
    assert sweep(later + lease * 1.1, django_capture_on_commit_callbacks)["running_imports"] == 1
    job.refresh_from_db()
    assert (job.status, job.recoveries) == ("pending", 2)
    assert sent == [("studies.tasks.import_upload", job.pk)] * 3
    assert run_import_job(job.pk) == "succeeded" and run_import_job(job.pk) == "not pending"
    page = client.get(reverse("studies:import-detail", args=[job.pk])).content.decode()
    assert "Sent again by the sweeper 2 times" in page and "was pending, queued longer than" in page
    assert f"was running, importing for {lease.total_seconds() * 1.1:.0f} s" in page


def test_recoveries_say_their_cause_the_step_without_heartbeat_or_the_wait_in_the_queue(
    run, sent, settings, django_capture_on_commit_callbacks
):
    """Issue 43: "Recovered automatically (its task was lost)" for a run that was only
    queued; now the reason names the cause."""
    now = timezone.now()
    lease = settings.CONCORDIA["RUN_LEASE_SECONDS"]
    writing = {"phase": "writing evaluation steps"}
    age(MetricRun, run.pk, status="running", heartbeat_at=now - timedelta(seconds=lease + 44))
    MetricRun.objects.filter(pk=run.pk).update(timings=writing)
    sweep(now, django_capture_on_commit_callbacks)
    grace = settings.CONCORDIA["PENDING_GRACE_SECONDS"] * 2  # doubled after one recovery
    later = now + timedelta(seconds=grace + 30)
    sweep(later, django_capture_on_commit_callbacks)  # it waited in the queue since
    run.refresh_from_db()
    died, waited = (e["reason"] for e in run.provenance["recoveries"])
    assert (
        died == f"no heartbeat for {lease + 44} s while writing evaluation steps: its worker died"
    )
    assert waited == (
        f"queued longer than {grace} s ({grace + 30} s) without a worker taking it: "
        "no worker alive on the queue quick"
    )
