"""Studies: create one on a dataset, manage its members (invite annotator or researcher
accounts, create annotator accounts, remove members), and read its overview and a
researcher's home.

Pages and the API call these; bad input raises :class:`StudyError` naming the field and
writes nothing. Who may do what is :mod:`studies.permissions`' access model: only a
dataset's owner (or an admin) puts it in a study or changes a study's members."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet

from studies import hooks
from studies.models import Aspect, Dataset, Judgment, MetricRun, Study, StudyMember
from studies.permissions import (
    ANNOTATOR,
    RESEARCHER,
    dataset_aspects,
    may_change_dataset,
    may_manage_members,
    research_studies,
)
from studies.services.tuning.splits import SplitSummary, split_summary
from studies.signals import member_removed

# Granted by an admin (to a researcher, or to the researcher group) in the Django admin;
# superusers have it implicitly. Without it a researcher only invites existing accounts.
CREATE_ANNOTATORS = "studies.create_annotator_accounts"


class StudyError(ValueError):
    """A study or member change that cannot be made as asked; nothing was written.
    ``forbidden`` marks a change the user may not make at all (pages and API answer 403)."""

    def __init__(self, field: str, message: str, *, forbidden: bool = False) -> None:
        super().__init__(message)
        self.field = field
        self.forbidden = forbidden


CREATE_REFUSED = "You may not create accounts: ask an admin."
MANAGE_MEMBERS = "Only the dataset's owner (or an admin) can change this study's members: ask them."


def _require_manager(study: Study, by: Any) -> None:
    if by is not None and not may_manage_members(by, study):
        raise StudyError("username", MANAGE_MEMBERS, forbidden=True)


def task_aspects(dataset: Dataset) -> QuerySet[Aspect]:
    """Aspects a study of ``dataset`` may use: the shared ones and its owner's, of the
    dataset's task or already judged in it (a ``custom`` task lists no aspects, but its
    upload's judgments name some)."""
    judged = Judgment.objects.filter(output__document__dataset=dataset).values("aspect_id")
    return (
        dataset_aspects(dataset)
        .filter(Q(tasks=dataset.task_id) | Q(pk__in=judged))
        .distinct()
        .order_by("code")
    )


def campaign_aspects(study: Study) -> QuerySet[Aspect]:
    """Aspects a campaign of ``study`` may use: the study's own (when it names some),
    otherwise those of its dataset's task."""
    if study.aspects.exists():
        return study.aspects.order_by("code")
    return task_aspects(study.dataset)


def campaign_aspects_of(studies: QuerySet[Study]) -> QuerySet[Aspect]:
    """Every aspect a campaign of one of ``studies`` may use (the union of
    :func:`campaign_aspects`)."""
    ids: set[int] = set()
    for study in studies.select_related("dataset"):
        ids.update(campaign_aspects(study).values_list("pk", flat=True))
    return Aspect.objects.filter(pk__in=ids).order_by("code")


@transaction.atomic
def create_study(
    dataset: Dataset, name: str, owner: Any, aspects: Sequence[Aspect] = (), description: str = ""
) -> Study:
    """A study of ``dataset`` owned by ``owner``; its aspects must be of the dataset's task.
    Only the dataset's owner (or an admin) may put it in a study."""
    if not may_change_dataset(owner, dataset):
        raise StudyError(
            "dataset",
            "Only the dataset's owner (or an admin) can put it in a study: ask them.",
            forbidden=True,
        )
    if not name.strip():
        raise StudyError("name", "Give the study a name.")
    allowed = set(task_aspects(dataset).values_list("pk", flat=True))
    wrong = sorted(a.code for a in aspects if a.pk not in allowed)
    if wrong:
        raise StudyError(
            "aspects",
            f"Not aspects of the task {dataset.task.name}: {', '.join(wrong)}.",
        )
    study = Study.objects.create(
        name=name.strip(), dataset=dataset, owner=owner, description=description
    )
    study.aspects.set(aspects)
    return study


def _has_group(user: Any, name: str) -> bool:
    return bool(user.groups.filter(name=name).exists())


@transaction.atomic
def add_member(study: Study, username: str, role: str, by: Any = None) -> StudyMember:
    """Invite an existing account: annotators as annotators, researchers as either. ``by``
    (the user asking; ``None`` for commands) must manage the study's members."""
    _require_manager(study, by)
    if role not in StudyMember.Role.values:
        raise StudyError("role", f"Unknown role {role!r}: use annotator or researcher.")
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise StudyError("username", f"No account is called {username.strip()!r}.")
    if user.pk in (study.owner_id, study.dataset.owner_id):
        raise StudyError("username", f"{user.get_username()} owns the study already.")
    if role == StudyMember.Role.RESEARCHER and not (
        user.is_superuser or _has_group(user, RESEARCHER)
    ):
        raise StudyError("role", f"{user.get_username()} is not a researcher account.")
    if role == StudyMember.Role.ANNOTATOR and not _has_group(user, ANNOTATOR):
        raise StudyError("username", f"{user.get_username()} is not an annotator account.")
    member, _ = StudyMember.objects.update_or_create(
        study=study, user=user, defaults={"role": role}
    )
    return member


@transaction.atomic
def remove_member(study: Study, user_id: int, by: Any = None) -> StudyMember:
    """Remove a member from ``study``: from then on every page, API route, export and
    annotation queue that the membership opened answers them 404. Their judgments stay
    (they are the study's data); apps drop what the membership gave (the annotation app
    its invitations and open leases) through :data:`studies.signals.member_removed`."""
    _require_manager(study, by)
    member = study.memberships.select_related("user").filter(user_id=user_id).first()
    if member is None:
        raise StudyError("user", f"No member {user_id} in the study {study.name}.")
    member.delete()
    member_removed.send(sender=StudyMember, study=study, user=member.user, role=member.role)
    return member


def may_create_annotators(user: Any) -> bool:
    return bool(user.is_authenticated and user.has_perm(CREATE_ANNOTATORS))


@transaction.atomic
def create_annotator(study: Study, username: str, password: str, by: Any) -> StudyMember:
    """A new annotator account, member of ``study``; only for users with the
    ``create_annotator_accounts`` permission."""
    _require_manager(study, by)
    if not may_create_annotators(by):
        raise StudyError("username", CREATE_REFUSED, forbidden=True)
    username = username.strip()
    users = get_user_model().objects
    try:
        users.model(username=username).clean_fields(exclude=["password"])
    except ValidationError as exc:
        raise StudyError(
            "username", " ".join(exc.message_dict.get("username", ["Invalid."]))
        ) from None
    if users.filter(username__iexact=username).exists():
        raise StudyError("username", f"An account called {username!r} exists: invite it.")
    candidate = users.model(username=username)
    try:
        validate_password(password, candidate)
    except ValidationError as exc:
        raise StudyError("password", " ".join(exc.messages)) from None
    user = users.create_user(username=username, password=password)
    user.groups.add(Group.objects.get_or_create(name=ANNOTATOR)[0])
    return StudyMember.objects.create(study=study, user=user, role=StudyMember.Role.ANNOTATOR)


def study_annotators(study: Study) -> QuerySet[Any]:
    """The study's annotator members, by username."""
    return (
        get_user_model()
        .objects.filter(
            study_memberships__study=study, study_memberships__role=StudyMember.Role.ANNOTATOR
        )
        .order_by("username")
    )


@dataclass(frozen=True)
class Overview:
    study: Study
    members: list[StudyMember]
    campaigns: list[Any]
    runs: list[MetricRun]
    aspects: list[Aspect]
    split: SplitSummary | None = None


def overview(study: Study) -> Overview:
    """What the study page shows: members, campaigns with item counts (of
    :data:`studies.hooks.study_campaigns`, newest first), the dataset's runs."""
    runs = MetricRun.objects.filter(dataset_id=study.dataset_id).order_by("-created_at")
    return Overview(
        study=study,
        members=list(  # the owner is named apart, even where also a member
            study.memberships.exclude(user_id=study.owner_id)
            .select_related("user")
            .order_by("role", "user__username")
        ),
        campaigns=hooks.campaigns(study),
        runs=list(runs[:50]),
        aspects=list(campaign_aspects(study)),
        split=split_summary(study),
    )


def owned_studies(user: Any) -> QuerySet[Study]:
    """Studies the user sees as a researcher (:func:`research_studies`), newest first."""
    return research_studies(user).select_related("dataset", "owner").order_by("-created_at")
