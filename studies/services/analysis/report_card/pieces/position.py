"""A pairwise judge run's position consistency (the share of pairs whose verdict survives
the swap) and first-position preference (the share of verdicts for the output shown
first, with its interval and the exact binomial test against one half), from
:func:`studies.services.analysis.pairwise_judge.summary`; a significant preference is
added to any verdict."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.models import MetricRun
from studies.services.analysis.pairwise_judge import PairwiseUnavailable, summary
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number

POSITION_ALPHA = 0.05
SHARES = (
    "position_consistency",
    "first_position_share",
    "first_position_low",
    "first_position_high",
    "first_position_p",
)


def position_of(run: MetricRun, seed: int, confidence: float) -> dict[str, Any] | None:
    """The run's position evidence; None for a run that is not a pairwise judge."""
    if run.metric != "pairwise":
        return None
    try:  # one resample: the card shows none of the strengths' intervals
        found = summary(run, seed=seed, n_resamples=1, confidence=confidence)
    except PairwiseUnavailable as exc:
        return {"problem": str(exc)}
    return {
        "problem": None,
        "n_pairs": found.n_pairs,
        "position_consistency": num(found.position_consistency),
        "n_consistent": found.n_consistent,
        "first_position_share": num(found.first_position_share),
        "first_position_low": num(found.first_position_low),
        "first_position_high": num(found.first_position_high),
        "first_position_p": num(found.first_position_p),
        "n_first": found.n_first,
        "n_second": found.n_second,
        "n_position_ties": found.n_position_ties,
    }


def compute(inp: RowInput) -> Row | None:
    return position_of(inp.run, inp.context.mp.seed, inp.context.params.confidence)


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def caveat(row: Row) -> str | None:
    """A pairwise judge that significantly prefers one position (p < 0.05): its averaged
    preferences cancel the bias out, but it decides fewer pairs on their content."""
    position = row.get("position") or {}
    p = position.get("first_position_p")
    if p is None or p >= POSITION_ALPHA:
        return None
    return (
        f"mind its position bias: {_f(position['first_position_share'])} of its "
        f"verdicts go to the output shown first (p = {_f(p, 3)}), and "
        f"{_f(position['position_consistency'])} of its pairs keep their verdict "
        "when swapped"
    )


def _from_half(value: float | None) -> float | None:
    return None if value is None else abs(value - 0.5)


class CardPositionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    problem = serializers.CharField(allow_null=True)
    n_pairs = serializers.IntegerField(required=False)
    position_consistency = serializers.FloatField(allow_null=True, required=False)
    n_consistent = serializers.IntegerField(required=False)
    first_position_share = serializers.FloatField(allow_null=True, required=False)
    first_position_low = serializers.FloatField(allow_null=True, required=False)
    first_position_high = serializers.FloatField(allow_null=True, required=False)
    first_position_p = serializers.FloatField(allow_null=True, required=False)
    n_first = serializers.IntegerField(required=False)
    n_second = serializers.IntegerField(required=False)
    n_position_ties = serializers.IntegerField(required=False)


def _values(r: Row) -> list[Any]:
    position = r.get("position") or {}
    return [position.get("n_pairs", ""), *(number(position.get(k), 6) for k in SHARES)]


PIECE = Piece(
    key="position",
    compute=compute,
    serializer=CardPositionSerializer,
    template="studies/partials/card/position.html",
    columns=(
        Column(
            "position",
            "Position cons.",
            lambda r: (r["position"] or {}).get("position_consistency"),
            title="a pairwise judge: the share of pairs whose verdict survives the swap",
        ),
        Column(
            "first",
            "First pos.",
            lambda r: _from_half((r["position"] or {}).get("first_position_share")),
            best_high=False,
            title="a pairwise judge: the share of verdicts for the output shown first "
            "(closest to one half first)",
        ),
    ),
    export=Export(("pairs", *SHARES), _values),
    caveat=caveat,
    help="a pairwise judge's position consistency and first-position preference",
)
