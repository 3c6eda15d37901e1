"""A training job and, once it succeeds, the trained metric it produced (one row: the
frozen configuration, the split, the progress, the curves, the checkpoint and the test
results)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studies.models import Aspect, Dataset, MetricRun


class TrainedMetric(models.Model):
    """A learned metric: trained on preference pairs from human judgments.

    ``config`` is frozen when the job is created: setup, tasks (dataset × aspect, with
    the instruction each used), backbone (location, fingerprint, pooling), mode, head,
    hyperparameters, seed, margin, split ratios and library versions. ``split`` holds the
    document keys of each split per dataset, so the evaluation can be reproduced and the
    dashboards can leave training documents out.
    """

    Status = MetricRun.Status  # a training job goes through a metric run's states

    class Setup(models.TextChoices):
        SINGLE = "single", "Single-task"
        MULTI = "multi", "Multi-task"
        CROSS = "cross", "Cross-task"
        CUSTOM = "custom", "Researcher-chosen"

    class Mode(models.TextChoices):
        HEAD = "head", "Head on frozen features"
        FULL = "full", "Full fine-tuning"

    label = models.CharField(max_length=200)
    dataset = models.ForeignKey(
        Dataset,
        on_delete=models.CASCADE,
        related_name="trained_metrics",
        help_text="The target dataset: its test documents give the reported numbers.",
    )
    aspect = models.ForeignKey(
        Aspect,
        on_delete=models.PROTECT,
        related_name="trained_metrics",
        help_text="The target aspect.",
    )
    setup = models.CharField(max_length=8, choices=Setup.choices, default=Setup.SINGLE)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.HEAD)
    config = models.JSONField(default=dict, help_text="Frozen configuration.")
    split = models.JSONField(
        default=dict, help_text="{dataset: {train|validation|test: [doc keys]}}"
    )
    pairs = models.JSONField(
        default=dict, help_text="Pair counts per split and why pairs were dropped."
    )
    # a metric run's states but one: a training job never waits for batch answers
    status = models.CharField(
        max_length=16,
        choices=[c for c in Status.choices if c[0] != MetricRun.Status.WAITING],
        default=Status.PENDING,
    )
    progress = models.JSONField(default=dict, blank=True)
    curves = models.JSONField(
        default=list, blank=True, help_text="Per epoch: loss, validation accuracy."
    )
    results = models.JSONField(default=dict, blank=True, help_text="Test numbers, Base vs trained.")
    checkpoint = models.CharField(
        max_length=500, blank=True, help_text="Path under the data directory."
    )
    checkpoint_sha256 = models.CharField(max_length=64, blank=True)
    version = models.PositiveIntegerField(default=0, help_text="Checkpoint version (one per save).")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.label} ({self.pk})"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED}

    def test_docs(self, dataset_name: str | None = None) -> list[str]:
        """The test documents of the target dataset (or of ``dataset_name``)."""
        part = (self.split or {}).get(dataset_name or self.config.get("target_dataset", ""), {})
        return list(part.get("test", []))
