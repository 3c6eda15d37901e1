"""What the learned app registers with ``studies`` (which never imports it): its trained
metrics as :data:`studies.hooks.trained_splits`, so the dashboards can keep to a learned
metric's test documents, and its jobs in training as :data:`studies.hooks.job_sources`,
for the jobs page. Added by :func:`register` from ``LearnedConfig.ready()``."""

from __future__ import annotations

from django.urls import reverse

from learned.models import TrainedMetric
from learned.services.jobs import queue_of
from studies import hooks
from studies.models import Dataset


def finished_metrics(dataset: Dataset) -> list[TrainedMetric]:
    """The dataset's finished learned metrics (for the page's test-documents filter)."""
    return list(
        TrainedMetric.objects.filter(dataset=dataset, status=TrainedMetric.Status.SUCCEEDED)
        .select_related("aspect")
        .only("pk", "label", "split", "aspect__code")
    )


def test_documents(dataset: Dataset, metric_id: int) -> list[str] | None:
    """The keys of ``dataset``'s documents in the test split of learned metric
    ``metric_id`` (None: no such metric)."""
    trained = TrainedMetric.objects.filter(pk=metric_id).first()
    if trained is None:
        return None
    documents: list[str] = trained.split.get(dataset.name, {}).get("test", [])
    return documents


TRAINED_SPLIT = hooks.TrainedSplit(choices=finished_metrics, documents=test_documents)


def training_jobs() -> list[hooks.Job]:
    """Learned metrics queued or in training, for the jobs page."""
    active = (TrainedMetric.Status.PENDING, TrainedMetric.Status.RUNNING)
    found = []
    for job in TrainedMetric.objects.filter(status__in=active).select_related("created_by"):
        running = job.status == TrainedMetric.Status.RUNNING
        progress = job.progress or {}
        found.append(
            hooks.Job(
                kind="training",
                title=f"training {job.label} ({progress.get('phase') or 'queued'})",
                url=reverse("learned:detail", args=[job.pk]),
                queue=queue_of(job),
                running=running,
                user=job.created_by.username if job.created_by else "",
                dataset_id=job.dataset_id,
                queued_at=job.created_at,
                started_at=job.started_at,
                done=progress.get("done") if running else None,
                total=progress.get("total") if running else None,
            )
        )
    return found


def register() -> None:
    """Fill the hooks of :mod:`studies.hooks` this app provides (again: no change)."""
    hooks.trained_splits.register(TRAINED_SPLIT)
    hooks.job_sources.register(training_jobs)
