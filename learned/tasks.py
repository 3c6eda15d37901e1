"""Celery tasks: thin wrappers that take a job id and call one service.

The training service imports torch at its top, and every worker imports this module
(Celery finds each app's tasks): it is imported in the tasks, so that only the workers
that train pay for torch (a light worker computing matrices holds half the memory)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="learned.tasks.train_metric", queue="gpu", acks_late=True)
def train_metric(job_id: int) -> str:
    """Train a learned metric (full fine-tuning wants a GPU worker)."""
    from learned.services.training import execute_job

    return execute_job(job_id)


@shared_task(name="learned.tasks.train_metric_cpu", queue="cpu", acks_late=True)
def train_metric_cpu(job_id: int) -> str:
    """Train a head on frozen features (seconds once the features are cached)."""
    from learned.services.training import execute_job

    return execute_job(job_id)
