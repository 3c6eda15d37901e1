"""Who may see and change what: admins everything, researchers their own datasets and
studies, annotators only their assigned work."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from studies.models import Aspect, Dataset, StudyMember

RESEARCHER = "researcher"
ANNOTATOR = "annotator"


def is_researcher(user: Any) -> bool:
    return bool(
        user.is_authenticated
        and (user.is_superuser or user.groups.filter(name=RESEARCHER).exists())
    )


def visible_datasets(user: Any) -> QuerySet[Dataset]:
    """Datasets the user owns or researches in a study of; all of them for admins."""
    if user.is_superuser:
        return Dataset.objects.all()
    return Dataset.objects.filter(
        Q(owner=user)
        | Q(studies__memberships__user=user, studies__memberships__role=StudyMember.Role.RESEARCHER)
        | Q(studies__owner=user)
    ).distinct()


def owned_aspects(*owners: Any) -> QuerySet[Aspect]:
    """The shared aspects and those of ``owners`` (users; ``None`` entries are skipped)."""
    ids = [getattr(o, "pk", o) for o in owners if o is not None]
    return Aspect.objects.filter(Q(owner__isnull=True) | Q(owner__in=ids))


def visible_aspects(user: Any) -> QuerySet[Aspect]:
    """Aspects a user's forms offer: the shared ones and their own; all of them for admins."""
    if user.is_superuser:
        return Aspect.objects.all()
    return owned_aspects(user)


def dataset_aspects(dataset: Dataset) -> QuerySet[Aspect]:
    """Aspects a run on the dataset may use: the shared ones and its owner's."""
    return owned_aspects(dataset.owner_id)


def may_delete_dataset(user: Any, dataset: Dataset) -> bool:
    """Only a dataset's owner (or an admin) deletes it; study members only read it."""
    return bool(user.is_superuser or (dataset.owner_id and dataset.owner_id == user.pk))
