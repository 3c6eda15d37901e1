"""Work done by workers outside metric runs (upload imports), worker heartbeats, and
the workers themselves as the jobs page shows them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studies.models.aspects import TaskKind
from studies.models.datasets import Dataset


class ImportJob(models.Model):
    """An uploaded file waiting for, or done with, its import in a worker."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    upload = models.FileField(upload_to="uploads/%Y/%m/")
    original_name = models.CharField(max_length=255)
    file_format = models.CharField(max_length=16)
    dataset_name = models.SlugField(max_length=100)
    task = models.ForeignKey(TaskKind, on_delete=models.PROTECT, related_name="+")
    create_aspects = models.BooleanField(default=False)
    scale_options = models.JSONField(
        default=dict,
        blank=True,
        help_text='Out-of-scale scores: {"rescale": {"name": [low, high]}, "widen_aspects": bool}.',
    )
    dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.SET_NULL, related_name="import_jobs"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    summary = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was last enqueued or claimed by a worker."
    )
    recoveries = models.PositiveIntegerField(
        default=0, help_text="Times the sweeper enqueued it again because its task was lost."
    )
    recovery_log = models.JSONField(
        default=list, blank=True, help_text="Each time it was enqueued again: when and why."
    )
    session = models.CharField(
        max_length=80,
        blank=True,
        help_text="The database session of the worker importing it (PostgreSQL: its backend's "
        "pid and start), so that the sweeper sees at once when it is gone.",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import of {self.original_name} into {self.dataset_name}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED}


class WorkerHeartbeat(models.Model):
    """Written by the ``heartbeat`` task: proof that a worker took a task and reached the database."""

    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class UnsentTask(models.Model):
    """A task message that could not be sent when its transaction committed (the broker
    did not answer): kept here, and sent again by the sweeper, so that what committed
    (a finished run, an import) never waits on a lost message."""

    name = models.CharField(max_length=200)
    args = models.JSONField(default=list, blank=True)
    queue = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True, help_text="Why the last send failed.")
    attempts = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.name}{tuple(self.args)} (unsent, {self.attempts} attempts)"


class WorkerNode(models.Model):
    """A Celery worker (one node, by its name) as it last reported itself: each one
    writes its row every ``WORKER_HEARTBEAT_SECONDS`` from a thread of its own while it
    runs, whatever its task is doing (:mod:`studies.services.workers`), and marks it
    stopped when it shuts down; ``manage.py demo`` marks one its supervisor saw die."""

    name = models.CharField(max_length=255, unique=True)  # the node name: light@host
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    queues = models.CharField(max_length=255, help_text="The queues it takes, comma-separated.")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(help_text="Its last heartbeat.")
    stopped_at = models.DateTimeField(null=True, blank=True)
    stop_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"worker {self.name} ({self.queues})"

    @property
    def queue_list(self) -> list[str]:
        return [q for q in self.queues.split(",") if q]
