"""The judge's correlation with the annotators and its interval (the matrix's statistic,
at the card's confidence level; on the matrix's resamples, so at 95 % it is the matrix
cell's) beside the human ceiling: a scale aspect's primary statistic."""

from __future__ import annotations

import numpy as np
from rest_framework import serializers

from scoring.stats import bootstrap_ci
from studies.services.analysis.matrix import cell_statistic
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import (
    Column,
    Export,
    Piece,
    Primary,
    Row,
)
from studies.services.csvfile import number


def compute(inp: RowInput) -> Row:
    c, params = inp.context, inp.context.params
    mp, metric, human = c.mp, inp.metric, inp.human
    result = cell_statistic(metric, human, inp.aspect, mp, c.docs, c.systems)
    inp.scratch["options"] = result.options
    low = high = None
    if c.plan is not None and np.isfinite(result.value):
        ci = bootstrap_ci(
            c.plan,
            metric,
            human,
            level=mp.level_enum,
            coefficient=mp.coefficient_enum,
            average=mp.average_enum,
            options=result.options,
            alpha=1.0 - params.confidence,
            estimate=result,
        )
        low, high = num(ci.low), num(ci.high)
    ceiling = c.ceiling.get(inp.aspect.code) or {}
    return {
        "value": num(result.value),
        "low": low,
        "high": high,
        "n_outputs": result.n_outputs,
        "ceiling": ceiling.get("value"),
        "ceiling_reason": ceiling.get("reason"),
    }


def primary(row: Row, statistic: str) -> Primary | None:
    """A scale aspect's: the correlation (a label aspect's is its label statistic)."""
    if row["aspect"].get("kind", "scale") != "scale":
        return None
    corr = row["correlation"]
    return Primary(
        statistic, corr["value"], corr["low"], corr["high"], corr["ceiling"], corr["ceiling_reason"]
    )


class CardCorrelationSerializer(serializers.Serializer):  # type: ignore[type-arg]
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    n_outputs = serializers.IntegerField()
    ceiling = serializers.FloatField(
        allow_null=True, help_text="One annotator against the mean of the others, averaged."
    )
    ceiling_reason = serializers.CharField(allow_null=True)


PIECE = Piece(
    key="correlation",
    compute=compute,
    serializer=CardCorrelationSerializer,
    template="studies/partials/card/correlation.html",
    columns=(
        Column("corr", "Correlation", lambda r: r["correlation"]["value"]),
        Column("low", "Lower bound", lambda r: r["correlation"]["low"], title="of the interval"),
    ),
    export=Export(
        (
            "correlation",
            "correlation_low",
            "correlation_high",
            "n_outputs",
            "human_ceiling",
        ),
        lambda r: [
            number(r["correlation"]["value"], 6),
            number(r["correlation"]["low"], 6),
            number(r["correlation"]["high"], 6),
            r["correlation"]["n_outputs"],
            number(r["correlation"]["ceiling"], 6),
        ],
    ),
    primary=primary,
    help="correlation and interval beside the human ceiling",
)
