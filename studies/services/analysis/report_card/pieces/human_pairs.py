"""A pairwise judge run's agreement with the imported human preferences of its aspect
(MT-Bench agreement with and without ties, beside the annotators' among themselves);
shown in the position column."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.models import MetricRun
from studies.services.analysis.pairwise_judge import (
    PairwiseUnavailable,
    human_agreement,
    pair_files,
)
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import CardEstimateSerializer, Piece, Row


def _estimate(found: Any) -> dict[str, Any]:
    return {
        "value": num(found.value),
        "low": num(found.low),
        "high": num(found.high),
        "clipped": found.clipped,
    }


def human_pairs_of(run: MetricRun, seed: int, confidence: float) -> dict[str, Any] | None:
    """None for another run than a pairwise judge's, or where no pairs file was imported."""
    if run.metric != "pairwise" or not pair_files(run):
        return None
    try:
        found = human_agreement(
            run, "pairs", seed=seed, n_resamples=200, confidence=confidence, interval="percentile"
        )
    except PairwiseUnavailable as exc:
        return {"problem": str(exc)}
    return {
        "problem": None,
        "n_items": found.n_items,
        "with_ties": _estimate(found.with_ties),
        "without_ties": _estimate(found.without_ties),
        "human_with_ties": _estimate(found.human_with_ties),
        "human_without_ties": _estimate(found.human_without_ties),
    }


def compute(inp: RowInput) -> Row | None:
    return human_pairs_of(inp.run, inp.context.mp.seed, inp.context.params.confidence)


class CardHumanPairsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    problem = serializers.CharField(allow_null=True)
    n_items = serializers.IntegerField(required=False)
    with_ties = CardEstimateSerializer(required=False)
    without_ties = CardEstimateSerializer(required=False)
    human_with_ties = CardEstimateSerializer(required=False)
    human_without_ties = CardEstimateSerializer(required=False)


PIECE = Piece(
    key="human_pairs",
    compute=compute,
    serializer=CardHumanPairsSerializer,
    template="",  # shown in the position column
    help="a pairwise judge's agreement with imported human preferences",
)
