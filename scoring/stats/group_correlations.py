"""One correlation coefficient per group, every group at once (numpy, no Python loop
over groups): the kernels under sample level, and under dataset and system level (one
pooled row).

Rows of two equally shaped 2-D arrays are correlated together, NaN marking padding
(:func:`row_correlations`); :func:`group_correlations` lays a :class:`Groups` index out
in such blocks. The settings are :mod:`scoring.stats.settings`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.stats

from scoring.stats.kendall_within import DocCodes, kendall_within
from scoring.stats.pairwise import like_counts, right_pairs
from scoring.stats.ranking import (
    BoolArray,
    FloatArray,
    Groups,
    IntArray,
    count_descents,
    rank_rows,
    ranks_within,
    tie_runs,
)
from scoring.stats.settings import DEFAULT_OPTIONS, Average, Coefficient, DegeneratePolicy, Options

# Kendall's pairwise comparisons cost width² per row; wider rows use scipy's
# O(n log n) algorithm instead.
KENDALL_PAIRWISE_MAX = 256


@dataclass(frozen=True, eq=False)
class GroupCorrelations:
    """Raw per-group coefficients: NaN where a group has < 2 pairs or is constant (for
    Kendall-like: has no pair whose human scores differ enough). ``size`` is a group's
    weight in a micro average: its scored outputs (Kendall-like: its counted pairs)."""

    r: FloatArray
    n: IntArray
    constant: BoolArray
    size: FloatArray

    def values(self, policy: DegeneratePolicy) -> FloatArray:
        """Each group's contribution under ``policy``; NaN marks a skipped group."""
        if policy is DegeneratePolicy.ZERO:
            return np.where(self.constant & (self.n >= 2), 0.0, self.r)
        return self.r

    def weights(self, policy: DegeneratePolicy, average: Average) -> FloatArray:
        """Each group's weight in the average (0 for a skipped group)."""
        weight = np.ones(self.r.size) if average is Average.MACRO else self.size
        return np.where(np.isnan(self.values(policy)), 0.0, weight)


def as_scores(values: npt.ArrayLike, name: str) -> FloatArray:
    """A 1-D float64 view of ``values`` (no copy when it already is one)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    return array


def as_groups(keys: Groups | npt.ArrayLike, n_items: int, name: str) -> Groups:
    """A :class:`Groups` index, built from keys unless one is passed (reuse one)."""
    groups = keys if isinstance(keys, Groups) else Groups.from_keys(keys)
    if groups.n_items != n_items:
        raise ValueError(f"{name} has {groups.n_items} items, the scores have {n_items}")
    return groups


def row_correlations(
    x: FloatArray,
    y: FloatArray,
    coefficient: Coefficient,
    options: Options = DEFAULT_OPTIONS,
) -> GroupCorrelations:
    """The coefficient of each row of two equally shaped 2-D arrays; NaN marks padding.
    A row's PDP is its Pearson r (the pairs' differences of one group correlate as the
    values do); SPA is not a per-row statistic."""
    mask = ~(np.isnan(x) | np.isnan(y))
    n = mask.sum(axis=1).astype(np.intp)
    if coefficient in (Coefficient.ACC23, Coefficient.KENDALL_23, Coefficient.KENDALL_LIKE):
        return _pairwise_rows(x, y, n, coefficient, options)
    if coefficient is Coefficient.SPA:
        raise ValueError("spa compares systems: compute it with correlate() at system level")
    x = np.where(mask, x, np.nan)
    y = np.where(mask, y, np.nan)
    # Constant means every value equals the row's maximum (not a zero variance: a
    # computed variance can be a rounding error away from zero).
    constant = _constant(x) | _constant(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        if coefficient in (Coefficient.PEARSON, Coefficient.PDP):
            r = _pearson_rows(x, y, mask, n)
        elif coefficient is Coefficient.SPEARMAN:
            r = _pearson_rows(rank_rows(x), rank_rows(y), mask, n)
        else:
            r = _kendall_rows(x, y, n, coefficient)
    r = np.where(constant | (n < 2), np.nan, r)
    return GroupCorrelations(r=r, n=n, constant=constant & (n >= 2), size=n.astype(np.float64))


def _pairwise_rows(
    x: FloatArray, y: FloatArray, n: IntArray, coefficient: Coefficient, options: Options
) -> GroupCorrelations:
    if coefficient is Coefficient.KENDALL_LIKE:
        like = like_counts(x, y, options.threshold)
        # No pair differing enough in human scores: nothing to correlate, as constant.
        constant = (like.counted == 0) & (n >= 2)
        r = np.where(n >= 2, like.tau(), np.nan)
        return GroupCorrelations(r=r, n=n, constant=constant, size=like.counted)
    counts = right_pairs(x, y, options.epsilon)
    r = counts.acc23() if coefficient is Coefficient.ACC23 else counts.tau23()
    # Every pair counts, ties included: a constant group has a value like any other.
    return GroupCorrelations(
        r=np.where(n >= 2, r, np.nan),
        n=n,
        constant=np.zeros(n.size, dtype=bool),
        size=n.astype(np.float64),
    )


def _constant(x: FloatArray) -> BoolArray:
    top = np.where(np.isnan(x), -np.inf, x).max(axis=1, initial=-np.inf)
    return np.asarray(np.all(np.isnan(x) | (x == top[:, None]), axis=1), dtype=bool)


def _pearson_rows(x: FloatArray, y: FloatArray, mask: BoolArray, n: IntArray) -> FloatArray:
    # Centre first (as scipy does): raw sums of squares lose precision.
    dx = np.where(mask, x - np.where(mask, x, 0.0).sum(axis=1, keepdims=True) / n[:, None], 0.0)
    dy = np.where(mask, y - np.where(mask, y, 0.0).sum(axis=1, keepdims=True) / n[:, None], 0.0)
    r = np.einsum("ij,ij->i", dx, dy) / np.sqrt(
        np.einsum("ij,ij->i", dx, dx) * np.einsum("ij,ij->i", dy, dy)
    )
    return np.asarray(np.clip(r, -1.0, 1.0), dtype=np.float64)


def _kendall_rows(
    x: FloatArray, y: FloatArray, n: IntArray, coefficient: Coefficient
) -> FloatArray:
    rows, width = x.shape
    variant = "b" if coefficient is Coefficient.KENDALL_B else "c"
    if width > KENDALL_PAIRWISE_MAX:
        out = np.full(rows, np.nan)
        for row in range(rows):
            keep = ~np.isnan(x[row])
            # Constant rows are NaN anyway; skipping them avoids scipy's warning.
            if keep.sum() >= 2 and np.ptp(x[row, keep]) > 0 and np.ptp(y[row, keep]) > 0:
                out[row] = scipy.stats.kendalltau(
                    x[row, keep], y[row, keep], variant=variant
                ).statistic
        return out
    # Sort each row by x, then y (padding last). A pair i < j is then discordant
    # exactly when y falls, because pairs tied in x are in ascending y. The tie counts
    # give the rest: S = C - D = pairs - ties_x - ties_y + ties_xy - 2 D.
    order = np.lexsort((y, x), axis=1)
    xs = np.take_along_axis(x, order, axis=1)
    ys = np.take_along_axis(y, order, axis=1)
    tied_x, classes_x = tie_runs(xs)
    tied_y, classes_y = tie_runs(np.sort(y, axis=1))
    tied_xy, _ = tie_runs(xs, ys)
    count = n.astype(np.float64)
    pairs = count * (count - 1) / 2
    s = pairs - tied_x - tied_y + tied_xy - 2 * count_descents(ys)
    if variant == "b":
        return np.asarray(s / np.sqrt((pairs - tied_x) * (pairs - tied_y)), dtype=np.float64)
    classes = np.minimum(classes_x, classes_y).astype(np.float64)
    return np.asarray(2 * s / (count**2 * (classes - 1) / classes), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class DocRanks:
    """A column's ranks within each group (:func:`~scoring.stats.ranking.ranks_within`),
    centred on the group's mean rank, and each group's sum of their squares: what every
    Spearman cell of a matrix that shares the column needs of it, computed once."""

    groups: Groups
    centred: FloatArray
    squares: FloatArray


def doc_ranks(values: FloatArray, groups: Groups) -> DocRanks:
    """:class:`DocRanks` of a column without NaN (NaN for groups of fewer than two)."""
    ranks = ranks_within(values, groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(groups.codes, weights=ranks, minlength=groups.n_groups) / groups.sizes
    centred = ranks - mean[groups.codes]
    squares = np.asarray(
        np.bincount(groups.codes, weights=centred * centred, minlength=groups.n_groups),
        dtype=np.float64,
    )
    return DocRanks(groups=groups, centred=centred, squares=squares)


def spearman_within(x: DocRanks, y: DocRanks) -> GroupCorrelations:
    """Spearman's ρ within each group: Pearson's r of the ranks, from the centred ranks'
    products summed per group. A group is constant exactly when its ranks are (all the
    group's mean: centred to exactly 0)."""
    groups = x.groups
    if y.groups.n_items != groups.n_items or y.groups.n_groups != groups.n_groups:
        raise ValueError("the two columns' ranks are of different groups")
    n = groups.sizes
    products = np.bincount(groups.codes, weights=x.centred * y.centred, minlength=groups.n_groups)
    constant = ((x.squares == 0) | (y.squares == 0)) & (n >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(products / np.sqrt(x.squares * y.squares), -1.0, 1.0)
    r = np.where(constant | (n < 2), np.nan, r)
    return GroupCorrelations(r=r, n=n, constant=constant, size=n.astype(np.float64))


def group_correlations(
    x: FloatArray,
    y: FloatArray,
    groups: Groups,
    coefficient: Coefficient,
    options: Options = DEFAULT_OPTIONS,
    ranks: tuple[DocRanks, DocRanks] | None = None,
    codes: tuple[DocCodes, DocCodes] | None = None,
) -> GroupCorrelations:
    """The coefficient within each group, all groups at once (no NaN in x or y).
    Spearman's is always :func:`spearman_within` of the two columns' :func:`doc_ranks`
    (``ranks``: those, when the caller has them: a matrix ranks each column once);
    Kendall's τ-b and τ-c come from the two columns'
    :func:`~scoring.stats.kendall_within.doc_codes` when the caller has them (the same
    values)."""
    if coefficient is Coefficient.SPEARMAN:
        if ranks is None:
            ranks = (doc_ranks(x, groups), doc_ranks(y, groups))
        return spearman_within(*ranks)
    if codes is not None and coefficient in (Coefficient.KENDALL_B, Coefficient.KENDALL_C):
        variant = "b" if coefficient is Coefficient.KENDALL_B else "c"
        tau, n = kendall_within(*codes, variant=variant)
        flat = (codes[0].classes <= 1) | (codes[1].classes <= 1)
        return GroupCorrelations(r=tau, n=n, constant=flat & (n >= 2), size=n.astype(np.float64))
    r = np.full(groups.n_groups, np.nan)
    constant = np.zeros(groups.n_groups, dtype=bool)
    size = groups.sizes.astype(np.float64)
    for block in groups.blocks:
        part = row_correlations(block.gather(x), block.gather(y), coefficient, options)
        r[block.rows] = part.r
        constant[block.rows] = part.constant
        size[block.rows] = part.size
    return GroupCorrelations(r=r, n=groups.sizes, constant=constant, size=size)
