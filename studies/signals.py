"""Keep ``Dataset.data_version`` honest for single-row edits (admin, annotation pages),
and the hooks other apps register on (``studies`` never imports them).

Bulk writes (imports, metric runs) skip signals and bump the version themselves.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

from studies.models import Dataset, Document, Judgment, MetricScore, Output

# Sent after a member left a study (``study``, ``user``, ``role``), in the same
# transaction: an app drops what the membership gave them (e.g. annotation invitations).
member_removed = Signal()


def _bump(dataset_id: int | None) -> None:
    if dataset_id is not None:
        Dataset(pk=dataset_id).bump_data_version()


@receiver([post_save, post_delete], sender=Judgment)
@receiver([post_save, post_delete], sender=MetricScore)
def _score_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    outputs = Output.objects.filter(pk=instance.output_id)
    _bump(outputs.values_list("document__dataset_id", flat=True).first())


@receiver([post_save, post_delete], sender=Output)
def _output_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    documents = Document.objects.filter(pk=instance.document_id)
    _bump(documents.values_list("dataset_id", flat=True).first())
