"""End to end through a real broker and a real ``celery worker`` process."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.models import ImportJob, Output, WorkerHeartbeat
from studies.tasks import heartbeat

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def test_a_task_round_trips_through_the_worker_and_writes_a_row(celery_worker_process):
    pk = heartbeat.delay("round trip").get(timeout=30)
    row = WorkerHeartbeat.objects.get(pk=pk)
    assert row.note == "round trip"
    assert row.pid == celery_worker_process.pid  # written by the worker, not by this process


def test_an_upload_is_imported_by_the_worker(client, cast, celery_worker_process):
    client.force_login(cast["owner"])
    content = b"".join(
        b'{"doc_id": "d%d", "system_id": "s%d", "source": "src %d", "output": "out", "human": {"fluency": 3}}\n'
        % (i // 4, i % 4, i // 4)
        for i in range(40)
    )
    response = client.post(
        reverse("studies:upload"),
        {
            "file": SimpleUploadedFile("e2e.jsonl", content),
            "dataset": "e2e",
            "task": "summarization",
        },
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    deadline = time.monotonic() + 60
    while job.status in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    assert job.status == "succeeded", job.errors
    assert Output.objects.filter(document__dataset__name="e2e").count() == 40
