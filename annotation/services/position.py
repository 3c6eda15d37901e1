"""Position bias of a pairwise campaign (:mod:`scoring.stats.position`): per aspect, the
share of answers that chose the side shown on the left, for the campaign and for each
annotator, with an exact binomial test against one half (ties left out and counted),
and the flip rate on items answered in both orders.

The side comes from each answer's stored ``left_output`` (the output shown on the
left, drawn at random per annotator and item). An annotator sees an item once per
campaign, so an item is "seen in both orders" when two *different* annotators saw it
with opposite sides: a flip between them mixes position bias with their ordinary
disagreement, which the same-order disagreement rate shows beside it.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model

from annotation.models import Campaign, PairwiseJudgment
from annotation.services.answer_rows import CHOICE_CODES
from scoring.stats.position import FlipRate, SideShare, position_bias

ALPHA = 0.05  # a side share whose test gives p below this is marked


def position_report(campaign: Campaign) -> list[dict[str, Any]] | None:
    """One entry per aspect; None for a Likert campaign (it has no sides)."""
    if not campaign.is_pairwise:
        return None
    rows = list(
        PairwiseJudgment.objects.filter(item__campaign=campaign).values_list(
            "aspect_id", "item_id", "annotator_id", "choice", "left_output_id", "item__output_a_id"
        )
    )
    names = dict(
        get_user_model().objects.filter(pk__in={r[2] for r in rows}).values_list("pk", "username")
    )
    report = []
    for aspect in campaign.aspect_list():
        mine = [r for r in rows if r[0] == aspect.pk]
        result = position_bias(
            np.array([r[2] for r in mine], dtype=np.int64),
            np.array([r[1] for r in mine], dtype=np.int64),
            np.array([int(CHOICE_CODES[r[3]]) for r in mine], dtype=np.int64),
            np.array([r[4] == r[5] for r in mine], dtype=bool),
        )
        report.append(
            {
                "code": aspect.code,
                "name": aspect.name,
                "overall": _share(result.overall),
                "annotators": [
                    {"user": names[user], **_share(share)}
                    for user, share in sorted(
                        result.annotators.items(), key=lambda kv: names[kv[0]]
                    )
                ],
                "flips": _flips(result.flips),
            }
        )
    return report


def _share(share: SideShare) -> dict[str, Any]:
    values = {
        k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(share).items()
    }
    values["biased"] = values["p_value"] is not None and values["p_value"] < ALPHA
    return values


def _flips(flips: FlipRate) -> dict[str, Any]:
    return {
        **asdict(flips),
        "rate": _num(flips.rate),
        "same_order_rate": _num(flips.same_order_rate),
    }


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None
