"""Grouping by key, and ranks computed for many groups at once.

The datasets are ragged (2 to 50 outputs per document, sometimes more), so items are
grouped by their key, never by reshaping. A :class:`Groups` index is built once from
the document (or system) keys and reused by every metric × aspect cell. For vectorised
work it lays the groups out as padded blocks: groups of similar size share a 2-D block
(one row per group, padded to the block's width), so per-group statistics become
row-wise numpy operations with a mask, and padding never costs more than twice the
data.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

# Cells (rows × width) per padded block: big enough to amortise numpy's per-call cost,
# small enough to stay in cache-sized temporaries (2 MiB of float64).
BLOCK_CELLS = 1 << 18


@dataclass(frozen=True, eq=False)
class Block:
    """Groups of similar size laid out as rows: ``index[r, j]`` is the j-th item of
    group ``rows[r]``, or -1 past the group's end (``mask`` is False there)."""

    rows: IntArray
    index: IntArray
    mask: BoolArray

    def gather(self, values: FloatArray) -> FloatArray:
        """The block's values, NaN in the padding."""
        return np.where(self.mask, values[self.index], np.nan)


@dataclass(frozen=True, eq=False)
class Groups:
    """Items grouped by key.

    ``keys[g]`` is group g's key (sorted); ``codes[i]`` is item i's group; ``order``
    lists the items group by group (stable, so items keep their order within a group);
    group g's items are ``order[offsets[g]:offsets[g + 1]]`` and there are
    ``sizes[g]`` of them. Build with :meth:`from_keys`.
    """

    keys: npt.NDArray[Any]
    codes: IntArray
    order: IntArray
    sizes: IntArray
    offsets: IntArray

    @classmethod
    def from_keys(cls, keys: npt.ArrayLike) -> Groups:
        """Group items by key (document ids, system ids: any sortable values)."""
        key_array = np.asarray(keys)
        if key_array.ndim != 1:
            raise ValueError(f"keys must be 1-D, got shape {key_array.shape}")
        unique, codes = np.unique(key_array, return_inverse=True)
        return cls.from_codes(codes, len(unique), keys=unique)

    @classmethod
    def from_codes(
        cls, codes: npt.ArrayLike, n_groups: int, keys: npt.NDArray[Any] | None = None
    ) -> Groups:
        """Group items by integer code in ``0..n_groups-1`` (keys default to the codes)."""
        code_array = np.asarray(codes, dtype=np.intp).reshape(-1)
        if code_array.size and (code_array.min() < 0 or code_array.max() >= n_groups):
            raise ValueError("group codes must lie in 0..n_groups-1")
        order = np.argsort(code_array, kind="stable").astype(np.intp)
        return cls._build(code_array, order, n_groups, keys)

    @classmethod
    def single(cls, n_items: int) -> Groups:
        """All items in one group (the pooled, dataset-level view)."""
        codes = np.zeros(n_items, dtype=np.intp)
        return cls._build(codes, np.arange(n_items, dtype=np.intp), 1, None)

    @classmethod
    def _build(
        cls, codes: IntArray, order: IntArray, n_groups: int, keys: npt.NDArray[Any] | None
    ) -> Groups:
        sizes = np.bincount(codes, minlength=n_groups).astype(np.intp)
        offsets = np.zeros(n_groups + 1, dtype=np.intp)
        np.cumsum(sizes, out=offsets[1:])
        if keys is None:
            keys = np.arange(n_groups)
        return cls(keys=keys, codes=codes, order=order, sizes=sizes, offsets=offsets)

    @property
    def n_items(self) -> int:
        return int(self.codes.size)

    @property
    def n_groups(self) -> int:
        return int(self.sizes.size)

    def subset(self, mask: BoolArray) -> Groups:
        """The items where ``mask`` is True, renumbered 0..k-1, in the same groups
        (a group may become empty). O(n): the group order is reused, not re-sorted."""
        if mask.shape != self.codes.shape:
            raise ValueError("mask must have one entry per item")
        new_index = np.cumsum(mask, dtype=np.intp) - 1
        kept = self.order[mask[self.order]]
        return Groups._build(self.codes[mask], new_index[kept], self.n_groups, self.keys)

    def repeat(self, counts: IntArray) -> tuple[IntArray, Groups]:
        """Item ``i`` repeated ``counts[i]`` times, as (item indices, their groups).

        Used by the bootstrap: resampling with replacement duplicates outputs. The
        repeated items come out in group order, so no sort is needed.
        """
        items = np.repeat(self.order, counts[self.order])
        codes = self.codes[items]
        grouped = Groups._build(
            codes, np.arange(items.size, dtype=np.intp), self.n_groups, self.keys
        )
        return items, grouped

    @cached_property
    def blocks(self) -> tuple[Block, ...]:
        """Groups with at least two items, as padded blocks (cached: built once per index).

        Groups are bucketed by ``size.bit_length()`` so a block's width is less than
        twice its smallest group; buckets are split into chunks of ``BLOCK_CELLS``.
        """
        return tuple(self._iter_blocks())

    def _iter_blocks(self) -> Iterator[Block]:
        eligible = np.flatnonzero(self.sizes >= 2)
        if eligible.size == 0:
            return
        buckets = np.frexp(self.sizes[eligible].astype(np.float64))[1]
        for bucket in np.unique(buckets):
            rows = eligible[buckets == bucket]
            width = int(self.sizes[rows].max())
            step = max(1, BLOCK_CELLS // width)
            for start in range(0, rows.size, step):
                chunk = rows[start : start + step]
                position = np.arange(width, dtype=np.intp)
                mask = position[None, :] < self.sizes[chunk][:, None]
                flat = np.minimum(self.offsets[chunk][:, None] + position, self.n_items - 1)
                index = np.where(mask, self.order[flat], -1).astype(np.intp)
                yield Block(rows=chunk.astype(np.intp), index=index, mask=mask)


def rank_rows(values: FloatArray) -> FloatArray:
    """Average ranks (1-based, ties share their mean rank) along each row of a 2-D array.

    NaN marks padding: it sorts last, so the ranks of the real values are exact
    (1..n for n values); the ranks given to NaN cells are meaningless.
    Equal to ``scipy.stats.rankdata(row, method="average")`` on each row's values.
    """
    rows, width = values.shape
    if values.size == 0:
        return np.empty((rows, width))
    data = np.where(np.isnan(values), np.inf, values)
    # Ties get their mean rank whatever their order, so an unstable sort is fine.
    order = np.argsort(data, axis=1)
    flat_order = (order + (np.arange(rows) * width)[:, None]).ravel()
    ordered = data.ravel()[flat_order]
    # Work on the flattened rows (1-D ops are much faster than accumulating along a
    # short last axis); a tie run never crosses a row boundary.
    starts = np.empty(ordered.size, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    starts[::width] = True
    first = np.flatnonzero(starts)
    lengths = np.diff(np.append(first, ordered.size))
    mean_rank = (first % width) + (lengths + 1) / 2.0
    ranks = np.empty(values.size)
    ranks[flat_order] = mean_rank[np.cumsum(starts) - 1]
    return ranks.reshape(rows, width)


def ranks_within(values: FloatArray, groups: Groups) -> FloatArray:
    """Each item's average rank within its group (1-based; NaN for the items of groups
    with fewer than two), exactly as :func:`rank_rows` gives it in the group's block: a
    column's within-document ranks, computed once for the many correlations that share
    the column. ``values`` has no NaN."""
    out = np.full(values.size, np.nan)
    for block in groups.blocks:
        out[block.index[block.mask]] = rank_rows(block.gather(values))[block.mask]
    return out


def tie_runs(*sorted_rows: FloatArray) -> tuple[FloatArray, IntArray]:
    """Tied pairs and distinct values in each row of already sorted 2-D arrays.

    With several arrays, an item ties its predecessor only when it does so in all of
    them (joint ties of (x, y) pairs sorted by x then y). NaN padding never ties, and
    is not counted as a distinct value.
    """
    rows, width = sorted_rows[0].shape
    if rows == 0 or width == 0:
        return np.zeros(rows), np.zeros(rows, dtype=np.intp)
    starts = np.zeros(rows * width, dtype=bool)
    for values in sorted_rows:
        flat = values.ravel()
        starts[1:] |= flat[1:] != flat[:-1]  # NaN != NaN: padding is a run of its own
    starts[::width] = True
    first = np.flatnonzero(starts)
    lengths = np.diff(np.append(first, rows * width)).astype(np.float64)
    row = first // width
    tied = np.bincount(row, weights=lengths * (lengths - 1) / 2, minlength=rows).astype(np.float64)
    padding = np.isnan(sorted_rows[0]).sum(axis=1)
    runs = np.bincount(row, minlength=rows) - padding
    return tied, runs.astype(np.intp)


def count_descents(rows: FloatArray) -> FloatArray:
    """Pairs i < j with ``rows[r, i] > rows[r, j]`` in each row (NaN counts never).

    Pairwise comparison, chunked so a chunk's width² booleans stay near 512 KiB;
    for the short rows of sample-level data this beats a merge-sort count in numpy.
    """
    n_rows, width = rows.shape
    upper = np.triu(np.ones((width, width), dtype=bool), 1)
    out = np.empty(n_rows)
    step = max(1, (1 << 19) // max(1, width * width))
    for start in range(0, n_rows, step):
        part = rows[start : start + step]
        greater = (part[:, :, None] > part[:, None, :]) & upper
        # Summing a uint8 view is faster than count_nonzero along an axis.
        out[start : start + step] = (
            greater.reshape(len(part), -1).view(np.uint8).sum(axis=1, dtype=np.int64)
        )
    return out


def count_greater_before(values: IntArray, ends: IntArray, limits: IntArray) -> IntArray:
    """For each query q, ``#{j < ends[q] : values[j] > limits[q]}`` (non-negative ints).

    A merge-sort tree laid out level by level: at level l the values are sorted within
    blocks of 2**l positions, and a prefix ``[0, end)`` is the union of one block per set
    bit of ``end``, so each query costs one pair of binary searches per level. O((n + q)
    log n log n) in all, every level vectorised; for pooled pairwise statistics, whose
    pairs (n² / 2) could never be listed.
    """
    n = int(values.size)
    out = np.zeros(ends.size, dtype=np.int64)
    if n == 0 or ends.size == 0:
        return out
    span = np.int64(values.max()) + 2  # block b's keys lie in [b * span, (b + 1) * span)
    positions = np.arange(n, dtype=np.int64)
    ends = ends.astype(np.int64)
    limits = limits.astype(np.int64)
    level = 0
    while (1 << level) <= n:
        # Sorting blockwise keys merges the previous level's sorted blocks: timsort
        # finds those runs, so each level is close to linear.
        keys = np.sort((positions >> level) * span + values, kind="stable")
        take = np.flatnonzero((ends >> level) & 1)
        if take.size:
            block = (ends[take] >> level) - 1
            top = np.searchsorted(keys, (block + 1) * span, side="left")
            above = np.searchsorted(keys, block * span + limits[take], side="right")
            out[take] += top - above
        level += 1
    return out
