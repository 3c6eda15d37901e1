"""A campaign's answers read as rows, shared by agreement (:mod:`.agreement`), competence
(:mod:`.competence`) and position bias (:mod:`.position`), and the cache key of anything
computed from them (it changes with every stored answer).

Likert answers are ``studies.Judgment`` rows of the campaign's outputs, aspects and
annotators; pairwise answers are :class:`PairwiseJudgment` rows, coded by
:data:`CHOICE_CODES`.
"""

from __future__ import annotations

import hashlib

from annotation.models import Campaign, PairwiseJudgment
from studies.models import Dataset, Judgment

CHOICE_CODES = {"a": 1.0, "tie": 0.0, "b": -1.0}  # ordered, so ρ reads "prefers A"


def answers(campaign: Campaign) -> list[tuple[int, int, int, float]]:
    """(aspect, item, annotator, value) of every answer given in the campaign."""
    if campaign.is_pairwise:
        rows = PairwiseJudgment.objects.filter(item__campaign=campaign).values_list(
            "aspect_id", "item_id", "annotator_id", "choice"
        )
        return [(a, i, u, CHOICE_CODES[c]) for a, i, u, c in rows]
    items = dict(campaign.items.values_list("output_a_id", "pk"))
    rows = Judgment.objects.filter(
        output_id__in=list(items),
        aspect__in=campaign.aspects.all(),
        annotator__in=campaign.annotators.all(),
    ).values_list("aspect_id", "output_id", "annotator_id", "value")
    return [(a, items[o], u, v) for a, o, u, v in rows]


def n_answers(campaign: Campaign) -> int:
    if campaign.is_pairwise:
        return PairwiseJudgment.objects.filter(item__campaign=campaign).count()
    return Judgment.objects.filter(
        output_id__in=campaign.items.values("output_a_id"),
        annotator__in=campaign.annotators.all(),
    ).count()


def campaign_cache_key(kind: str, campaign: Campaign, *settings: object) -> str:
    """A cache key for something computed from a campaign's answers: it changes with the
    dataset's data version (any judgment added or changed) and with ``settings``."""
    version = Dataset.objects.filter(pk=campaign.study.dataset_id).values_list(
        "data_version", flat=True
    )[0]
    raw = ":".join(map(str, (campaign.pk, campaign.created_at.isoformat(), version, *settings)))
    return f"{kind}:" + hashlib.sha256(raw.encode()).hexdigest()[:32]
