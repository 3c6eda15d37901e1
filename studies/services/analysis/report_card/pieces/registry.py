"""The report card's pieces of evidence, in the order of the row, the page's columns and
the CSV export. A piece is one module of this package (:class:`.base.Piece`: its
computation, columns, cell template, CSV columns and typed serializer) and one line here;
a piece may read what the ones above it left (:class:`..context.RowInput`'s ``scratch``:
the alternative-annotator test compares the scores agreement put on the scale, or the
labels the label statistics checked; the prompt variant reuses the correlation's
options)."""

from __future__ import annotations

from studies.services.analysis.report_card.pieces import (
    agreement,
    alt_test,
    consistency,
    correlation,
    cost,
    human_pairs,
    labels,
    length,
    position,
    prompt,
    sentinel,
    top_k,
)
from studies.services.analysis.report_card.pieces.base import Column, Piece, Primary, Row

PIECES: list[Piece] = []


def register(piece: Piece) -> None:
    if any(p.key == piece.key for p in PIECES):
        raise ValueError(f"a report card piece is already registered as {piece.key!r}")
    PIECES.append(piece)


register(correlation.PIECE)
register(labels.PIECE)
register(agreement.PIECE)
register(alt_test.PIECE)
register(sentinel.PIECE)
register(length.PIECE)
register(consistency.PIECE)
register(position.PIECE)
register(human_pairs.PIECE)
register(prompt.PIECE)
register(cost.PIECE)
register(top_k.PIECE)


def shown() -> list[Piece]:
    """The pieces with cells on the page, in order."""
    return [p for p in PIECES if p.template and p.n_cells]


def columns() -> tuple[Column, ...]:
    """Every piece's sortable columns, in order."""
    return tuple(c for p in PIECES for c in p.columns)


def export_header() -> list[str]:
    return [h for p in PIECES if p.export for h in p.export.header]


def export_values(row: Row) -> list[object]:
    return [v for p in PIECES if p.export for v in p.export.values(row)]


def primary_of(row: Row, statistic: str) -> Primary | None:
    """The statistic the row's verdict compares with the human ceiling: the first piece
    that gives one for the row's aspect kind (the correlation for a scale aspect, MCC or
    κ for a label one)."""
    for piece in PIECES:
        found = piece.primary(row, statistic) if piece.primary else None
        if found is not None:
            return found
    return None


def caveats(row: Row) -> list[str]:
    """What the pieces add to any verdict (a pairwise judge's position bias)."""
    return [text for p in PIECES if p.caveat and (text := p.caveat(row))]
