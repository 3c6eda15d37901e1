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
from studies import hooks
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


def _pairwise_campaign(dataset: Dataset, campaign: int) -> Campaign | None:
    return Campaign.objects.filter(
        pk=campaign, study__dataset=dataset, mode=Campaign.Mode.PAIRWISE
    ).first()


def pairwise_campaign_choices(dataset: Dataset) -> list[tuple[int, str]]:
    """The pairwise campaigns of the dataset's studies, oldest first: (id, label)."""
    rows = (
        Campaign.objects.filter(study__dataset=dataset, mode=Campaign.Mode.PAIRWISE)
        .order_by("created_at", "pk")
        .values_list("pk", "name", "study__name")
    )
    return [(pk, f"{name} ({study}, #{pk})") for pk, name, study in rows]


def campaign_pairs(dataset: Dataset, campaign: int) -> list[tuple[str, int, int]] | None:
    """The campaign's pairs of outputs in item order, (doc_key, output a, output b); None
    when it is no pairwise campaign on ``dataset``."""
    found = _pairwise_campaign(dataset, campaign)
    if found is None:
        return None
    rows = (
        found.items.exclude(output_b__isnull=True)
        .order_by("position")
        .values_list("document__doc_key", "output_a_id", "output_b_id")
    )
    return [(doc, a, b) for doc, a, b in rows]


VOTES = {
    PairwiseJudgment.Choice.A: 1,
    PairwiseJudgment.Choice.TIE: 0,
    PairwiseJudgment.Choice.B: -1,
}


def campaign_preferences(
    dataset: Dataset, campaign: int, aspect: str
) -> list[hooks.HumanPreference] | None:
    """The campaign's answers on the aspect of code ``aspect`` as preferences in each
    item's (output a, output b) frame; None when it is no pairwise campaign on
    ``dataset``."""
    found = _pairwise_campaign(dataset, campaign)
    if found is None:
        return None
    chosen = found.aspects.filter(code=aspect).first()
    if chosen is None:
        return []
    return [
        hooks.HumanPreference(
            a.doc_key, a.output_a_id, a.output_b_id, f"user:{a.annotator_id}", VOTES[a.choice]
        )
        for a in pairwise_answers(campaign=found, aspect=chosen)
    ]


PAIRWISE_CAMPAIGNS = hooks.PairwiseCampaigns(
    choices=pairwise_campaign_choices, pairs=campaign_pairs, preferences=campaign_preferences
)
