"""Create a campaign and its items; who may see which campaign."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import QuerySet

from annotation.models import Campaign, CampaignAnnotator, Item
from studies.models import Aspect, MetricRun, Output, Study, StudyMember
from studies.permissions import ANNOTATOR, annotating_studies, may_manage_members, research_studies


class CampaignError(ValueError):
    """A campaign that cannot be created as asked; nothing was written."""


@dataclass(frozen=True)
class CampaignSpec:
    """What a researcher asks for (the form's cleaned data)."""

    name: str
    mode: str = Campaign.Mode.LIKERT
    aspects: Sequence[Aspect] = ()
    overlap: int = 3
    selection: str = Campaign.Selection.ALL
    systems: Sequence[str] = ()
    sample_size: int | None = None
    seed: int = 0
    show_references: bool = False
    annotators: Sequence[Any] = ()
    lease_seconds: int = 300
    gold_threshold: float = 0.7
    routing: str = Campaign.Routing.RANDOM
    question_run_a: MetricRun | None = None  # informative routing's question: A vs B on an aspect
    question_run_b: MetricRun | None = None
    question_aspect: Aspect | None = None


def study_systems(study: Study) -> list[str]:
    outputs = Output.objects.filter(document__dataset_id=study.dataset_id)
    return sorted(outputs.values_list("system_id", flat=True).distinct())


def _units(study: Study, spec: CampaignSpec) -> list[tuple[int, int, int | None, str]]:
    """(document, output A, output B or None, system key) for every candidate item."""
    outputs = Output.objects.filter(document__dataset_id=study.dataset_id)
    if spec.selection == Campaign.Selection.SYSTEMS:
        outputs = outputs.filter(system_id__in=list(spec.systems))
    rows = list(outputs.order_by("document_id", "pk").values_list("document_id", "pk", "system_id"))
    if spec.mode == Campaign.Mode.LIKERT:
        return [(doc, pk, None, system) for doc, pk, system in rows]
    units = []
    for doc, group in itertools.groupby(rows, key=lambda row: row[0]):
        for (_, a, sys_a), (_, b, sys_b) in itertools.combinations(list(group), 2):
            units.append((doc, a, b, " vs ".join(sorted([sys_a, sys_b]))))
    return units


def pairwise_label_problem(mode: str, aspects: Iterable[Aspect]) -> str | None:
    """Why a pairwise campaign cannot ask about these aspects (None: it can). A pairwise
    answer says which of two outputs is better; a label aspect (binary, categorical)
    has no “better” label to compare by (its labels are asked one output at a time), and
    nothing downstream (the preference pairs, MACE, the pairwise judge) reads a
    pairwise label answer."""
    if mode != Campaign.Mode.PAIRWISE:
        return None
    labelled = sorted(f"{a.name} ({a.kind})" for a in aspects if a.is_labelled)
    if not labelled:
        return None
    return (
        f"A pairwise campaign compares two outputs on a scale; {', '.join(labelled)} "
        f"{'is a label aspect' if len(labelled) == 1 else 'are label aspects'}: ask "
        "for its labels one output at a time (a Likert campaign), or leave it out."
    )


def _check(study: Study, spec: CampaignSpec, created_by: Any = None) -> None:
    if spec.mode not in Campaign.Mode.values or spec.selection not in Campaign.Selection.values:
        raise CampaignError("Unknown judgment mode or selection.")
    if not spec.aspects:
        raise CampaignError("Choose at least one aspect.")
    problem = pairwise_label_problem(spec.mode, spec.aspects)
    if problem:
        raise CampaignError(problem)
    allowed = set(study.aspects.values_list("pk", flat=True))
    if allowed and any(a.pk not in allowed for a in spec.aspects):
        raise CampaignError("Every aspect must be one of the study's aspects.")
    if spec.overlap < 1:
        raise CampaignError("Overlap must be at least 1.")
    if spec.selection == Campaign.Selection.SYSTEMS:
        unknown = set(spec.systems) - set(study_systems(study))
        if not spec.systems or unknown:
            raise CampaignError(f"Choose systems of the dataset (unknown: {sorted(unknown)}).")
    if spec.selection == Campaign.Selection.RANDOM and not spec.sample_size:
        raise CampaignError("A random subset needs a size.")
    _check_question(study, spec)
    group = Group.objects.filter(name=ANNOTATOR).first()
    for user in spec.annotators:
        if group is None or not user.groups.filter(pk=group.pk).exists():
            raise CampaignError(f"{user.get_username()} is not an annotator account.")
    if created_by is not None and not may_manage_members(created_by, study):
        members = set(
            study.memberships.filter(role=StudyMember.Role.ANNOTATOR).values_list(
                "user_id", flat=True
            )
        )
        outside = sorted(u.get_username() for u in spec.annotators if u.pk not in members)
        if outside:
            raise CampaignError(
                f"Not annotators of the study {study.name}: {', '.join(outside)}. Only the "
                "dataset's owner (or an admin) can invite new members: ask them."
            )


def _check_question(study: Study, spec: CampaignSpec) -> None:
    """Informative routing needs its question: two finished runs of the study's dataset
    and one of the campaign's aspects."""
    if spec.routing not in Campaign.Routing.values:
        raise CampaignError(f"Unknown routing {spec.routing!r}: use random or informative.")
    if spec.routing != Campaign.Routing.INFORMATIVE:
        return
    a, b, aspect = spec.question_run_a, spec.question_run_b, spec.question_aspect
    if a is None or b is None or aspect is None:
        raise CampaignError(
            "Informative-first routing needs its question: run A, run B and an aspect."
        )
    if a.pk == b.pk:
        raise CampaignError("The question's runs A and B must be two different runs.")
    for side, run in (("A", a), ("B", b)):
        if run.dataset_id != study.dataset_id or run.status != MetricRun.Status.SUCCEEDED:
            raise CampaignError(
                f"Run {side} ({run.label}) must be a finished run of the study's dataset."
            )
    if aspect.pk not in {x.pk for x in spec.aspects}:
        raise CampaignError(
            f"The question's aspect ({aspect.name}) must be one of the campaign's aspects."
        )


def _question(spec: CampaignSpec) -> dict[str, Any]:
    """The question's fields to store: only informative routing has one."""
    informative = spec.routing == Campaign.Routing.INFORMATIVE
    return {
        name: getattr(spec, name) if informative else None
        for name in ("question_run_a", "question_run_b", "question_aspect")
    }


@transaction.atomic
def create_campaign(study: Study, spec: CampaignSpec, created_by: Any) -> Campaign:
    """Validate ``spec``, then write the campaign, its items in seeded random order and
    its invitations in one transaction (bad input writes nothing)."""
    _check(study, spec, created_by)
    units = _units(study, spec)
    rng = random.Random(spec.seed)
    if spec.selection == Campaign.Selection.RANDOM:
        units = rng.sample(units, min(spec.sample_size or 0, len(units)))
    if not units:
        raise CampaignError("The selection contains no items.")
    rng.shuffle(units)
    campaign = Campaign.objects.create(
        study=study,
        name=spec.name,
        mode=spec.mode,
        overlap=spec.overlap,
        selection=spec.selection,
        systems=list(spec.systems),
        sample_size=spec.sample_size,
        seed=spec.seed,
        show_references=spec.show_references,
        lease_seconds=spec.lease_seconds,
        gold_threshold=spec.gold_threshold,
        created_by=created_by,
        routing=spec.routing,
        **_question(spec),
    )
    campaign.aspects.set(spec.aspects)
    Item.objects.bulk_create(
        Item(
            campaign=campaign,
            document_id=doc,
            output_a_id=a,
            output_b_id=b,
            system_key=system,
            position=k,
        )
        for k, (doc, a, b, system) in enumerate(units)
    )
    invite(campaign, spec.annotators)
    return campaign


def invite(campaign: Campaign, users: Iterable[Any]) -> None:
    """Invite accounts to the campaign (and to its study as annotators)."""
    for user in users:
        CampaignAnnotator.objects.get_or_create(campaign=campaign, user=user)
        StudyMember.objects.get_or_create(
            study=campaign.study, user=user, defaults={"role": StudyMember.Role.ANNOTATOR}
        )


def researcher_campaigns(user: Any) -> QuerySet[Campaign]:
    """Campaigns of the studies the user sees as a researcher (the access model's
    :func:`~studies.permissions.research_studies`)."""
    campaigns = Campaign.objects.select_related("study", "study__dataset")
    return campaigns.filter(study__in=research_studies(user))


def annotator_campaigns(user: Any) -> QuerySet[Campaign]:
    """Campaigns the user was invited to annotate, while they are an annotator member of
    the campaign's study (removing the member closes them at once)."""
    return Campaign.objects.filter(invitations__user=user, study__in=annotating_studies(user))
