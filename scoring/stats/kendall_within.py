"""Kendall's τ-b and τ-c within each document, from each column's ranks within the
documents computed once.

A sample-level matrix correlates every run with every aspect within each document. The
row kernel (:func:`scoring.stats.group_correlations.row_correlations`) sorts each cell's
two columns by both keys and counts the descents of the humans' values in float64: at a
million outputs most of a Kendall matrix's time, where a Spearman matrix ranks each
column once (:func:`~scoring.stats.group_correlations.doc_ranks`). Here each column is
coded once (:func:`doc_codes`: its dense ranks within each document, laid out in the
documents' blocks, with each document's tied pairs and distinct values), and a cell
(:func:`kendall_within`) puts the side with fewer distinct values in the order of the
other (a scatter where that side has no ties in a document, a sort of small integer keys
where it has), then counts the descents of those small codes. The counts (pairs, ties in
x, in y, in both, discordant pairs) are the row kernel's and scipy's, in the same
formula, so every value is the same to the last bit.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from scoring.stats.ranking import Block, FloatArray, Groups, IntArray, tie_runs

# Widest document coded (the row kernel hands wider rows to scipy, and so does a matrix
# without codes); keeps the codes in 16 bits and a cell's keys in 32.
MAX_WIDTH = 256
# Descents of codes with at most this many distinct values are counted value by value
# (one pass per value), more by comparing every pair of positions.
VALUE_PASSES = 8


@dataclass(frozen=True, eq=False)
class DocCodes:
    """A column's dense ranks within each document of ``groups`` (0 for its lowest value,
    ties sharing one), block by block as ``groups.blocks`` lays the documents out: per
    block the codes of its items in the block's reading order (row by row, padding left
    out: ``codes``) and the most distinct values of one of its documents (``widest``);
    each document's tied pairs (``tied``) and distinct values (``classes``)."""

    groups: Groups
    codes: tuple[np.ndarray, ...]
    tied: FloatArray
    classes: IntArray
    widest: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class _Layout:
    """Where a block's items sit in its padded rows (``flat``: index into the raveled
    rows × width) and where their row starts (``base``), shared by every column."""

    flat: np.ndarray
    base: np.ndarray


_LAYOUTS: weakref.WeakKeyDictionary[Groups, tuple[_Layout, ...]] = weakref.WeakKeyDictionary()


def _layouts(groups: Groups) -> tuple[_Layout, ...]:
    found = _LAYOUTS.get(groups)
    if found is None:
        found = tuple(
            _Layout(flat := np.flatnonzero(block.mask), flat - flat % block.mask.shape[1])
            for block in groups.blocks
        )
        _LAYOUTS[groups] = found
    return found


def doc_codes(values: FloatArray, groups: Groups) -> DocCodes | None:
    """:class:`DocCodes` of a column without NaN; None when a document is wider than
    :data:`MAX_WIDTH` (the row kernel's scipy path serves those)."""
    if groups.n_groups and int(groups.sizes.max()) > MAX_WIDTH:
        return None
    tied = np.zeros(groups.n_groups)
    classes = np.minimum(groups.sizes, 1).astype(np.intp)
    blocks, widest = [], []
    for block, layout in zip(groups.blocks, _layouts(groups), strict=True):
        gathered = block.gather(values)
        order = np.argsort(gathered, axis=1)  # NaN padding last
        ordered = np.take_along_axis(gathered, order, axis=1)
        block_tied, block_classes = tie_runs(ordered)
        tied[block.rows], classes[block.rows] = block_tied, block_classes
        starts = np.ones(ordered.shape, dtype=bool)
        starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        dense = (np.cumsum(starts, axis=1) - 1).astype(np.int16)
        codes = np.empty_like(dense)
        np.put_along_axis(codes, order, dense, axis=1)
        blocks.append(codes.ravel()[layout.flat])
        widest.append(int(block_classes.max(initial=1)))
    return DocCodes(groups, tuple(blocks), tied, classes, tuple(widest))


def kendall_within(x: DocCodes, y: DocCodes, variant: str = "b") -> tuple[FloatArray, IntArray]:
    """τ (``variant`` "b" or "c") of two coded columns within each document, and each
    document's size: NaN for a document of fewer than two items or where either side
    is constant, as the row kernel gives them."""
    groups = x.groups
    if y.groups is not groups and (
        y.groups.n_items != groups.n_items or y.groups.n_groups != groups.n_groups
    ):
        raise ValueError("the two columns are coded within different documents")
    n = groups.sizes.astype(np.intp)
    count = n.astype(np.float64)
    pairs = count * (count - 1) / 2
    joint = np.zeros(groups.n_groups)
    falls = np.zeros(groups.n_groups)
    for k, (block, layout) in enumerate(zip(groups.blocks, _layouts(groups), strict=True)):
        # order by the side with more distinct values; count the other's descents
        if y.widest[k] <= x.widest[k]:
            walk, counted, walk_ties, q = x.codes[k], y.codes[k], x.tied, y.widest[k]
        else:
            walk, counted, walk_ties, q = y.codes[k], x.codes[k], y.tied, x.widest[k]
        seq, block_joint = _in_order(walk, counted, walk_ties[block.rows], q, block, layout)
        joint[block.rows] = block_joint
        falls[block.rows] = _descents(seq, q)
    s = pairs - x.tied - y.tied + joint - 2 * falls
    with np.errstate(invalid="ignore", divide="ignore"):
        if variant == "b":
            tau = s / np.sqrt((pairs - x.tied) * (pairs - y.tied))
        elif variant == "c":
            m = np.minimum(x.classes, y.classes).astype(np.float64)
            tau = 2 * s / (count**2 * (m - 1) / m)
        else:
            raise ValueError(f"unknown Kendall variant {variant!r}: 'b' or 'c'")
    constant = (x.classes <= 1) | (y.classes <= 1)
    return np.asarray(np.where(constant | (n < 2), np.nan, tau), dtype=np.float64), n


def _in_order(
    walk: np.ndarray,
    counted: np.ndarray,
    walk_ties: FloatArray,
    q: int,
    block: Block,
    layout: _Layout,
) -> tuple[np.ndarray, FloatArray]:
    """``counted``'s codes along ``walk``'s order (ties in ``walk`` in ascending
    ``counted``), padding (code ``q``) last, as the block's rows; and each row's pairs
    tied in both."""
    rows, width = block.mask.shape
    small = np.int8 if q < 127 else np.int16
    if not walk_ties.any():  # each row's walk codes are 0..n-1: scatter
        seq = np.full(rows * width, q, dtype=small)
        seq[layout.base + walk] = counted
        return seq.reshape(rows, width), np.zeros(rows)
    end = np.iinfo(np.int32).max
    keys = np.full(rows * width, end, dtype=np.int32)
    keys[layout.flat] = walk.astype(np.int32) * (q + 1) + counted
    keys = np.sort(keys.reshape(rows, width), axis=1)
    real = keys != end
    joint, _ = tie_runs(np.where(real, keys, np.nan))
    return np.where(real, keys % (q + 1), q).astype(small), joint


def _descents(seq: np.ndarray, q: int) -> FloatArray:
    """Pairs i < j with ``seq[r, i] > seq[r, j]`` in each row, codes 0..q-1 (padding, q,
    at the end of a row, never counts)."""
    rows, width = seq.shape
    out = np.zeros(rows, dtype=np.int64)
    if q <= VALUE_PASSES:  # per value v: the items above v before each item at v
        codes = seq.astype(np.int8, copy=False)  # a byte per item: the passes are memory-bound
        for v in range(q - 1):
            before = np.cumsum(codes > v, axis=1, dtype=np.int32)
            out += np.einsum("ij,ij->i", before, (codes == v).astype(np.int32))
        return out.astype(np.float64)
    upper = np.triu(np.ones((width, width), dtype=bool), 1)
    step = max(1, (1 << 19) // max(1, width * width))
    for start in range(0, rows, step):
        part = seq[start : start + step]
        greater = (part[:, :, None] > part[:, None, :]) & upper
        out[start : start + step] = (
            greater.reshape(len(part), -1).view(np.uint8).sum(axis=1, dtype=np.int64)
        )
    return out.astype(np.float64)


__all__ = ["MAX_WIDTH", "DocCodes", "doc_codes", "kendall_within"]
