"""Gold items: expected answers set by the researcher, each annotator's agreement with
them, and the annotators flagged for agreeing too little (dashboards can leave them out)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from annotation.models import Campaign, Item, PairwiseJudgment
from annotation.services.answers import InvalidAnswer
from studies.models import Dataset, Judgment

CHOICES = {"a", "b", "tie"}


@transaction.atomic
def set_gold(item: Item, expected: dict[int, Any], tolerance: float = 0.0) -> None:
    """Mark ``item`` as gold with an expected answer per aspect (a score for Likert,
    ``a``/``b``/``tie`` for pairwise) and a tolerance for scores."""
    campaign = item.campaign
    aspects = {a.pk: a for a in campaign.aspects.all()}
    problems = []
    if set(expected) != set(aspects):
        problems.append("give an expected answer for every aspect of the campaign")
    for pk, value in expected.items():
        aspect = aspects.get(pk)
        if aspect is None:
            continue
        if campaign.is_pairwise and value not in CHOICES:
            problems.append(f"{aspect.name}: expected a, b or tie")
        if not campaign.is_pairwise and not (
            isinstance(value, int | float) and aspect.scale_min <= value <= aspect.scale_max
        ):
            problems.append(
                f"{aspect.name}: expected a score from {aspect.scale_min:g} to {aspect.scale_max:g}"
            )
    if not 0 <= tolerance < float("inf"):
        problems.append("the tolerance must be a number ≥ 0")
    if problems:
        raise InvalidAnswer("; ".join(problems))
    item.gold_answer = {str(pk): value for pk, value in expected.items()}
    item.gold_tolerance = tolerance
    item.save(update_fields=["gold_answer", "gold_tolerance"])
    Dataset(pk=campaign.study.dataset_id).bump_data_version()  # flags may change


@transaction.atomic
def clear_gold(item: Item) -> None:
    item.gold_answer = None
    item.save(update_fields=["gold_answer"])
    Dataset(pk=item.campaign.study.dataset_id).bump_data_version()


@dataclass(frozen=True)
class GoldScore:
    """An annotator's answers on gold items: how many, how many matched, flagged or not."""

    annotator_id: int
    answers: int
    correct: int
    flagged: bool

    @property
    def accuracy(self) -> float:
        return self.correct / self.answers if self.answers else float("nan")


def gold_scores(campaign: Campaign) -> dict[int, GoldScore]:
    """Gold agreement of every annotator who answered a gold item, by user id. A Likert
    answer matches within the item's tolerance; a pairwise one matches exactly."""
    gold = {item.pk: item for item in campaign.items.filter(gold_answer__isnull=False)}
    tally: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    if campaign.is_pairwise:
        rows = PairwiseJudgment.objects.filter(item_id__in=list(gold)).values_list(
            "item_id", "aspect_id", "annotator_id", "choice"
        )
        for item_id, aspect, user, choice in rows:
            expected = gold[item_id].gold_answer.get(str(aspect))  # type: ignore[union-attr]
            if expected is not None:
                tally[user][0] += 1
                tally[user][1] += int(choice == expected)
    else:
        by_output = {item.output_a_id: item for item in gold.values()}
        rows = Judgment.objects.filter(
            output_id__in=list(by_output),
            annotator__in=campaign.annotators.all(),
        ).values_list("output_id", "aspect_id", "annotator_id", "value")
        for output, aspect, user, value in rows:
            item = by_output[output]
            expected = item.gold_answer.get(str(aspect))  # type: ignore[union-attr]
            if expected is not None:
                tally[user][0] += 1
                tally[user][1] += int(abs(value - expected) <= item.gold_tolerance + 1e-9)
    return {
        user: GoldScore(
            annotator_id=user,
            answers=n,
            correct=ok,
            flagged=n >= campaign.gold_min_answers and ok / n < campaign.gold_threshold,
        )
        for user, (n, ok) in tally.items()
    }


def flagged_annotator_ids(campaign: Campaign) -> set[int]:
    return {user for user, score in gold_scores(campaign).items() if score.flagged}


def flagged_for_dataset(dataset: Dataset) -> set[int]:
    """Annotators flagged in any campaign on the dataset (for the dashboards)."""
    campaigns = Campaign.objects.filter(
        study__dataset=dataset, items__gold_answer__isnull=False
    ).distinct()
    return set().union(*(flagged_annotator_ids(c) for c in campaigns))
