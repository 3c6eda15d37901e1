"""Whether a row's flagged scores (read from a served endpoint's top-k alone) could
change its verdict: the row's pieces computed again with each flagged score at the ends
of its range that the top-k piece chose (:mod:`.pieces.top_k`, which says why those),
and the verdict of each (the module's docstring there is the method)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.pieces.registry import PIECES, primary_of
from studies.services.analysis.report_card.pieces.top_k import ALTERNATIVES, ENDS
from studies.services.analysis.report_card.verdict import verdict


@dataclass
class MovedInput(RowInput):
    """A row's inputs with the judge's column replaced (``column``)."""

    column: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def metric(self) -> np.ndarray:
        return self.column


def check_bounds(inp: RowInput, row: dict[str, Any], statistic: str) -> None:
    """Fill ``row["top_k"]`` (when the top-k piece flagged scores) with the verdict and
    the primary statistic at each end, and whether either verdict differs from the one
    the stored scores give."""
    columns = inp.scratch.get(ALTERNATIVES)
    top = row.get("top_k")
    if not columns or not top:
        return
    verdicts, primary = {}, {}
    for end in ENDS:
        moved = MovedInput(
            inp.context,
            inp.j,
            inp.aspect,
            inp.i,
            inp.info,
            inp.humans,
            inp.names,
            shared=inp.shared,
            column=columns[end],
        )
        other: dict[str, Any] = {"run": row["run"], "aspect": row["aspect"]}
        moved.row = other
        for piece in PIECES:
            if piece.key != "top_k":
                other[piece.key] = piece.compute(moved)
        verdicts[end] = verdict(other, statistic)["code"]
        found = primary_of(other, statistic)
        if found is not None:
            primary[end] = {
                "name": found.name,
                "value": found.value,
                "low": found.low,
                "high": found.high,
            }
    stored = verdict(row, statistic)["code"]  # before the caveat reads what is filled here
    top.update(
        verdicts=verdicts,
        primary=primary,
        could_change=any(code != stored for code in verdicts.values()),
    )
