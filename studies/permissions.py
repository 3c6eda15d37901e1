"""The access model, in one place: who may read, run, export, share and manage what.

Every page, API view, form and service asks these functions; nothing else grants access.
Access is computed from ownership and membership at each request, so removing a member
revokes every path at once (pages, API, exports, the annotation queue).

==================  =====================================================================
role                may
==================  =====================================================================
admin               everything (superusers)
dataset owner       read, browse, run metrics on, export and delete the dataset; put it in
                    a study (share it); see every study that uses it and manage those
                    studies' members (invite, remove, create annotator accounts with the
                    permission)
collaborator        a researcher member of a study of the dataset: read, browse, run
                    metrics on and export the dataset; rename the runs they started (not
                    the owner's, nor another collaborator's); create campaigns in that
                    study with its annotators. Never shares it: no new study on it, no new
                    member
annotator member    annotate the items of the campaigns they are invited to, while they are
                    a member of the campaign's study; nothing else of the dataset
anyone else         nothing: the dataset, its studies and runs answer 404 (never 403, so no
                    name leaks)
==================  =====================================================================

Served endpoints are scoped as datasets are, by owner alone: a researcher sees and uses
the shared ones (an admin's, no owner) and their own; nobody else's, not even its name.
Only its owner (or an admin; for a shared one, an admin) changes or deletes it.

A study's ``owner`` is whoever created it (the dataset's owner, or an admin); what it
grants follows the dataset's owner, so a study made on someone else's dataset before this
rule (or by an admin) is still the dataset owner's to see and manage.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from studies.models import Aspect, Dataset, Endpoint, MetricRun, Study, StudyMember

RESEARCHER = "researcher"
ANNOTATOR = "annotator"


def is_researcher(user: Any) -> bool:
    return bool(
        user.is_authenticated
        and (user.is_superuser or user.groups.filter(name=RESEARCHER).exists())
    )


def _member_of(user: Any, column: str) -> QuerySet[StudyMember]:
    """``column`` of the studies ``user`` is a researcher member of (a subquery)."""
    return StudyMember.objects.filter(user=user, role=StudyMember.Role.RESEARCHER).values(column)


def visible_datasets(user: Any) -> QuerySet[Dataset]:
    """Datasets the user may read, run metrics on and export: their own, and those of the
    studies they are a researcher member of; all of them for admins."""
    if not user.is_authenticated:
        return Dataset.objects.none()
    if user.is_superuser:
        return Dataset.objects.all()
    return Dataset.objects.filter(Q(owner=user) | Q(pk__in=_member_of(user, "study__dataset_id")))


def shareable_datasets(user: Any) -> QuerySet[Dataset]:
    """Datasets the user may put in a study: their own; all of them for admins."""
    if not user.is_authenticated:
        return Dataset.objects.none()
    if user.is_superuser:
        return Dataset.objects.all()
    return Dataset.objects.filter(owner=user)


def may_change_dataset(user: Any, dataset: Dataset) -> bool:
    """Only a dataset's owner (or an admin) shares it (puts it in a study, manages those
    studies' members), uploads into it or deletes it; collaborators only read it."""
    return bool(user.is_superuser or (dataset.owner_id and dataset.owner_id == user.pk))


RENAME_REFUSED = (
    "Only the dataset's owner, the researcher who started the run, or an admin may rename it."
)


def may_rename_run(user: Any, run: MetricRun) -> bool:
    """A run's name is what its dataset owner's tables and exports show: its dataset's
    owner, the researcher who started it, or an admin renames it; other collaborators
    only read it."""
    if user.is_superuser:
        return True
    return user.pk is not None and user.pk in (run.dataset.owner_id, run.created_by_id)


def research_studies(user: Any) -> QuerySet[Study]:
    """Studies the user sees as a researcher: every study of their datasets, and those
    they are a researcher member of; all of them for admins."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    return Study.objects.filter(Q(dataset__owner=user) | Q(pk__in=_member_of(user, "study_id")))


def managed_studies(user: Any) -> QuerySet[Study]:
    """Studies whose members the user manages: those of their datasets; all for admins."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    return Study.objects.filter(dataset__owner=user)


def may_manage_members(user: Any, study: Study) -> bool:
    """Invite, remove and create members: the dataset's owner (or an admin)."""
    return may_change_dataset(user, study.dataset)


def annotating_studies(user: Any) -> QuerySet[Study]:
    """Studies the user is an annotator member of (their campaigns' invitations count
    only while this holds)."""
    return Study.objects.filter(
        memberships__user=user, memberships__role=StudyMember.Role.ANNOTATOR
    )


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


def visible_endpoints(user: Any) -> QuerySet[Endpoint]:
    """Endpoints the user may see and run on: the shared ones and their own; all for
    admins; none for annotators and anonymous users."""
    if not is_researcher(user):
        return Endpoint.objects.none()
    if user.is_superuser:
        return Endpoint.objects.all()
    return Endpoint.objects.filter(Q(owner__isnull=True) | Q(owner=user))


def may_change_endpoint(user: Any, endpoint: Endpoint) -> bool:
    """Its owner changes, probes and deletes it; an admin any (a shared one: admins only)."""
    return bool(user.is_superuser or (endpoint.owner_id and endpoint.owner_id == user.pk))
