"""The Celery app of ``bench/broker.py``'s workers: one task that records the message it
got, on the filesystem broker of ``$BENCH_BROKER_DIR`` with the transport
``$BENCH_TRANSPORT`` (``evalsite.broker:Transport``, or ``filesystem``: kombu's own).
No Django: the workers start in a second and measure the broker, not the app."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_ready

FOLDER = Path(os.environ.get("BENCH_BROKER_DIR", "bench-broker"))

app = Celery("bench-broker")
app.conf.update(
    broker_url="filesystem://",
    broker_transport=os.environ.get("BENCH_TRANSPORT") or None,
    broker_transport_options={
        "data_folder_in": str(FOLDER / "queue"),
        "data_folder_out": str(FOLDER / "queue"),
        "control_folder": str(FOLDER / "control"),
        "store_processed": False,
    },
    broker_connection_retry_on_startup=True,
    task_ignore_result=True,
    task_acks_late=True,  # as the app's workers run
    worker_prefetch_multiplier=1,
    task_default_queue="bench",
    accept_content=["json"],
    task_serializer="json",
)


@app.task(name="bench.record")
def record(message: str, pad: str = "") -> None:
    """Append the message's id to this worker process's record (one line each)."""
    with (FOLDER / f"got-{os.getpid()}.txt").open("a") as fh:
        fh.write(f"{message}\n")


@worker_ready.connect
def ready(sender: Any, **kwargs: Any) -> None:
    """Say the worker is up (the bench sends once every worker is)."""
    (FOLDER / f"ready-{os.getpid()}").touch()
