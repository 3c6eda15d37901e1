"""What the researcher sees of a campaign: progress per annotator and per aspect, time
per item, skipped items with their reasons, the annotators' comments, gold agreement."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from annotation.models import Assignment, Campaign, PairwiseJudgment
from annotation.services.gold import GoldScore, gold_scores
from studies.models import Aspect, Judgment


@dataclass
class AnnotatorRow:
    username: str
    user_id: int
    done: int = 0
    skipped: int = 0
    leased: int = 0
    seconds: list[float] = field(default_factory=list)
    gold: GoldScore | None = None

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


def annotator_rows(campaign: Campaign) -> list[AnnotatorRow]:
    """One row per invited annotator: done, skipped, live leases, seconds per item, gold."""
    rows = {
        user.pk: AnnotatorRow(user.get_username(), user.pk)
        for user in campaign.annotators.order_by("username")
    }
    assignments = Assignment.objects.filter(item__campaign=campaign).values_list(
        "annotator_id", "status", "seconds", "expires_at"
    )
    now = timezone.now()
    for user, status, seconds, expires in assignments:
        row = rows.get(user)
        if row is None:
            continue
        if status == Assignment.Status.DONE:
            row.done += 1
            if seconds is not None:
                row.seconds.append(seconds)
        elif status == Assignment.Status.SKIPPED:
            row.skipped += 1
        elif expires > now:
            row.leased += 1
    for user, score in gold_scores(campaign).items():
        if user in rows:
            rows[user].gold = score
    return list(rows.values())


def item_summary(campaign: Campaign) -> dict[str, int]:
    done = Count("assignments", filter=Q(assignments__status=Assignment.Status.DONE))
    counts = campaign.items.annotate(n=done).values_list("n", flat=True)
    tally = Counter(min(n, campaign.overlap) for n in counts)
    return {
        "items": sum(tally.values()),
        "complete": tally[campaign.overlap],
        "started": sum(v for k, v in tally.items() if 0 < k < campaign.overlap),
        "untouched": tally[0],
        "needed": sum(tally.values()) * campaign.overlap,
        "answered": sum(k * v for k, v in tally.items()),
    }


def aspect_rows(campaign: Campaign) -> list[dict[str, Any]]:
    if campaign.is_pairwise:
        counts = dict(
            PairwiseJudgment.objects.filter(item__campaign=campaign)
            .values_list("aspect_id")
            .annotate(n=Count("pk"))
            .values_list("aspect_id", "n")
        )
    else:
        counts = dict(
            Judgment.objects.filter(
                output_id__in=campaign.items.values("output_a_id"),
                annotator__in=campaign.annotators.all(),
            )
            .values_list("aspect_id")
            .annotate(n=Count("pk"))
            .values_list("aspect_id", "n")
        )
    return [
        {"aspect": aspect, "answers": counts.get(aspect.pk, 0)}
        for aspect in campaign.aspects.order_by("code")
    ]


def campaign_judgments(campaign_id: int) -> QuerySet[Judgment]:
    """The Likert judgments given in a campaign: by an annotator on an output that the
    campaign handed to them."""
    handed = Assignment.objects.filter(
        item__campaign_id=campaign_id,
        item__output_a_id=OuterRef("output_id"),
        annotator_id=OuterRef("annotator_id"),
    )
    return Judgment.objects.filter(annotator__isnull=False).filter(Exists(handed))


@dataclass
class OutdatedAnswers:
    """A campaign aspect's answers given under a definition that has since been edited."""

    aspect: Aspect
    current: int  # the aspect's version now
    by_version: list[tuple[int, int]]  # (older version, answers given under it)
    answers: list[Judgment]  # the first few, for the page's list

    @property
    def count(self) -> int:
        return sum(n for _, n in self.by_version)


def outdated_answers(campaign: Campaign, limit: int = 50) -> list[OutdatedAnswers]:
    """Per aspect of a Likert campaign, the answers recorded under an older version of
    its definition than the current one (answers without a recorded version, given
    before versions were recorded, are not counted)."""
    if campaign.is_pairwise:
        return []
    found = []
    judged = campaign_judgments(campaign.pk).filter(aspect_version__isnull=False)
    for aspect in campaign.aspects.order_by("code"):
        older = judged.filter(aspect=aspect, aspect_version__version__lt=aspect.version)
        by_version = list(
            older.order_by("aspect_version__version")
            .values_list("aspect_version__version")
            .annotate(n=Count("pk"))
            .values_list("aspect_version__version", "n")
        )
        if by_version:
            answers = list(
                older.select_related("output__document", "annotator", "aspect_version").order_by(
                    "aspect_version__version", "pk"
                )[:limit]
            )
            found.append(OutdatedAnswers(aspect, aspect.version, by_version, answers))
    return found


def skipped_items(campaign: Campaign, limit: int = 100) -> list[Assignment]:
    return list(
        Assignment.objects.filter(item__campaign=campaign, status=Assignment.Status.SKIPPED)
        .select_related("annotator", "item__document")
        .order_by("-submitted_at")[:limit]
    )


def commented_items(campaign: Campaign, limit: int = 200) -> list[Assignment]:
    """The items annotators left a comment on, newest answer first."""
    return list(
        Assignment.objects.filter(item__campaign=campaign)
        .exclude(comment="")
        .select_related("annotator", "item__document")
        .order_by("-submitted_at", "-pk")[:limit]
    )
