"""A sampled judge's self-consistency (a G-Eval run whose scores are the frequencies of
n sampled answers per output): ICC(1), ICC(1,k) and the within-output spread."""

from __future__ import annotations

from typing import Any

import numpy as np
from rest_framework import serializers

from scoring.stats.consistency import self_consistency
from studies.models import MetricRun, MetricScore
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number


def is_sampled(run: MetricRun) -> bool:
    """A G-Eval run whose scores are the frequencies of n sampled answers per output."""
    return (run.config or {}).get("estimation") == "sampled"


def consistency_of(run: MetricRun) -> dict[str, Any] | None:
    """A sampled run's self-consistency from the answers each score was made of (its
    stored frequencies times the answers that named a scale point); None for a run
    that did not sample."""
    if not is_sampled(run):
        return None
    scale = [float(v) for v in run.config.get("scale") or ()]
    details = MetricScore.objects.filter(run=run, value__isnull=False).values_list(
        "details", flat=True
    )
    counts = []
    for found in details.iterator():
        shares = (found or {}).get("distribution") or {}
        parsed = int(found.get("n_samples") or 0) - int(found.get("n_unparsed") or 0)
        counts.append([round(float(shares.get(_label(v), 0.0)) * parsed) for v in scale])
    result = self_consistency(np.array(counts, dtype=np.float64).reshape(-1, len(scale)), scale)
    return {
        "n_outputs": result.n_outputs,
        "n_samples": result.n_samples,
        "k": num(result.k),
        "mean_within_sd": num(result.mean_within_sd),
        "pooled_within_sd": num(result.pooled_within_sd),
        "icc1": num(result.icc1),
        "icck": num(result.icck),
    }


def _label(value: float) -> str:
    """How a scale point is written in a stored distribution ("3", or "2.5")."""
    return str(int(value)) if value == int(value) else str(value)


def compute(inp: RowInput) -> Row | None:
    return consistency_of(inp.run)


class CardConsistencySerializer(serializers.Serializer):  # type: ignore[type-arg]
    n_outputs = serializers.IntegerField()
    n_samples = serializers.IntegerField()
    k = serializers.FloatField(allow_null=True)
    mean_within_sd = serializers.FloatField(allow_null=True)
    pooled_within_sd = serializers.FloatField(allow_null=True)
    icc1 = serializers.FloatField(allow_null=True)
    icck = serializers.FloatField(allow_null=True)


def _values(r: Row) -> list[Any]:
    found = r["self_consistency"] or {}
    return [number(found.get(k), 6) for k in ("icc1", "icck", "mean_within_sd")]


PIECE = Piece(
    key="self_consistency",
    compute=compute,
    serializer=CardConsistencySerializer,
    template="studies/partials/card/self_consistency.html",
    columns=(Column("icc", "ICC(1)", lambda r: (r["self_consistency"] or {}).get("icc1")),),
    export=Export(("icc1", "icc1k", "mean_within_sd"), _values),
    help="self-consistency (sampled runs)",
)
