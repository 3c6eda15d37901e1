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

from scoring.stats.ranking import FloatArray, IntArray

# Most distinct values on the counted side: one pass over the row per value.
MAX_CLASSES = 64


@dataclass(frozen=True, eq=False)
class ColumnOrder:
    """One column's ``order`` (an argsort), each item's dense rank ``codes``
    (0 .. ``n_classes`` - 1, ties sharing one) and how many items hold each code."""

    order: IntArray
    codes: IntArray
    counts: IntArray

    @property
    def n_classes(self) -> int:
        return int(self.counts.size)

    @cached_property
    def tied_pairs(self) -> int:
        """Pairs of items tied in this column (scipy's ``xtie``)."""
        cnt = self.counts[self.counts > 1].astype(np.int64)
        return int((cnt * (cnt - 1) // 2).sum())


def column_order(values: FloatArray) -> ColumnOrder:
    """The sort order and dense codes of a column without NaN."""
    order = np.argsort(values)  # any order of tied items will do
    ordered = values[order]
    starts = np.empty(values.size, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    dense = np.cumsum(starts, dtype=np.intp) - 1
    codes = np.empty(values.size, dtype=np.intp)
    codes[order] = dense
    counts = np.bincount(dense, minlength=int(dense[-1]) + 1 if dense.size else 0)
    return ColumnOrder(order=order, codes=codes, counts=counts)


def kendall_from_orders(x: ColumnOrder, y: ColumnOrder, variant: str = "b") -> float | None:
    """τ (``variant`` "b" or "c") of two columns of the same items, as scipy gives it
    (NaN where either is constant); None where both have more than ``MAX_CLASSES``
    distinct values (count with scipy instead)."""
    size = int(x.codes.size)
    if y.codes.size != size:
        raise ValueError("the two columns must have one entry per item")
    tot = size * (size - 1) // 2
    xtie, ytie = x.tied_pairs, y.tied_pairs
    if xtie == tot or ytie == tot:
        return float("nan")
    # Walk the side with more classes in its order, counting the other side's codes.
    walk, counted = (x, y) if y.n_classes <= x.n_classes else (y, x)
    if counted.n_classes > MAX_CLASSES:
        return None
    dis = _discordant(walk, counted)
    ntie = _joint_ties(walk, counted)
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
    seq = counted.codes[walk.order].astype(np.int8)  # < MAX_CLASSES codes: a radix sort
    by_code = np.argsort(seq, kind="stable")  # positions holding each code, in order
    bounds = np.r_[0, np.cumsum(counted.counts)]
    start = tied = None
    if walk.n_classes < seq.size:  # runs of items tied in ``walk``: each item's run start
        group = walk.codes[walk.order]  # non-decreasing
        start = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])[group]
        tied = walk.counts[group] > 1
    wide = np.int32 if seq.size < 2**31 else np.int64  # half the memory traffic
    falls = 0
    for v in range(counted.n_classes - 1):  # nothing lies above the top code
        at = by_code[bounds[v] : bounds[v + 1]]
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


def _joint_ties(walk: ColumnOrder, counted: ColumnOrder) -> int:
    """Pairs tied in both columns (scipy's ``ntie``): only items tied in ``walk`` can be."""
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
