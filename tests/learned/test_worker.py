"""A training job in a real ``celery worker`` process, killed mid-way and resumed from its
last checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from learned.models import TrainedMetric
from learned.services.jobs import TrainingRequest, create_job, resume_job
from learned.tasks import train_metric_cpu

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def _worker(name: str) -> subprocess.Popen[bytes]:
    from django.conf import settings

    from evalsite.celery import worker_command
    from tests.conftest import worker_env

    log = (settings.DATA_DIR / f"{name}.log").open("wb")
    return subprocess.Popen(
        worker_command(f"{name}-{os.getpid()}@%h", queues="learned-test"),
        env=worker_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _wait(job: TrainedMetric, done, seconds: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not done(job) and time.monotonic() < deadline:
        time.sleep(0.05)
        job.refresh_from_db()


def test_a_job_killed_mid_way_resumes_from_its_last_checkpoint(judged, tiny_backbone):
    # Full fine-tuning of the tiny model: slow enough (a backbone forward per step) to be
    # killed between epochs, and every epoch writes a checkpoint.
    job = create_job(
        TrainingRequest(
            dataset="judged",
            aspect="COH",
            backbone=tiny_backbone,
            mode="full",
            epochs=8,
            patience=8,
            batch_size=4,
            accumulate=1,
        ),
        enqueue=False,
        local_paths=True,
    )
    first = _worker("doomed-trainer")
    try:
        train_metric_cpu.apply_async((job.pk,), queue="learned-test")
        _wait(job, lambda j: len(j.curves) >= 2, 600)  # a loaded machine starts workers slowly
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    job.refresh_from_db()
    before = list(job.curves)
    assert job.status == "running" and 2 <= len(before) < 8, (job.status, len(before), job.error)

    second = _worker("rescuer-trainer")
    try:
        assert resume_job(job, force=True, enqueue=False)
        train_metric_cpu.apply_async((job.pk,), queue="learned-test")
        _wait(job, lambda j: j.status not in ("pending", "running"), 600)
    finally:
        second.terminate()
        try:  # a warm shutdown on a loaded machine may take longer: the job is done by now
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()
            second.wait()
    assert job.status == "succeeded", job.error
    assert job.progress["resumed_from_epoch"] >= len(before)
    assert len(job.curves) == 8
    # the epochs finished before the kill are kept as they were
    assert job.curves[: len(before)] == before
    assert [c["epoch"] for c in job.curves] == list(range(1, 9))
