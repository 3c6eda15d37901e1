"""What the learned app registers with ``studies`` (which never imports it): its trained
metrics as :data:`studies.hooks.trained_splits`, so the dashboards can keep to a learned
metric's test documents. Added by :func:`register` from ``LearnedConfig.ready()``."""

from __future__ import annotations

from learned.models import TrainedMetric
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


def register() -> None:
    """Fill the hooks of :mod:`studies.hooks` this app provides (again: no change)."""
    hooks.trained_splits.register(TRAINED_SPLIT)
