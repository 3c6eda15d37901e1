"""Pairwise judgments as preference pairs (the better and the worse output of a pair),
the training data of a learned metric."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from studies.annotation.models import Campaign, PairwiseJudgment


@dataclass(frozen=True)
class PreferencePair:
    """One annotator preferred ``good_output_id`` over ``bad_output_id`` on ``aspect``."""

    aspect: str  # the aspect's code
    doc_key: str
    good_output_id: int
    bad_output_id: int
    annotator_id: int
    left_output_id: int  # which one was shown on the left


def preference_pairs(
    campaign: Campaign, *, exclude_annotators: Collection[int] = ()
) -> Iterator[PreferencePair]:
    """Every non-tie pairwise judgment of the campaign, in item and aspect order."""
    rows = (
        PairwiseJudgment.objects.filter(item__campaign=campaign)
        .exclude(choice=PairwiseJudgment.Choice.TIE)
        .exclude(annotator_id__in=list(exclude_annotators))
        .order_by("item__position", "aspect__code", "annotator_id")
        .values_list("aspect__code", "item__document__doc_key", "item__output_a_id",
                     "item__output_b_id", "choice", "annotator_id", "left_output_id")
    )  # fmt: skip
    for aspect, doc_key, a, b, choice, user, left in rows:
        good, bad = (a, b) if choice == PairwiseJudgment.Choice.A else (b, a)
        yield PreferencePair(aspect, doc_key, good, bad, user, left)
