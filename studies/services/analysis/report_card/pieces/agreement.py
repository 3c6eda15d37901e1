"""Agreement on the annotators' ordinal scale: quadratic-weighted κ, Gwet's AC1 and
Krippendorff's α of the judge's scores put on that scale (how: ``binning``), with
intervals by document, beside the same among the annotators (computed once per
aspect). A label aspect's agreement is :mod:`.labels`'."""

from __future__ import annotations

from typing import Any

import numpy as np
from rest_framework import serializers

from scoring.stats import Groups, Resamples
from scoring.stats.judge_agreement import Estimate, pointwise_agreement
from scoring.stats.scales import MAX_POINTS, scale_points, to_scale
from studies.services.analysis.frames import AspectInfo
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import (
    CardEstimateSerializer,
    Column,
    Export,
    Piece,
    Row,
)
from studies.services.csvfile import number

CONTINUOUS = (
    f"the annotators' answers lie on no scale of 2 to {MAX_POINTS} evenly spaced points: "
    "agreement statistics for ordinal scales do not apply"
)
LABELS = "a label aspect: its agreement is in the label statistics (κ, MCC, F1)"
HUMAN_KEYS = ("human_kappa", "human_ac1", "human_alpha")


def _estimate(found: Estimate) -> dict[str, Any]:
    """An agreement statistic for the card; ``clipped``: its interval was cut to the
    statistic's range (see :func:`scoring.stats.judge_agreement.bounded`)."""
    return {
        "value": num(found.value),
        "low": num(found.low),
        "high": num(found.high),
        "clipped": found.clipped,
    }


def agreement(
    scores: np.ndarray,
    humans: np.ndarray,
    docs: Groups,
    aspect: AspectInfo,
    plan: Resamples | None,
    confidence: float,
    among: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], np.ndarray]:
    """Quadratic-weighted κ, Gwet's AC1 and Krippendorff's α of the judge's ``scores`` put
    on the annotators' scale (how: ``binning``), beside the same among the annotators
    (``among``: another row's of the same annotators, so their intervals are computed
    once per aspect); and the scores the alternative-annotator test compares (the
    judge's own where they lie within the scale's range, else the binned ones)."""
    points = scale_points(humans, aspect.scale_min, aspect.scale_max)
    if points is None or not np.isfinite(humans).any():
        return {"problem": CONTINUOUS, "scale": None}, scores
    on_scale = to_scale(scores, points, humans)
    found = pointwise_agreement(
        on_scale.values,
        humans,
        docs,
        points,
        plan=plan,
        confidence=confidence,
        annotator_intervals=among is None,
    )
    result = {
        "problem": None,
        "scale": [float(p) for p in points],
        "binning": on_scale.method,
        "binning_text": on_scale.description,
        "n_items": found.n_items,
        "kappa": _estimate(found.quadratic_kappa),
        "ac1": _estimate(found.gwet_ac1),
        "alpha": _estimate(found.krippendorff_alpha),
        "human_kappa": _estimate(found.human_quadratic_kappa),
        "human_ac1": _estimate(found.human_gwet_ac1),
        "human_alpha": _estimate(found.human_krippendorff_alpha),
    }
    if among is not None:
        result |= {k: among[k] for k in HUMAN_KEYS}
    compared = on_scale.values if on_scale.method == "quantiles" else scores
    return result, compared


def compute(inp: RowInput) -> Row:
    if inp.aspect.kind != "scale":
        inp.scratch["compared"] = inp.metric
        return {"problem": LABELS, "scale": None}
    c = inp.context
    found, compared = agreement(
        inp.metric,
        inp.humans,
        c.docs,
        inp.aspect,
        c.doc_plan,
        c.params.confidence,
        inp.shared.get("agreement"),
    )
    inp.scratch["compared"] = compared
    if not found["problem"] and "agreement" not in inp.shared:
        inp.shared["agreement"] = found  # the annotators' own, for the aspect's next rows
    return found


class CardAgreementSerializer(serializers.Serializer):  # type: ignore[type-arg]
    problem = serializers.CharField(
        allow_null=True, help_text="Why it was not computed (a continuous scale, labels)."
    )
    scale = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    binning = serializers.CharField(required=False)
    binning_text = serializers.CharField(required=False)
    n_items = serializers.IntegerField(required=False)
    kappa = CardEstimateSerializer(required=False)
    ac1 = CardEstimateSerializer(required=False)
    alpha = CardEstimateSerializer(required=False)
    human_kappa = CardEstimateSerializer(required=False)
    human_ac1 = CardEstimateSerializer(required=False)
    human_alpha = CardEstimateSerializer(required=False)


def _estimates(found: dict[str, Any] | None) -> list[Any]:
    found = found or {}
    return [number(found.get(k), 6) for k in ("value", "low", "high")]


def _values(r: Row) -> list[Any]:
    agree = r["agreement"]
    return [
        agree.get("binning") or "",
        *_estimates(agree.get("kappa")),
        *_estimates(agree.get("ac1")),
        *_estimates(agree.get("alpha")),
        *(number((agree.get(k) or {}).get("value"), 6) for k in HUMAN_KEYS),
    ]


def _value(name: str) -> Any:
    return lambda r: (r["agreement"].get(name) or {}).get("value")


PIECE = Piece(
    key="agreement",
    compute=compute,
    serializer=CardAgreementSerializer,
    template="studies/partials/card/agreement.html",
    columns=(
        Column("kappa", "κ_w", _value("kappa")),
        Column("ac1", "AC1", _value("ac1")),
        Column("alpha", "α", _value("alpha")),
    ),
    export=Export(
        (
            "binning",
            "kappa_w",
            "kappa_w_low",
            "kappa_w_high",
            "ac1",
            "ac1_low",
            "ac1_high",
            "alpha",
            "alpha_low",
            "alpha_high",
            "human_kappa_w",
            "human_ac1",
            "human_alpha",
        ),
        _values,
    ),
    help="agreement on the annotators' scale (κ_w, AC1, α; how the judge's scores were put on it)",
)
