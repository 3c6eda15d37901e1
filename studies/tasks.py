"""Celery tasks: thin wrappers that take an id and call one service."""

from __future__ import annotations

import os
import socket

from celery import Task, shared_task

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


@shared_task(name="studies.tasks.compute_correlations", queue="cpu")
def compute_correlations(dataset_id: int, params: dict[str, object]) -> str:
    """Compute and cache a correlation matrix (see :mod:`studies.services.analysis.dashboards`)."""
    from studies.models import Dataset
    from studies.services.analysis.dashboards import compute_and_cache
    from studies.services.analysis.params import MatrixParams

    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    result = compute_and_cache(dataset, MatrixParams(**params))  # type: ignore[arg-type]
    return f"{len(result['runs'])} runs × {len(result['columns'])} aspects in {result['seconds']} s"


@shared_task(name="studies.tasks.compute_planner", queue="cpu")
def compute_planner(dataset_id: int, params: dict[str, object]) -> str:
    """Compute and cache a sample-size plan (see :mod:`studies.services.analysis.planner`)."""
    from studies.models import Dataset
    from studies.services.analysis.planner import PlannerParams, compute_and_cache

    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    result = compute_and_cache(dataset, PlannerParams(**params))  # type: ignore[arg-type]
    return f"{len(result['sizes'])} sizes in {result['seconds']} s"


@shared_task(name="studies.tasks.compute_diagnostics", queue="cpu")
def compute_diagnostics(
    dataset_id: int, params: dict[str, object], run: str = "", aspect: str = ""
) -> str:
    """Compute and cache a large dataset's diagnostics (see
    :mod:`studies.services.analysis.diagnostics`)."""
    from studies.models import Dataset
    from studies.services.analysis.diagnostics import compute_in_worker
    from studies.services.analysis.params import MatrixParams

    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "dataset gone"
    return compute_in_worker(dataset, MatrixParams(**params), run, aspect)  # type: ignore[arg-type]


@shared_task(name="studies.tasks.run_metric", queue="gpu", acks_late=True, bind=True)
def run_metric(self: Task, run_id: int, shard: int | None = None) -> str:  # type: ignore[type-arg]
    """Execute a metric run, or join it for a shard (a message with nothing left to
    claim does nothing). Messages for the other shards go to the queue this one came from."""
    from studies.services.runs import execute_run

    return execute_run(run_id, shard=shard, fan_out=True, queue=_queue_of(self))


@shared_task(name="studies.tasks.run_metric_cpu", queue="cpu", acks_late=True, bind=True)
def run_metric_cpu(self: Task, run_id: int, shard: int | None = None) -> str:  # type: ignore[type-arg]
    """Execute (or join) a run of a metric that needs no language model (ROUGE, BLEU,
    chrF, BERTScore)."""
    from studies.services.runs import execute_run

    return execute_run(run_id, shard=shard, fan_out=True, queue=_queue_of(self))


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
) -> int:
    """Generate G-Eval's evaluation steps for a task and aspect version (returns their id)."""
    from studies.services.catalog.steps import generate_steps_job

    return generate_steps_job(task_id, aspect_version_id, model, seed, force, user_id, shared)


@shared_task(name="studies.tasks.sweep_stale_work", queue="maintenance")
def sweep_stale_work() -> dict[str, int]:
    """Enqueue again runs and imports whose task was lost (sent by celery beat, run by the
    maintenance worker, which no run can keep busy)."""
    from studies.services.recovery import sweep_stale_work as sweep

    return sweep()
