"""The matrix's sentinel check: whether the judge's correlation is significantly above
every sentinel baseline (length, random, a source-free GPTScore), and which sentinels
have not run yet."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.pieces.base import Export, Piece, Row
from studies.services.csvfile import number


def compute(inp: RowInput) -> Row:
    cell = inp.context.cells.get((inp.aspect.code, inp.info.pk)) or {}
    return {"fails": cell.get("fails_sentinel"), "pending": cell.get("sentinels_pending") or []}


class CardFailedSentinelSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.IntegerField()
    label = serializers.CharField()
    p = serializers.FloatField(help_text="One-sided paired bootstrap p of being above it.")
    n = serializers.IntegerField()


class CardSentinelSerializer(serializers.Serializer):  # type: ignore[type-arg]
    fails = CardFailedSentinelSerializer(
        allow_null=True, help_text="The sentinel the judge is not significantly above."
    )
    pending = serializers.ListField(child=serializers.CharField())


def _values(r: Row) -> list[Any]:
    failed = r["sentinel"]["fails"]
    return [failed["label"] if failed else "", number(failed["p"], 4) if failed else ""]


PIECE = Piece(
    key="sentinel",
    compute=compute,
    serializer=CardSentinelSerializer,
    template="studies/partials/card/sentinel.html",
    header=("Sentinels",),
    export=Export(("not_above_sentinel", "not_above_sentinel_p"), _values),
    help="the sentinel check",
)
