"""The one CSV writer of every file the product writes: dataset exports, a run's scores,
the correlation matrix and the paper tables (pages, API and commands alike).

A cell's Python type says what it is, one rule for every file:

- text (``str``) that a spreadsheet would run as a formula (OWASP "CSV injection": it
  starts, after any leading quotes, with ``= + - @``, a tab or a carriage return) gets one
  more leading ``'``, unless the writer is ``raw``; the import's :func:`restore_cell`
  takes exactly that quote off again, so an exported CSV imports back to the same text;
- numbers (integers, finite floats, numpy's included, or a :class:`Number`: one already
  formatted to a number of digits) are written as they are, so ``-0.5`` stays a number;
- ``None`` is an empty cell.

A text id such as ``"-2"`` is text, and is quoted like any other text cell.
"""

from __future__ import annotations

import csv
import io
import math
import numbers
import re
from collections.abc import Iterable
from typing import Any

# Spreadsheet formula triggers: an exported text cell starting with one of these, after
# any leading quotes, gets one more leading ' (see neutralise_cell).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


class Number(str):
    """A number formatted as text (``Number("-0.250000")``), written as it is; anything
    that is not a plain decimal number is refused, so no formula passes as one."""

    __slots__ = ()

    def __new__(cls, text: str) -> Number:
        if not _NUMBER.fullmatch(text):
            raise ValueError(f"{text!r} is not a number")
        return super().__new__(cls, text)


def number(value: float | None, digits: int | None = None) -> Number | str:
    """``value`` as a number cell with ``digits`` after the point (None: Python's shortest
    exact form); "" for None. A value that is not finite is left to the text rule."""
    if value is None:
        return ""
    if not math.isfinite(value):
        return str(value)
    return Number(repr(float(value)) if digits is None else f"{value:.{digits}f}")


def neutralise_cell(text: str) -> str:
    """A text cell a spreadsheet will not run: one ``'`` before a cell that starts, after
    any quotes it already has, with ``= + - @``, tab or CR. :func:`restore_cell` undoes it
    exactly, so an exported CSV imports back to the same text."""
    return "'" + text if _looks_like_formula(text) else text


def restore_cell(text: str) -> str:
    """The inverse of :func:`neutralise_cell` (a cell it would not have written is kept)."""
    return text[1:] if text.startswith("'") and _looks_like_formula(text[1:]) else text


def _looks_like_formula(text: str) -> bool:
    return text.lstrip("'").startswith(FORMULA_TRIGGERS)


class CsvWriter:
    """Turns rows of cells into CSV text by the rule above (``raw``: text as stored).

    A row holding a lone CR is written fully quoted: the csv module quotes a field holding
    the line terminator (\\n) but not a bare \\r, which readers then take for a line
    break."""

    def __init__(self, *, raw: bool = False) -> None:
        self.raw = raw
        self._buffer = io.StringIO()
        self._plain = csv.writer(self._buffer, lineterminator="\n")
        self._quoting = csv.writer(self._buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def cell(self, value: Any) -> str:
        """One cell's text."""
        if value is None:
            return ""
        if isinstance(value, Number):
            return str(value)
        if isinstance(value, bool):
            return str(value)
        if isinstance(value, numbers.Integral):  # numpy's integers too
            return str(int(value))
        if isinstance(value, numbers.Real) and math.isfinite(value):
            return repr(float(value))
        text = str(value)  # also inf and nan: "-inf" is no number to a spreadsheet
        return text if self.raw else neutralise_cell(text)

    def row(self, cells: Iterable[Any]) -> str:
        """One line of CSV text (ending in ``\\n``), for a streamed response."""
        texts = [self.cell(c) for c in cells]
        (self._quoting if any("\r" in t for t in texts) else self._plain).writerow(texts)
        line = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return line


def csv_text(rows: Iterable[Iterable[Any]], *, raw: bool = False) -> str:
    """A whole CSV file's text from its rows (the first is the header)."""
    writer = CsvWriter(raw=raw)
    return "".join(writer.row(r) for r in rows)
