"""Pairwise statistics: Kendall's τ23 and pairwise accuracy acc23 with ties (Deutsch et
al. 2023, "Ties Matter"), tie calibration, WMT20's Kendall-like τ, and the pairwise
difference Pearson (PDP).

A pair of outputs is concordant when the metric and the humans order it the same way,
discordant when they order it the other way. Human ties are exact; metric differences of
at most ε count as metric ties (ε = 0: exact ties). With the pairs counted:

* acc23 = (C + T_both) / pairs: a tie is right only when both sides tie;
* τ23 = (C + T_both − D − T_human − T_metric) / pairs, which is 2·acc23 − 1;
* Kendall-like (WMT20): among the pairs whose human scores differ by at least a
  threshold, (C − D) / (C + D), a metric tie counting as discordant;
* PDP: Pearson's r of the pairs' human and metric differences, pooled over documents.

Documents are counted by comparing every pair in padded blocks (width² per row); a long
group (the pooled dataset) by sorting, O(n log² n), never listing its n²/2 pairs.

Tie calibration (:func:`calibrate_groups`) picks the ε that maximises acc23 (and so τ23):
the statistic only changes at the pairs' metric differences, so one sort of those
differences and a cumulative sum give its value at every candidate, O(p log p) for p
pairs, where recomputing it per candidate would cost O(p²).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import (
    BLOCK_CELLS,
    BoolArray,
    FloatArray,
    Groups,
    IntArray,
    count_greater_before,
)

# Rows up to this width compare every pair; wider ones (the pooled dataset) sort.
PAIRWISE_MAX = 256
# Tie calibration lists at most this many pairs (about 100 MiB of temporaries); beyond
# it, it searches a seeded sample of them, as mt-metrics-eval's ``sample_rate`` does.
CALIBRATION_MAX_PAIRS = 1 << 22


@dataclass(frozen=True, eq=False)
class RightPairs:
    """Per row: the pairs acc23 counts as right (concordant, or tied on both sides) and
    all its pairs."""

    right: FloatArray
    pairs: FloatArray

    def acc23(self) -> FloatArray:
        """(C + T_both) / pairs; NaN for a row without pairs."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.right / self.pairs, dtype=np.float64)

    def tau23(self) -> FloatArray:
        """(C + T_both − D − T_human − T_metric) / pairs = 2·acc23 − 1."""
        return np.asarray(2.0 * self.acc23() - 1.0, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class LikeCounts:
    """Kendall-like counts per row: the pairs whose human scores differ by at least the
    threshold, and how many of them the metric orders the same way (strictly)."""

    counted: FloatArray
    concordant: FloatArray

    def tau(self) -> FloatArray:
        """(C − D) / (C + D); NaN for a row without counted pairs."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(
                (2.0 * self.concordant - self.counted) / self.counted, dtype=np.float64
            )


# --- counting -----------------------------------------------------------------------


def _pair_blocks(
    x: FloatArray, y: FloatArray
) -> Iterator[tuple[slice, FloatArray, FloatArray, BoolArray | None]]:
    """Chunks of rows as (rows, x_j - x_i, y_j - y_i, both scored or None when all are),
    one column per pair i < j of a row's positions."""
    n_rows, width = x.shape
    n_pairs = width * (width - 1) // 2
    step = max(1, BLOCK_CELLS // max(1, n_pairs))
    for start in range(0, n_rows, step):
        part_x, part_y = x[start : start + step], y[start : start + step]
        missing = np.isnan(part_x) | np.isnan(part_y)
        scored = _upper_pairs(~missing, np.logical_and) if missing.any() else None
        yield (
            slice(start, start + step),
            _upper_pairs(part_x, np.subtract),
            _upper_pairs(part_y, np.subtract),
            scored,
        )


def _upper_pairs(values: npt.NDArray[Any], op: np.ufunc) -> npt.NDArray[Any]:
    """``op(values[:, j], values[:, i])`` for every i < j, in ``np.triu_indices`` order:
    one slice operation per i (contiguous, several times faster than gathering)."""
    rows, width = values.shape
    out = np.empty((rows, width * (width - 1) // 2), dtype=op(values[:1, :1], values[:1, :1]).dtype)
    offset = 0
    for i in range(width - 1):
        n = width - 1 - i
        op(values[:, i + 1 :], values[:, i : i + 1], out=out[:, offset : offset + n])
        offset += n
    return out


def _count(mask: BoolArray, scored: BoolArray | None = None) -> FloatArray:
    """Per row, the pairs in ``mask`` (and ``scored``, if given)."""
    if scored is not None:
        mask = mask & scored
    # Summing a uint8 view is faster than count_nonzero along an axis.
    counts = mask.view(np.uint8).sum(axis=1, dtype=np.int64)
    return np.asarray(counts, dtype=np.float64)


def _scored_rows(x: FloatArray, y: FloatArray) -> Iterator[tuple[int, FloatArray, FloatArray]]:
    """Each row's scored outputs (both sides not NaN), for the rows counted by sorting."""
    for row in range(x.shape[0]):
        keep = ~(np.isnan(x[row]) | np.isnan(y[row]))
        yield row, x[row, keep], y[row, keep]


def _agree(dx: FloatArray, dy: FloatArray) -> tuple[BoolArray, BoolArray]:
    """(human tie, the metric orders the pair as the humans do or the humans tie)."""
    human_tie = dy == 0
    return human_tie, human_tie | ((dx > 0) == (dy > 0))


def right_pairs(x: FloatArray, y: FloatArray, epsilon: float = 0.0) -> RightPairs:
    """Per row of two equally shaped 2-D arrays (x: metric, y: human; an output with
    NaN on either side takes no part): the pairs right for acc23, and all pairs."""
    if epsilon < 0:
        raise ValueError("epsilon must be non-negative")
    n_rows, width = x.shape
    right, pairs = np.zeros(n_rows), np.zeros(n_rows)
    if width > PAIRWISE_MAX:
        for row, xs, ys in _scored_rows(x, y):
            con, dis, human, metric, both = pooled_pair_counts(xs, ys, epsilon)
            right[row], pairs[row] = con + both, con + dis + human + metric + both
        return RightPairs(right, pairs)
    for rows, dx, dy, scored in _pair_blocks(x, y):
        human_tie, agree = _agree(dx, dy)
        metric_tie = np.abs(dx) <= epsilon
        right[rows] = _count((metric_tie == human_tie) & agree, scored)
        pairs[rows] = dx.shape[1] if scored is None else _count(scored)
    return RightPairs(right, pairs)


def like_counts(x: FloatArray, y: FloatArray, threshold: float) -> LikeCounts:
    """Kendall-like counts of each row (x: metric, y: human; NaN takes no part)."""
    if not threshold > 0:
        raise ValueError("the Kendall-like threshold must be positive")
    n_rows, width = x.shape
    counted, concordant = np.zeros(n_rows), np.zeros(n_rows)
    if width > PAIRWISE_MAX:
        for row, xs, ys in _scored_rows(x, y):
            counted[row], concordant[row] = pooled_like_counts(xs, ys, threshold)
    else:
        for rows, dx, dy, scored in _pair_blocks(x, y):
            # As WMT: a pair counts when |human difference| >= threshold.
            kept = np.abs(dy) >= threshold
            agree = kept & (((dy > 0) & (dx > 0)) | ((dy < 0) & (dx < 0)))
            counted[rows], concordant[rows] = _count(kept, scored), _count(agree, scored)
    return LikeCounts(counted, concordant)


def dense_codes(values: FloatArray) -> tuple[FloatArray, IntArray]:
    """The distinct values (ascending) and each value's code among them."""
    unique, codes = np.unique(values, return_inverse=True)
    return unique, codes.astype(np.int64).reshape(-1)


def count_within(sorted_values: FloatArray, start: FloatArray, epsilon: float) -> IntArray:
    """For each v in ``start``: how many of ``sorted_values`` have ``s - v <= epsilon``,
    with the difference rounded as the pairwise comparison rounds it (it is monotone in
    s, so a binary search needs only a short fix-up)."""
    n = sorted_values.size
    guess = np.searchsorted(sorted_values, start + epsilon, side="right")
    while True:
        up = (guess < n) & (sorted_values[np.minimum(guess, n - 1)] - start <= epsilon)
        down = (guess > 0) & (sorted_values[np.maximum(guess - 1, 0)] - start > epsilon)
        if not (up.any() or down.any()):
            return guess.astype(np.int64)
        guess = guess + up - down


def _first_at_least(sorted_values: FloatArray, start: FloatArray, threshold: float) -> IntArray:
    """For each v in ``start``: the first index with ``s - v >= threshold`` (rounded as
    the pairwise comparison rounds it)."""
    n = sorted_values.size
    guess = np.searchsorted(sorted_values, start + threshold, side="left")
    while True:
        down = (guess > 0) & (sorted_values[np.maximum(guess - 1, 0)] - start >= threshold)
        up = (guess < n) & (sorted_values[np.minimum(guess, n - 1)] - start < threshold)
        if not (up.any() or down.any()):
            return guess.astype(np.int64)
        guess = guess - down + up


def _greater_after(codes: IntArray, starts: IntArray) -> float:
    """Σ over i of ``#{j >= starts[i] : codes[j] > codes[i]}`` (codes dense ranks)."""
    n = codes.size
    at_most = np.cumsum(np.bincount(codes, minlength=int(codes.max()) + 1))
    above_all = n - at_most[codes]
    before = count_greater_before(codes, starts, codes)
    return float(np.sum(above_all - before))


def pooled_pair_counts(
    x: FloatArray, y: FloatArray, epsilon: float = 0.0
) -> tuple[float, float, float, float, float]:
    """(C, D, T_human only, T_metric only, T_both) over all pairs of one group of scored
    outputs, by sorting (never listing the pairs)."""
    n = x.size
    if n < 2:
        return (0.0, 0.0, 0.0, 0.0, 0.0)
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    unique_x, x_codes = dense_codes(xs)
    _, y_codes = dense_codes(ys)
    # last_x[i]: how many distinct metric values lie within ε above x_i; the outputs
    # after i up to ``ends[i]`` (exclusive) are metric ties of i.
    last_x = count_within(unique_x, xs, epsilon) - 1
    ends = np.searchsorted(x_codes, last_x, side="right").astype(np.int64)
    positions = np.arange(n, dtype=np.int64)
    ties_metric = float(np.sum(ends - positions - 1))
    y_sizes = np.bincount(y_codes).astype(np.float64)
    ties_human = float(np.sum(y_sizes * (y_sizes - 1) / 2))
    # Tied in both: within each human value, the metric ties, by one composite key.
    width = np.int64(unique_x.size)
    keys = y_codes * width + x_codes
    by_key = np.argsort(keys, kind="stable")
    sorted_keys = keys[by_key]
    reach = np.searchsorted(sorted_keys, y_codes[by_key] * width + last_x[by_key], side="right")
    ties_both = float(np.sum(reach - np.arange(n) - 1))
    # Concordant: j beyond i's metric ties (so x_j - x_i > ε) with y_j > y_i.
    concordant = _greater_after(y_codes, ends)
    pairs = n * (n - 1) / 2
    discordant = pairs - concordant - ties_human - ties_metric + ties_both
    return (
        concordant,
        discordant,
        ties_human - ties_both,
        ties_metric - ties_both,
        ties_both,
    )


def pooled_like_counts(x: FloatArray, y: FloatArray, threshold: float) -> tuple[float, float]:
    """(counted, concordant) Kendall-like pairs of one group, by sorting."""
    n = x.size
    if n < 2:
        return (0.0, 0.0)
    order = np.argsort(y, kind="stable")
    xs, ys = x[order], y[order]
    _, x_codes = dense_codes(xs)
    # Pairs (i, j) with y_j - y_i >= threshold: j from starts[i] on.
    starts = _first_at_least(ys, ys, threshold)
    counted = float(np.sum(n - starts))
    return counted, _greater_after(x_codes, starts)


# --- tie calibration ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TieCalibration:
    """The ε that maximises acc23 (averaged over the groups as asked), with the value
    there. With ``curve=True``, ``thresholds`` and ``values`` trace the statistic at
    every ε where it changes (0, then each such metric difference, ascending). When the
    pairs were more than the limit, the search ran on a seeded sample of ``n_searched``
    of the ``n_pairs`` pairs (``sampled``) and ``value`` (and ``values``) estimate it."""

    epsilon: float
    value: float
    n_pairs: int
    n_searched: int
    sampled: bool
    thresholds: FloatArray | None = field(default=None, repr=False)
    values: FloatArray | None = field(default=None, repr=False)
    # Per group, the pairs right for acc23 at ``epsilon`` (None when sampled): what
    # :func:`right_pairs` would count, for correlate() to reuse instead of recounting.
    group_right: FloatArray | None = field(default=None, repr=False)


def calibrate_groups(
    metric: FloatArray,
    human: FloatArray,
    groups: Groups,
    *,
    group_weights: FloatArray | None = None,
    max_pairs: int = CALIBRATION_MAX_PAIRS,
    rng: np.random.Generator | None = None,
    curve: bool = False,
) -> TieCalibration:
    """The metric tie threshold ε that maximises acc23 (Deutsch et al. 2023).

    ``metric`` and ``human`` hold scored outputs only (no NaN), grouped by ``groups``
    (documents, or :meth:`Groups.single` for all pairs pooled). The statistic is the
    mean of the groups' acc23 weighted by ``group_weights`` (default 1 each: the macro
    average, as mt-metrics-eval's ``tau_optimization``); groups with fewer than two
    outputs take no part. Among equally good thresholds the smallest is chosen. τ23 is
    2·acc23 − 1, so the same ε maximises it. ``rng`` draws the sample of pairs when
    there are more than ``max_pairs`` (default: a generator seeded with 0). ``curve``
    also returns the statistic at every threshold (one full sort of the pairs).
    """
    sizes = groups.sizes.astype(np.float64)
    used = sizes >= 2
    weights = np.ones(groups.n_groups) if group_weights is None else group_weights
    weights = np.where(used, weights, 0.0)
    total_weight = float(weights.sum())
    n_pairs = int(np.sum(sizes * (sizes - 1) / 2))
    if total_weight == 0:
        return TieCalibration(0.0, float("nan"), 0, 0, False, np.zeros(1), np.full(1, np.nan))
    # Each pair's effect on the statistic once ε reaches its metric difference: a
    # human tie becomes a tie on both sides (+1), a concordant pair a metric tie (−1).
    group_pairs = sizes * (sizes - 1) / 2
    per_pair = weights / np.maximum(group_pairs, 1.0) / total_weight
    rng = rng or np.random.default_rng(0)
    keep = min(1.0, max_pairs / n_pairs) if n_pairs else 1.0
    right, diffs, effects, listed_in = _pair_effects(
        metric, human, groups, per_pair, keep, max_pairs, rng
    )
    if np.any(used & (weights <= 0)):
        listed_in = None  # a weightless group's effects are 0: their signs are lost
    # The statistic at ε = 0, from the pairs each group gets right (all of them).
    start = float(np.sum(weights * right / np.maximum(group_pairs, 1.0)) / total_weight)
    n_searched = diffs.size
    sampled = keep < 1.0
    if sampled and n_searched:
        effects = effects * (n_pairs / n_searched)  # estimate the full curve's steps
    if not curve and diffs.size > _SORT_ALL_PAIRS:
        epsilon, value = _bounded_search(diffs, effects, start)
        return TieCalibration(
            epsilon,
            value,
            n_pairs,
            n_searched,
            sampled,
            group_right=_right_at(epsilon, right, diffs, effects, listed_in),
        )
    thresholds, values = _curve(diffs, effects, start)
    best = _first_best(values)
    epsilon = float(thresholds[best])
    return TieCalibration(
        epsilon,
        float(values[best]),
        n_pairs,
        n_searched,
        sampled,
        thresholds,
        values,
        _right_at(epsilon, right, diffs, effects, listed_in),
    )


def _right_at(
    epsilon: float,
    right: FloatArray,
    diffs: FloatArray,
    effects: FloatArray,
    listed_in: IntArray | None,
) -> FloatArray | None:
    """Per group, the pairs right at ``epsilon``: those right at 0, plus one for each
    listed pair whose change (+1 or −1, the sign of its effect) ε reaches. None when
    the pairs were sampled (not all listed)."""
    if listed_in is None:
        return None
    reached = diffs <= epsilon
    steps = np.bincount(
        _select(reached, listed_in),
        weights=np.sign(_select(reached, effects)),
        minlength=right.size,
    )
    return np.asarray(right + steps, dtype=np.float64)


# Pairs up to which the curve is simply sorted; beyond, the bounded search.
_SORT_ALL_PAIRS = 1 << 16


def _curve(diffs: FloatArray, effects: FloatArray, start: float) -> tuple[FloatArray, FloatArray]:
    """The statistic after each distinct difference: sort, cumulative sum, run ends (the
    order within a run of equal differences does not matter)."""
    order = np.argsort(diffs)
    diffs, steps = diffs[order], np.cumsum(effects[order])
    last = np.empty(diffs.size, dtype=bool)
    last[:-1] = diffs[1:] != diffs[:-1]
    last[-1:] = True
    return (
        np.concatenate([[0.0], _select(last, diffs)]),
        np.concatenate([[start], start + _select(last, steps)]),
    )


def _first_best(values: FloatArray) -> int:
    # Values equal in exact arithmetic may differ in the last bits of a long cumulative
    # sum; the smallest threshold within rounding of the maximum wins.
    top = float(values.max())
    return int(np.flatnonzero(values >= top - 1e-12 * max(1.0, abs(top)))[0])


def _bounded_search(diffs: FloatArray, effects: FloatArray, start: float) -> tuple[float, float]:
    """The curve's maximum without sorting every pair. Bin the differences by their
    leading bits (monotone for non-negative doubles, no search); the statistic at each
    bin's end is a cumulative sum of bin totals, and no point inside bin k can exceed
    the value before it plus the bin's positive steps. Only the bins whose bound reaches
    the best bin end are sorted."""
    bits = diffs.view(np.int64)
    low = int(bits.min())
    shift = max(0, (int(bits.max()) - low).bit_length() - 16)
    bins = (bits - low) >> shift
    n_bins = int(bins.max()) + 1
    totals = np.bincount(bins, weights=effects, minlength=n_bins)
    rises = np.bincount(bins, weights=np.maximum(effects, 0.0), minlength=n_bins)
    ends = start + np.cumsum(totals)
    before = np.concatenate([[start], ends[:-1]])
    top = max(start, float(ends.max()))
    open_bins = before + rises >= top - 1e-12 * max(1.0, abs(top))
    chosen = open_bins[bins]
    sub_bins, sub_diffs = _select(chosen, bins), _select(chosen, diffs)
    sub_effects = _select(chosen, effects)
    order = np.argsort(sub_diffs)
    sub_bins, sub_diffs = sub_bins[order], sub_diffs[order]
    steps = np.cumsum(sub_effects[order])
    # Restart the running sum at each bin from the statistic's value before the bin.
    new_bin = np.r_[True, sub_bins[1:] != sub_bins[:-1]]
    restart = np.r_[0.0, steps][np.flatnonzero(new_bin)]
    values = before[sub_bins] + steps - restart[np.cumsum(new_bin) - 1]
    last = np.r_[sub_diffs[1:] != sub_diffs[:-1], True]
    thresholds = np.concatenate([[0.0], _select(last, sub_diffs)])
    candidates = np.concatenate([[start], _select(last, values)])
    best = _first_best(candidates)
    return float(thresholds[best]), float(candidates[best])


def _select(mask: BoolArray, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``values[mask]`` (mask of values' shape, row-major order): np.compress on the
    flattened arrays, measured 2-5 times faster here than boolean indexing on the
    millions of pairs the ε search lists (same values, same order)."""
    return np.compress(mask.ravel(), values.ravel())


def _effects(
    dx: FloatArray, dy: FloatArray, weight: FloatArray, scored: BoolArray | None
) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray]:
    """For rows of pairs: how many each row gets right at ε = 0, then the metric
    differences of the scored pairs that change the statistic as ε grows, and by how
    much (``weight``: one per row, as a column)."""
    human_tie, agree = _agree(dx, dy)
    metric_tie = dx == 0
    counts = _count((metric_tie == human_tie) & agree, scored)
    change = ~metric_tie & agree
    if scored is not None:
        change &= scored
    sign = np.where(_select(change, human_tie), 1.0, -1.0)
    if np.all(weight == weight.flat[0]):  # one weight for the chunk: no per-pair gather
        effects = sign * weight.flat[0]
    else:
        # one weight per row (a column): each row's, once per selected pair of it
        per_row = change.view(np.uint8).sum(axis=1, dtype=np.intp)
        effects = sign * np.repeat(weight[:, 0], per_row)
    return counts, np.abs(_select(change, dx)), effects, change


def _pair_effects(
    x: FloatArray,
    y: FloatArray,
    groups: Groups,
    per_pair: FloatArray,
    keep: float,
    max_pairs: int,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray, FloatArray, IntArray | None]:
    """Per group the pairs right at ε = 0 (all of them), and the differences and effects
    of the pairs listed (a sample of them when ``keep`` < 1), with the group of each
    listed pair when all are listed (else None)."""
    right = np.zeros(groups.n_groups)
    diffs: list[FloatArray] = []
    effects: list[FloatArray] = []
    listed_in: list[IntArray] = []

    def add(
        dx: FloatArray,
        dy: FloatArray,
        weight: FloatArray,
        scored: BoolArray | None,
        rows: IntArray | int,
    ) -> FloatArray:
        if keep < 1.0:
            listed = rng.random(dx.shape) < keep
            counts = _effects(dx, dy, weight, scored)[0]
            _, d, e, _ = _effects(dx, dy, weight, listed if scored is None else listed & scored)
        else:
            counts, d, e, change = _effects(dx, dy, weight, scored)
            if isinstance(rows, int):
                listed_in.append(np.full(d.size, rows, dtype=np.intp))
            else:
                # row-major like the selection: each row's group, once per change
                per_row = change.view(np.uint8).sum(axis=1, dtype=np.intp)
                listed_in.append(np.repeat(rows, per_row))
        diffs.append(d)
        effects.append(e)
        return counts

    if groups.n_groups == 1 and keep < 1.0:
        # One pooled group too large to list: count it by sorting, draw pairs uniformly.
        n = x.size
        con, _, _, _, both = pooled_pair_counts(x, y, 0.0)
        right[0] = con + both
        i = rng.integers(0, n, size=max_pairs)
        j = rng.integers(0, n - 1, size=max_pairs)
        j = j + (j >= i)
        dx, dy = x[j] - x[i], y[j] - y[i]
        _, d, e, _ = _effects(dx[None, :], dy[None, :], per_pair[:1, None], None)
        return right, d, e, None
    for block in groups.blocks:
        width = block.index.shape[1]
        if width <= PAIRWISE_MAX:
            bx, by = block.gather(x), block.gather(y)
            weight_rows = per_pair[block.rows]
            for rows, dx, dy, scored in _pair_blocks(bx, by):
                in_rows = block.rows[rows]
                right[in_rows] = add(dx, dy, weight_rows[rows][:, None], scored, in_rows)
            continue
        for r, g in enumerate(block.rows):
            items = block.index[r, block.mask[r]]
            gx, gy = x[items], y[items]
            step = max(1, BLOCK_CELLS // max(1, items.size))
            for a in range(0, items.size - 1, step):
                left = np.arange(a, min(a + step, items.size - 1))
                later = items.size - 1 - left  # pairs (k, k+1 .. n-1) for each k in left
                i = np.repeat(left, later)
                j = i + 1 + np.arange(i.size) - np.repeat(np.cumsum(later) - later, later)
                dx, dy = (gx[j] - gx[i])[None, :], (gy[j] - gy[i])[None, :]
                right[g] += add(dx, dy, per_pair[g : g + 1, None], None, int(g))[0]
    every = keep >= 1.0
    if not diffs:
        return right, np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.intp) if every else None
    groups_of = np.concatenate(listed_in) if every else None
    return right, np.concatenate(diffs), np.concatenate(effects), groups_of


# --- pairwise difference Pearson -----------------------------------------------------


def pdp_sums(x: FloatArray, y: FloatArray, groups: Groups) -> FloatArray:
    """Per group: (Σ Δx Δy, Σ Δx², Σ Δy²) over its pairs (groups × 3), from centred sums:
    Σ_{i<j} (a_i − a_j)(b_i − b_j) = n Σ (a − ā)(b − b̄). Scored outputs only."""
    count = groups.sizes.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = np.bincount(groups.codes, weights=x, minlength=groups.n_groups) / count
        mean_y = np.bincount(groups.codes, weights=y, minlength=groups.n_groups) / count
    dx, dy = x - mean_x[groups.codes], y - mean_y[groups.codes]
    sums = np.stack(
        [
            np.bincount(groups.codes, weights=v, minlength=groups.n_groups)
            for v in (dx * dy, dx * dx, dy * dy)
        ],
        axis=1,
    )
    return np.asarray(sums * count[:, None], dtype=np.float64)


def pdp_from_sums(totals: FloatArray) -> FloatArray:
    """PDP from summed (Σ Δx Δy, Σ Δx², Σ Δy²) rows (... × 3); NaN where a side has no
    spread. The pairs' differences have mean 0 (each pair counts both ways, as in
    mt-metrics-eval), so Pearson's r of them is this uncentred ratio."""
    cross, sxx, syy = totals[..., 0], totals[..., 1], totals[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(cross / np.sqrt(sxx * syy), -1.0, 1.0)
    return np.asarray(np.where((sxx > 0) & (syy > 0), r, np.nan), dtype=np.float64)
