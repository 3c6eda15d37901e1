"""Kendall's τ-b and τ-c over one long row, from each column's sort order computed once.

A dataset-level matrix correlates every run with every aspect over all outputs: with
scipy, each cell sorts both columns again (two sorts of a million values, most of a
cell's time). Here each column is sorted once (:func:`column_order`) and a cell counts
its discordant pairs along one column's order with the other column's dense codes, in
one pass per distinct value of the side with fewer of them (human ratings: a handful).
The counts are scipy's (``scipy.stats.kendalltau``: the same pairs, ties and formula),
so the value is the same to the last bit; where both sides have many distinct values
(two continuous columns) :func:`kendall_from_orders` declines and the caller asks scipy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import FloatArray, IntArray

# Most distinct values on the counted side: one pass over the row per value.
MAX_CLASSES = 64
# Largest contingency table (x's values times y's) counted as a table.
TABLE_CELLS = 1 << 16


@dataclass(frozen=True, eq=False)
class ColumnOrder:
    """One column's dense rank codes (0 .. ``n_classes`` - 1, ties sharing one), how many
    items hold each code, and its ``order`` (an argsort). Built from the sort
    (``sorted_by``, with the codes in sorted order) or from hashing (``given`` codes); what
    is not given is derived when first asked: a column of few values is only ever
    counted, never walked, and a column walked is seldom counted."""

    counts: IntArray
    given: IntArray | None = None
    sorted_by: IntArray | None = None
    sorted_codes: IntArray | None = None

    @property
    def n_classes(self) -> int:
        return int(self.counts.size)

    @cached_property
    def size(self) -> int:
        return int(self.counts.sum())

    @cached_property
    def codes(self) -> IntArray:
        """Each item's code."""
        if self.given is not None:
            return self.given
        assert self.sorted_by is not None and self.sorted_codes is not None
        codes = np.empty(self.sorted_by.size, dtype=np.intp)
        codes[self.sorted_by] = self.sorted_codes
        return codes

    @cached_property
    def order(self) -> IntArray:
        if self.sorted_by is not None:
            return self.sorted_by
        small = self.codes.astype(np.int16) if self.n_classes <= 2**15 else self.codes
        return np.argsort(small, kind="stable")  # few codes: a radix sort

    @cached_property
    def codes_in_order(self) -> IntArray:
        """The codes along ``order`` (non-decreasing)."""
        return self.sorted_codes if self.sorted_codes is not None else self.codes[self.order]

    @cached_property
    def small_codes(self) -> npt.NDArray[np.int8]:
        """The codes in one byte each (at most ``MAX_CLASSES`` of them)."""
        if self.n_classes > MAX_CLASSES:
            raise ValueError(f"more than {MAX_CLASSES} distinct values")
        return self.codes.astype(np.int8)

    @cached_property
    def tied_pairs(self) -> int:
        """Pairs of items tied in this column (scipy's ``xtie``)."""
        cnt = self.counts[self.counts > 1].astype(np.int64)
        return int((cnt * (cnt - 1) // 2).sum())


def column_order(values: FloatArray) -> ColumnOrder:
    """The dense codes (and sort order) of a column without NaN. A column of few
    distinct values (ratings) is coded by hashing, without sorting it."""
    if values.size > 4 * MAX_CLASSES and np.unique(values[:4096]).size <= MAX_CLASSES:
        distinct = _distinct(values)
        if distinct.size <= MAX_CLASSES:
            codes = np.searchsorted(np.sort(distinct), values).astype(np.intp)
            return ColumnOrder(counts=np.bincount(codes, minlength=distinct.size), given=codes)
    order = np.argsort(values)  # any order of tied items will do
    ordered = values[order]
    starts = np.empty(values.size, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    dense = np.cumsum(starts, dtype=np.intp) - 1
    counts = np.bincount(dense, minlength=int(dense[-1]) + 1 if dense.size else 0)
    return ColumnOrder(counts=counts, sorted_by=order, sorted_codes=dense)


def _distinct(values: FloatArray) -> FloatArray:
    """The distinct values, by hashing where numpy can (2.3 and later), else by sorting."""
    try:
        return np.unique(values, sorted=False)
    except TypeError:  # numpy before 2.3: no ``sorted``
        return np.unique(values)


def kendall_from_orders(x: ColumnOrder, y: ColumnOrder, variant: str = "b") -> float | None:
    """τ (``variant`` "b" or "c") of two columns of the same items, as scipy gives it
    (NaN where either is constant); None where both have more than ``MAX_CLASSES``
    distinct values (count with scipy instead)."""
    size = x.size
    if y.size != size:
        raise ValueError("the two columns must have one entry per item")
    tot = size * (size - 1) // 2
    xtie, ytie = x.tied_pairs, y.tied_pairs
    if xtie == tot or ytie == tot:
        return float("nan")
    if x.n_classes * y.n_classes <= TABLE_CELLS:  # both have few values: their table
        dis, ntie = _from_table(x, y)
    else:  # walk the side with more values in its order, counting the other's codes
        walk, counted = (x, y) if y.n_classes <= x.n_classes else (y, x)
        if counted.n_classes > MAX_CLASSES:
            return None
        dis, ntie = _discordant(walk, counted), _joint_ties(walk, counted)
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    if variant == "b":
        tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    elif variant == "c":
        minclasses = min(x.n_classes, y.n_classes)
        tau = 2 * con_minus_dis / (size**2 * (minclasses - 1) / minclasses)
    else:
        raise ValueError(f"unknown Kendall variant {variant!r}: 'b' or 'c'")
    return float(np.minimum(1.0, max(-1.0, tau)))


def _discordant(walk: ColumnOrder, counted: ColumnOrder) -> int:
    """Pairs ordered one way by ``walk`` and the other way by ``counted`` (ties in
    either are neither): along ``walk``'s order, the pairs whose ``counted`` code falls,
    less those inside a run of items tied in ``walk``."""
    seq = counted.small_codes[walk.order]  # one byte per item
    start = tied = None
    if walk.n_classes < seq.size:  # runs of items tied in ``walk``: each item's run start
        group = walk.codes_in_order
        start = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])[group]
        tied = walk.counts[group] > 1
    wide = np.int32 if seq.size < 2**31 else np.int64  # half the memory traffic
    falls = 0
    for v in range(counted.n_classes - 1):  # nothing lies above the top code
        at = np.flatnonzero(seq == v)  # the positions holding code v, in order
        not_above = seq <= v
        upto = np.cumsum(not_above, dtype=wide)  # at or below v, up to each position
        # items above v before each item at v: its position less those at or below v
        # before it (``upto`` counts the item itself)
        falls += int(at.sum()) - (int(upto[at].sum(dtype=np.int64)) - at.size)
        if start is not None and tied is not None:
            inner = at[tied[at]]
            first = start[inner]
            ends, starts = upto[inner].astype(np.int64), upto[first].astype(np.int64)
            below = ends - 1 - starts + not_above[first]
            falls -= int((inner - first).sum()) - int(below.sum())
    return falls


def _from_table(x: ColumnOrder, y: ColumnOrder) -> tuple[int, int]:
    """Discordant and jointly tied pairs from the two columns' contingency table: a
    pair is discordant when one item has the lower x code and the higher y code."""
    table = np.bincount(
        x.codes.astype(np.int64) * y.n_classes + y.codes, minlength=x.n_classes * y.n_classes
    ).reshape(x.n_classes, y.n_classes)
    # above[a, b]: items with an x code below a and a y code above b
    below_x = np.cumsum(table, axis=0) - table
    above = np.cumsum(below_x[:, ::-1], axis=1)[:, ::-1] - below_x
    cnt = table.astype(np.int64)
    return int((cnt * above).sum()), int((cnt * (cnt - 1) // 2).sum())


def _joint_ties(walk: ColumnOrder, counted: ColumnOrder) -> int:
    """Pairs tied in both columns (scipy's ``ntie``): only items tied in ``walk`` can be."""
    if walk.n_classes == walk.size:  # no two items tied in ``walk``
        return 0
    tied = walk.counts[walk.codes] > 1
    if not tied.any():
        return 0
    key = walk.codes[tied].astype(np.int64) * counted.n_classes + counted.codes[tied]
    cells = walk.n_classes * counted.n_classes
    if cells <= 4 * key.size:  # few (walk, counted) pairs: count them in place
        cnt = np.bincount(key, minlength=cells).astype(np.int64)
    else:
        cnt = np.unique(key, return_counts=True)[1].astype(np.int64)
    return int((cnt * (cnt - 1) // 2).sum())


__all__ = ["ColumnOrder", "column_order", "kendall_from_orders"]
