"""Celery tasks: thin wrappers that take a job id and call one service."""

from __future__ import annotations

from celery import shared_task

from learned.services.training import execute_job


@shared_task(name="learned.tasks.train_metric", queue="gpu", acks_late=True)
def train_metric(job_id: int) -> str:
    """Train a learned metric (full fine-tuning wants a GPU worker)."""
    return execute_job(job_id)


@shared_task(name="learned.tasks.train_metric_cpu", queue="cpu", acks_late=True)
def train_metric_cpu(job_id: int) -> str:
    """Train a head on frozen features (seconds once the features are cached)."""
    return execute_job(job_id)
