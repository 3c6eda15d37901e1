"""Metric runs, their shards and scores, and the hub models an admin allows runs to use."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q

from studies.models.aspects import AspectVersion
from studies.models.datasets import Dataset, Output
from studies.models.prompts import PromptTemplateVersion


class MetricRun(models.Model):
    """One run of a metric over a dataset, with the exact configuration it used."""

    class Kind(models.TextChoices):
        COMPUTED = "computed", "Computed"
        IMPORTED = "imported", "Imported"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        # a served run written as a batch request file: no worker takes it, the sweeper
        # leaves it alone; reading the results file (or Resume, online) moves it on
        WAITING = "waiting", "Waiting for batch answers"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    metric = models.CharField(
        max_length=64, help_text="Registered metric name, or the imported column."
    )
    label = models.CharField(max_length=200, help_text="How tables and exports name this run.")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.COMPUTED)
    config = models.JSONField(default=dict, blank=True, help_text="Frozen configuration.")
    aspect_version = models.ForeignKey(
        AspectVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    template_version = models.ForeignKey(
        PromptTemplateVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    steps = models.ForeignKey(
        "EvaluationSteps",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        help_text="The G-Eval evaluation steps version a run used.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    timings = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(
        default=dict,
        blank=True,
        help_text="A served run's spending: requests, tokens, cost, retries by reason, cache "
        "hits, latency p50/p95 (empty for a run on a local model).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life: when it was enqueued (PENDING) or its worker last wrote "
        "(RUNNING). The sweeper takes back runs whose heartbeat is too old.",
    )

    class Meta:
        ordering = ["dataset", "label"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="run_done_within_total"),
            models.UniqueConstraint(
                fields=["dataset", "label"],
                condition=Q(kind="imported"),
                name="run_unique_imported_label",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} on {self.dataset}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED}

    @property
    def is_waiting(self) -> bool:
        """Waiting for a batch processor's answers (:mod:`studies.services.runs.batch`):
        neither running nor ended."""
        return self.status == self.Status.WAITING

    @property
    def is_partial(self) -> bool:
        """A computed run that ended without scoring every output (cancelled, failed or
        short): its correlations cover only what it scored."""
        return (
            self.kind == self.Kind.COMPUTED
            and self.is_finished
            and (self.status != self.Status.SUCCEEDED or self.done < self.total)
        )


class RunShard(models.Model):
    """Whole documents of a metric run that one worker scores at a time. Any number of
    workers share a run by claiming its shards (a conditional PENDING → RUNNING update);
    a shard whose worker stops writing is taken back after the run's lease."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField()
    doc_keys = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    worker = models.CharField(max_length=200, blank=True, help_text="Who holds or finished it.")
    attempts = models.PositiveIntegerField(default=0)
    outputs = models.PositiveIntegerField(default=0, help_text="Outputs scored by its attempts.")
    tokens = models.PositiveBigIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="shard_unique_index"),
        ]
        indexes = [models.Index(fields=["run", "status"], name="shard_run_status")]

    def __str__(self) -> str:
        return f"shard {self.index} of run {self.run_id} ({self.status})"


class MetricScore(models.Model):
    """A metric's score of one output in one run; a failure stores ``error``, never 0."""

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="scores")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="metric_scores")
    value = models.FloatField(null=True, blank=True)
    details = models.JSONField(
        default=dict, blank=True, help_text="e.g. sum, token count, truncation."
    )
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "output"], name="score_unique_per_run"),
            models.CheckConstraint(
                condition=Q(value__isnull=False) | ~Q(error=""), name="score_value_or_error"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run.label} {self.output}={self.value}"


class AllowedModel(models.Model):
    """A hub model id an admin allows researchers to run (besides the installed ones)."""

    hub_id = models.CharField(
        max_length=200,
        unique=True,
        validators=[
            RegexValidator(r"^[\w.-]+/[\w.-]+$|^[\w.-]+$", "A hub id such as 'org/model-name'.")
        ],
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["hub_id"]

    def __str__(self) -> str:
        return self.hub_id
