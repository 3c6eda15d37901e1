"""Pairwise judgments as preference pairs (the better and the worse output of a pair),
the training data of a learned metric, and the raw answers (ties included) they come from.
An answer changed while the campaign was open is read as it is now. The campaign's
export carries the annotator's comment on the item with each pair."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import Assignment, Campaign, PairwiseJudgment
from studies.models import Aspect, Dataset


@dataclass(frozen=True)
class PairwiseAnswer:
    """One annotator's answer on a pair of outputs: ``choice`` is ``a``, ``b`` or ``tie``."""

    aspect: str  # the aspect's code
    doc_key: str
    output_a_id: int
    output_b_id: int
    choice: str
    annotator_id: int
    left_output_id: int  # which one was shown on the left
    comment: str = ""  # the annotator's comment on the item (read when asked for)

    @property
    def is_tie(self) -> bool:
        return self.choice == PairwiseJudgment.Choice.TIE


@dataclass(frozen=True)
class PreferencePair:
    """One annotator preferred ``good_output_id`` over ``bad_output_id`` on ``aspect``."""

    aspect: str  # the aspect's code
    doc_key: str
    good_output_id: int
    bad_output_id: int
    annotator_id: int
    left_output_id: int
    comment: str = ""

    @classmethod
    def of(cls, answer: PairwiseAnswer) -> PreferencePair:
        a, b = answer.output_a_id, answer.output_b_id
        good, bad = (a, b) if answer.choice == PairwiseJudgment.Choice.A else (b, a)
        return cls(
            answer.aspect,
            answer.doc_key,
            good,
            bad,
            answer.annotator_id,
            answer.left_output_id,
            answer.comment,
        )


def pairwise_answers(
    *,
    campaign: Campaign | None = None,
    dataset: Dataset | None = None,
    aspect: Aspect | None = None,
    exclude_annotators: Collection[int] = (),
    comments: bool = False,
) -> Iterator[PairwiseAnswer]:
    """Every pairwise answer (ties included) of a campaign, or of every campaign on a
    dataset, optionally on one aspect; in campaign, item, aspect and annotator order;
    with the annotator's comment on the item when ``comments``."""
    if campaign is None and dataset is None:
        raise ValueError("pairwise_answers needs a campaign or a dataset")
    rows = PairwiseJudgment.objects.all()
    if campaign is not None:
        rows = rows.filter(item__campaign=campaign)
    if dataset is not None:
        rows = rows.filter(item__campaign__study__dataset=dataset)
    if aspect is not None:
        rows = rows.filter(aspect=aspect)
    columns = [
        "aspect__code",
        "item__document__doc_key",
        "item__output_a_id",
        "item__output_b_id",
        "choice",
        "annotator_id",
        "left_output_id",
    ]
    if comments:
        given = Assignment.objects.filter(
            item_id=OuterRef("item_id"), annotator_id=OuterRef("annotator_id")
        ).values("comment")[:1]
        rows = rows.annotate(comment=Coalesce(Subquery(given), Value("")))
        columns.append("comment")
    ordered = (
        rows.exclude(annotator_id__in=list(exclude_annotators))
        .order_by("item__campaign_id", "item__position", "aspect__code", "annotator_id")
        .values_list(*columns)
    )
    for row in ordered:
        yield PairwiseAnswer(*row)


def preference_pairs(
    campaign: Campaign, *, exclude_annotators: Collection[int] = (), comments: bool = False
) -> Iterator[PreferencePair]:
    """Every non-tie pairwise answer of the campaign as a preference pair (with the
    annotator's comment on the item when ``comments``)."""
    answers = pairwise_answers(
        campaign=campaign, exclude_annotators=exclude_annotators, comments=comments
    )
    for answer in answers:
        if not answer.is_tie:
            yield PreferencePair.of(answer)
