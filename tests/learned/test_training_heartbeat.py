"""A training's heartbeat comes in every phase (issue 43), so a live job never looks
stopped: while its backbone loads for longer than the job may go silent, Resume is not
offered (it would start a second worker on the same job)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from learned.models import TrainedMetric
from learned.services import jobs, training
from learned.services.jobs import TrainingRequest, can_resume, create_job

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the heartbeat thread has its own connection
    pytest.mark.usefixtures("defaults_restored"),
]
SILENT = 1.0  # seconds a running job may go without a heartbeat (5 minutes in production)


def test_a_job_loading_its_backbone_longer_than_it_may_be_silent_is_not_resumable(
    judged, tiny_backbone, settings, monkeypatch
):
    settings.CONCORDIA = {**settings.CONCORDIA, "WORKER_HEARTBEAT_SECONDS": 0.2}
    monkeypatch.setattr(jobs, "STALE_AFTER", timedelta(seconds=SILENT))
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, epochs=1),
        enqueue=False,
        local_paths=True,
    )
    offered: list[bool] = []
    real = training.load_backbone

    def slow_backbone(config):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + SILENT * 2.5  # a large backbone takes minutes
        while time.monotonic() < deadline:
            time.sleep(0.05)
        offered.append(can_resume(TrainedMetric.objects.get(pk=job.pk)))
        return real(config)

    monkeypatch.setattr(training, "load_backbone", slow_backbone)
    assert training.execute_job(job.pk) == "succeeded"
    assert offered == [False]
