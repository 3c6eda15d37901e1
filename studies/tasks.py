"""Celery tasks: thin wrappers that take an id and call one service."""

from __future__ import annotations

import os
import socket

from celery import shared_task

from studies.models import WorkerHeartbeat
from studies.services import imports


@shared_task(name="studies.tasks.import_upload", queue="cpu")
def import_upload(job_id: int) -> str:
    """Run the import of an uploaded file (see :func:`imports.run_import_job`)."""
    return imports.run_import_job(job_id)


@shared_task(name="studies.tasks.heartbeat", queue="cpu")
def heartbeat(note: str = "") -> int:
    """Write a row from the worker: used by health checks and the end-to-end test."""
    row = WorkerHeartbeat.objects.create(hostname=socket.gethostname(), pid=os.getpid(), note=note)
    return row.pk
