"""Celery tasks: thin wrappers that take an id and call one service."""

from __future__ import annotations

import os
import socket
from typing import Any

from celery import Task, shared_task
from celery.signals import worker_ready, worker_shutdown

from studies.models import Dataset, WorkerHeartbeat
from studies.services import imports, recovery, workers
from studies.services.analysis import dashboards, diagnostics, planner, report_card, snapshot
from studies.services.analysis.params import MatrixParams
from studies.services.catalog.endpoints import probe_job
from studies.services.catalog.steps import generate_steps_job
from studies.services.runs import execute_run
from studies.services.runs.io import execute_io_run
from studies.services.tuning.job import execute_tuning


@shared_task(name="studies.tasks.import_upload", queue="light")
def import_upload(job_id: int) -> str:
    """Run the import of an uploaded file (see :func:`imports.run_import_job`)."""
    return imports.run_import_job(job_id)


@shared_task(name="studies.tasks.heartbeat", queue="light")
def heartbeat(note: str = "") -> int:
    """Write a row from the worker: used by health checks and the end-to-end test."""
    row = WorkerHeartbeat.objects.create(hostname=socket.gethostname(), pid=os.getpid(), note=note)
    return row.pk


@shared_task(name="studies.tasks.compute_correlations", queue="light")
def compute_correlations(dataset_id: int, params: dict[str, object]) -> str:
    """Compute and cache a correlation matrix (see :mod:`studies.services.analysis.dashboards`)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    result = dashboards.compute_and_cache(dataset, MatrixParams(**params))  # type: ignore[arg-type]
    return f"{len(result['runs'])} runs × {len(result['columns'])} aspects in {result['seconds']} s"


@shared_task(name="studies.tasks.compute_planner", queue="light")
def compute_planner(dataset_id: int, params: dict[str, object]) -> str:
    """Compute and cache a sample-size plan (see :mod:`studies.services.analysis.planner`)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    result = planner.compute_and_cache(dataset, planner.PlannerParams(**params))  # type: ignore[arg-type]
    return f"{len(result['sizes'])} sizes in {result['seconds']} s"


@shared_task(name="studies.tasks.compute_diagnostics", queue="light")
def compute_diagnostics(
    dataset_id: int, params: dict[str, object], run: str = "", aspect: str = ""
) -> str:
    """Compute and cache a large dataset's diagnostics (see
    :mod:`studies.services.analysis.diagnostics`)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    return diagnostics.compute_in_worker(dataset, MatrixParams(**params), run, aspect)  # type: ignore[arg-type]


@shared_task(name="studies.tasks.compute_report_card", queue="light")
def compute_report_card(dataset_id: int, params: dict[str, object]) -> str:
    """Compute and cache a judge report card (see
    :mod:`studies.services.analysis.report_card`)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    return report_card.compute_in_worker(dataset, report_card.CardParams.from_dict(params))


@shared_task(name="studies.tasks.write_snapshot", queue="light")
def write_snapshot(dataset_id: int) -> str:
    """Write the columnar snapshot of a dataset's current data once an import or a run
    has ended (see :func:`studies.services.analysis.snapshot.refresh`)."""
    return snapshot.refresh(dataset_id)


@shared_task(name="studies.tasks.run_metric", queue="gpu", acks_late=True, bind=True)
def run_metric(self: Task, run_id: int, shard: int | None = None) -> str:  # type: ignore[type-arg]
    """Execute a metric run, or join it for a shard (a message with nothing left to
    claim does nothing). Messages for the other shards go to the queue this one came from."""
    return execute_run(run_id, shard=shard, fan_out=True, queue=_queue_of(self))


@shared_task(name="studies.tasks.run_metric_cpu", queue="cpu", acks_late=True, bind=True)
def run_metric_cpu(self: Task, run_id: int, shard: int | None = None) -> str:  # type: ignore[type-arg]
    """Execute (or join) a run of a metric that needs no language model but an encoder
    (BERTScore)."""
    return execute_run(run_id, shard=shard, fan_out=True, queue=_queue_of(self))


@shared_task(name="studies.tasks.run_metric_quick", queue="quick", acks_late=True, bind=True)
def run_metric_quick(self: Task, run_id: int, shard: int | None = None) -> str:  # type: ignore[type-arg]
    """Execute (or join) a run of a short model-free metric (ROUGE, BLEU, chrF, length,
    random): a worker of its own, so it never waits behind a model run."""
    return execute_run(run_id, shard=shard, fan_out=True, queue=_queue_of(self))


@shared_task(name="studies.tasks.run_metric_io", queue="io", acks_late=True, bind=True)
def run_metric_io(self: Task, run_id: int, shard: int | None = None) -> str:  # type: ignore[type-arg]
    """Execute (or join) a run on a served endpoint: HTTP requests, no model loaded, in
    one of its endpoint's slots."""
    return execute_io_run(run_id, shard=shard, on=_queue_of(self))


@shared_task(name="studies.tasks.tune_judge", queue="light", acks_late=True)
def tune_judge(run_id: int) -> str:
    """Execute a tuning job: fill its tuned run (sent to light, gpu or io, as the job
    says: see :mod:`studies.services.tuning.job`)."""
    return execute_tuning(run_id)


@shared_task(name="studies.tasks.probe_endpoint", queue="io")
def probe_endpoint(endpoint_id: int) -> str:
    """Probe what a served endpoint can do and store it (see :func:`probe_job`)."""
    return probe_job(endpoint_id)


def _queue_of(task: Task) -> str | None:  # type: ignore[type-arg]
    """The queue a message was delivered from (None when run eagerly or unknown)."""
    info = getattr(task.request, "delivery_info", None) or {}
    return info.get("routing_key") or None


@shared_task(name="studies.tasks.generate_steps", queue="gpu")
def generate_steps(
    task_id: int,
    aspect_version_id: int,
    model: str = "default",
    seed: int = 0,
    force: bool = False,
    user_id: int | None = None,
    shared: bool = False,
    request_id: int | None = None,
) -> int:
    """Generate G-Eval's evaluation steps for a task and aspect version (returns their id)."""
    return generate_steps_job(
        task_id, aspect_version_id, model, seed, force, user_id, shared, request_id
    )


@shared_task(name="studies.tasks.sweep_stale_work", queue="maintenance")
def sweep_stale_work() -> dict[str, int]:
    """Enqueue again runs and imports whose task was lost (sent by celery beat, run by the
    maintenance worker, which no run can keep busy)."""
    return recovery.sweep_stale_work()


@worker_ready.connect
def announce_worker(sender: Any, **kwargs: Any) -> None:
    """A worker is up: its row on the jobs page, renewed by a thread of its own."""
    workers.start_presence(sender.hostname, sender.app.amqp.queues.consume_from)


@worker_shutdown.connect
def retire_worker(sender: Any, **kwargs: Any) -> None:
    """A worker stops (a warm shutdown): the jobs page says so at once."""
    workers.stopped(sender.hostname, "stopped (shut down)")
