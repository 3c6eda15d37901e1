"""What a piece of a report card's evidence declares: its key in the row, how it is
computed, its sortable columns, its cells' template, its CSV columns and its typed
serializer (the API schema's); and, for the verdict, the primary statistic it gives for
an aspect's kind and the caveat it adds. A piece is one module of this package and one
line in :mod:`.registry`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from studies.services.analysis.report_card.context import RowInput

Row = dict[str, Any]


@dataclass(frozen=True)
class Column:
    """A sortable column: its ``sort`` name, header, value and which way is best."""

    key: str
    label: str
    value: Callable[[Row], Any]
    best_high: bool = True
    title: str = ""


@dataclass(frozen=True)
class Export:
    """A piece's columns in the CSV export: their headers and a row's values."""

    header: tuple[str, ...]
    values: Callable[[Row], list[Any]]


@dataclass(frozen=True)
class Primary:
    """The statistic a row's verdict compares with the human ceiling: its name (“MCC”,
    “Spearman ρ, sample-level”), value and interval, and the annotators' own."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    ceiling: float | None
    ceiling_reason: str | None = None
    reason: str | None = None  # why ``value`` is undefined


@dataclass(frozen=True)
class Piece:
    """One piece of a row's evidence. ``compute`` gives ``row[key]`` (a plain dict, or
    None where the piece says nothing of this judge); ``template`` renders its cells
    (one ``<td>`` per column, the row as ``r``: a template's name, or a
    ``django.template.Template`` the piece's module builds, which ``{% include %}``
    renders as well); ``header`` the non-sortable header
    cells where it has no columns; ``primary`` the statistic the verdict compares with
    the ceiling, for the aspect kinds it speaks for; ``caveat`` a sentence added to any
    verdict."""

    key: str
    compute: Callable[[RowInput], Any]
    serializer: type[serializers.Serializer]  # type: ignore[type-arg]
    template: Any  # a template's name, or a Template object
    columns: tuple[Column, ...] = ()
    header: tuple[str, ...] = ()
    export: Export | None = None
    primary: Callable[[Row, str], Primary | None] | None = None
    caveat: Callable[[Row], str | None] | None = None
    help: str = ""

    @property
    def n_cells(self) -> int:
        return len(self.columns) or len(self.header)


class CardEstimateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A statistic with its interval (None: undefined; ``clipped``: the interval was cut
    to the statistic's range)."""

    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    clipped = serializers.BooleanField(required=False)
    reason = serializers.CharField(allow_null=True, required=False)


def get(row: Row, key: str, name: str) -> Any:
    """``row[key][name]``, None where the piece said nothing."""
    return (row.get(key) or {}).get(name)


def estimate(found: Row | None) -> Any:
    return (found or {}).get("value")
