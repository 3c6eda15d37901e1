"""Length bias (the diagnostics'): the judge's and the annotators' correlation with
output length, and the judge's correlation with the humans without length."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number


def compute(inp: RowInput) -> Row:
    c = inp.context
    length = next(r for r in c.length["runs"] if r["run"]["pk"] == inp.info.pk)
    return {
        "judge": length["length"],
        "humans": c.length["aspects"][inp.j]["length"],
        **{k: length["cells"][inp.j][k] for k in ("raw", "partial", "change")},
        "coefficient": c.length["coefficient_label"],
    }


def _abs(value: float | None) -> float | None:
    return None if value is None else abs(value)


class CardLengthSerializer(serializers.Serializer):  # type: ignore[type-arg]
    judge = serializers.FloatField(allow_null=True)
    humans = serializers.FloatField(allow_null=True)
    raw = serializers.FloatField(allow_null=True)
    partial = serializers.FloatField(allow_null=True)
    change = serializers.FloatField(allow_null=True)
    coefficient = serializers.CharField()


def _values(r: Row) -> list[Any]:
    length = r["length"]
    return [number(length[k], 6) for k in ("judge", "humans", "partial")]


PIECE = Piece(
    key="length",
    compute=compute,
    serializer=CardLengthSerializer,
    template="studies/partials/card/length.html",
    columns=(
        Column(
            "length",
            "Length r",
            lambda r: _abs(r["length"]["judge"]),
            best_high=False,
            title="the judge's correlation with output length (closest to 0 first)",
        ),
    ),
    export=Export(("length_r", "humans_length_r", "partial_without_length"), _values),
    help="length bias",
)
