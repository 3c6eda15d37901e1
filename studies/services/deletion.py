"""Deleting a dataset: refused while a metric run or an import still works on it."""

from __future__ import annotations

from django.db import transaction

from studies.models import Dataset, ImportJob, MetricRun
from studies.services.analysis import snapshot

ACTIVE_RUNS = (MetricRun.Status.PENDING, MetricRun.Status.RUNNING)
ACTIVE_IMPORTS = (ImportJob.Status.PENDING, ImportJob.Status.RUNNING)


class DeletionRefused(Exception):
    """The dataset cannot be deleted now; nothing was deleted."""


def delete_dataset(dataset: Dataset) -> None:
    """Delete the dataset with its documents, outputs, judgments and runs (and, once
    that commits, its columnar snapshots).

    The dataset row is locked first, so a run started meanwhile either commits before
    (and is seen here) or waits and then finds the dataset gone.
    """
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None:
            return
        active = MetricRun.objects.filter(dataset=locked, status__in=ACTIVE_RUNS).count()
        if active:
            raise DeletionRefused(
                f"{active} metric run(s) of this dataset are pending or running; cancel them first."
            )
        if ImportJob.objects.filter(dataset_name=locked.name, status__in=ACTIVE_IMPORTS).exists():
            raise DeletionRefused("An import into this dataset is still under way.")
        if locked.studies.exists():
            names = ", ".join(locked.studies.values_list("name", flat=True)[:5])
            raise DeletionRefused(f"The dataset is used by studies ({names}); delete them first.")
        pk = locked.pk
        locked.delete()
        transaction.on_commit(lambda: snapshot.remove_dataset(pk))
