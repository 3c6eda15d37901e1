"""Bootstrap confidence intervals, resampling documents, systems or both.

Deutsch et al. (2021) show that resampling only documents understates the uncertainty
of a correlation when the systems are a sample too, and recommend resampling both.
Draws come from a caller's seeded :class:`numpy.random.Generator` and are kept in a
:class:`Resamples` object, so every metric × aspect cell (and both sides of a paired
test) sees the same resampled datasets.

Cost. Each resample is computed exactly, but how depends on the case:

* sample level, documents only: the per-document correlations are computed once and
  each resample is the mean of the drawn ones (one gather of B × documents values);
  PDP: per-document sums of the pairs' products, summed over the drawn documents;
* system level, any unit: per (document, system) sums, then B rows of system means;
  SPA (systems only): the pairs' p-values are computed once and each resample weighs
  the pairs of drawn systems;
* dataset level, Spearman: each output's multiplicity in a resample (its document's
  draw count times its system's) weighs one sort of each side done once: per resample
  the average ranks are cumulative sums of the weights per distinct value, and r is
  the weighted Pearson of the centred ranks, a block of resamples at a time (the
  resampled dataset is never materialised); O(B · n) after one O(n log n) sort;
* dataset level, Pearson (and PDP, which is Pearson there): weighted sufficient
  statistics per document or cell. A resample whose variance is within rounding of
  zero next to its sums is recomputed exactly, so every resample follows
  :func:`~scoring.stats.correlation.correlate`'s one rule for constant data;
* dataset level, Kendall's τ-b, τ-c, τ23, acc23 and Kendall-like: the same
  multiplicities weigh pair counts (concordant pairs from a tree over the distinct
  human values, ties from windows of equal or ε-close values) built once, a block of
  resamples at a time (:mod:`scoring.stats.weighted_pairs`); O(B · n · log2 of the
  distinct values) after the sorts;
* otherwise (sample level with systems resampled) each resample is materialised and
  recomputed: about B times the cost of :func:`~scoring.stats.correlation.correlate`
  (use fewer resamples on big data).

acc23 and τ23 keep the ε they were given (tie-calibrated once on the full data, as
mt-metrics-eval's pairwise permutation test keeps each metric's ε).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import scoring.stats.weighted_pairs as weighted_pairs
from scoring.stats.correlation import CorrelationResult, correlate, system_sums
from scoring.stats.draws import Resamples as Resamples
from scoring.stats.draws import Unit as Unit
from scoring.stats.draws import draw_resamples as draw_resamples
from scoring.stats.group_correlations import (
    GroupCorrelations,
    as_scores,
    group_correlations,
    row_correlations,
)
from scoring.stats.pairwise import pdp_from_sums, pdp_sums
from scoring.stats.ranking import BoolArray, FloatArray, IntArray
from scoring.stats.settings import (
    DEFAULT_OPTIONS,
    Average,
    Coefficient,
    DegeneratePolicy,
    Level,
    Options,
    Settings,
    unsupported,
)
from scoring.stats.spa import resampled_spa

# A pooled resample whose variance is below this share of its raw sum of squares has
# lost too many digits to cancellation (about 10 of 16 left): it is recomputed exactly.
NEAR_CONSTANT = 1e-6


@dataclass(frozen=True)
class ConfidenceInterval:
    """A percentile bootstrap interval. ``n_undefined`` resamples had no usable group
    (every drawn document skipped) and were left out of the percentiles."""

    low: float
    high: float
    alpha: float
    unit: Unit
    resamples: int
    n_undefined: int


def bootstrap_distribution(
    plan: Resamples,
    metric: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
    average: Average = Average.MACRO,
    options: Options = DEFAULT_OPTIONS,
    estimate: CorrelationResult | None = None,
    totals: tuple[FloatArray, FloatArray] | None = None,
) -> FloatArray:
    """The correlation recomputed on each resample in ``plan`` (NaN where undefined).

    ``estimate``, the :func:`~scoring.stats.correlation.correlate` result for the same
    data and settings, saves recomputing the per-document values at sample level (and
    SPA's p-values); ``totals``, both sides' per-system sums over every output
    (:func:`~scoring.stats.correlation.system_totals`), the system level's sums when
    only systems are resampled and every pair is valid.
    """
    refusal = unsupported(coefficient, level, average=average)
    if refusal is not None:
        raise ValueError(refusal.message)
    x = as_scores(metric, "metric")
    y = as_scores(human, "human")
    if x.size != plan.docs.n_items or y.size != x.size:
        raise ValueError("metric, human and the resampled keys must have one entry per output")
    valid = np.isfinite(x) & np.isfinite(y)
    settings = Settings(level, coefficient, policy, average, options)
    if coefficient is Coefficient.SPA:
        return _spa(plan, x, y, settings, estimate)
    if level is Level.SAMPLE and plan.system_draws is None:
        if coefficient is Coefficient.PDP:
            return _pdp_documents(plan, x, y, valid)
        values, weights = _per_document(plan, x, y, valid, settings, estimate)
        return _weighted_document_mean(plan, values, weights)
    if level is Level.SYSTEM:
        return _system_level(plan, x, y, valid, settings, totals)
    if level is Level.DATASET and coefficient in (Coefficient.PEARSON, Coefficient.PDP):
        return _dataset_pearson(plan, x, y, valid, settings)
    if level is Level.DATASET and coefficient is Coefficient.SPEARMAN:
        return _dataset_spearman(plan, x, y, valid, settings)
    if level is Level.DATASET and coefficient.value in weighted_pairs.STATISTICS:
        return _dataset_pairs(plan, x, y, valid, settings)
    return _recompute_each(plan, x, y, valid, settings)


def bootstrap_ci(
    plan: Resamples,
    metric: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
    average: Average = Average.MACRO,
    options: Options = DEFAULT_OPTIONS,
    alpha: float = 0.05,
    estimate: CorrelationResult | None = None,
) -> ConfidenceInterval:
    """Percentile bootstrap ``1 - alpha`` interval of the correlation, over ``plan``.

    Draw ``plan`` once with :func:`draw_resamples` and reuse it for every cell.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie in (0, 1)")
    values = bootstrap_distribution(
        plan,
        metric,
        human,
        level=level,
        coefficient=coefficient,
        policy=policy,
        average=average,
        options=options,
        estimate=estimate,
    )
    finite = values[np.isfinite(values)]
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2]) if finite.size else (np.nan, np.nan)
    return ConfidenceInterval(
        low=float(low),
        high=float(high),
        alpha=alpha,
        unit=plan.unit,
        resamples=plan.size,
        n_undefined=int(values.size - finite.size),
    )


def _per_document(
    plan: Resamples,
    x: FloatArray,
    y: FloatArray,
    valid: BoolArray,
    settings: Settings,
    estimate: CorrelationResult | None,
) -> tuple[FloatArray, FloatArray]:
    if estimate is not None:
        given = Settings(
            estimate.level,
            estimate.coefficient,
            estimate.policy,
            estimate.average,
            estimate.options,
        )
        if (
            given != settings
            or estimate.per_group is None
            or estimate.weights is None
            or estimate.per_group.size != plan.docs.n_groups
        ):
            raise ValueError("estimate was computed with other settings or documents")
        return estimate.per_group, estimate.weights
    groups = plan.docs if valid.all() else plan.docs.subset(valid)
    per_doc = group_correlations(x[valid], y[valid], groups, settings.coefficient, settings.options)
    return per_doc.values(settings.policy), per_doc.weights(settings.policy, settings.average)


def _weighted_document_mean(
    plan: Resamples, per_doc: FloatArray, weights: FloatArray
) -> FloatArray:
    # The weighted mean over the drawn documents (a document drawn k times counts k
    # times); skipped documents weigh nothing. A product with the plan's count matrix
    # (built once, shared by every cell): four times faster than gathering by the draws.
    counts = plan.doc_counts
    assert counts is not None
    values = np.where(weights > 0, np.nan_to_num(per_doc) * weights, 0.0)
    total = counts @ values
    # all documents weighing one whole number: a resample's weight is it times the draws
    same = weights.size > 0 and bool(np.all(weights == weights[0]))
    if same and float(weights[0]).is_integer() and weights[0] * counts.shape[1] < 2**53:
        count = np.full(plan.size, float(weights[0]) * counts.shape[1])
    else:
        count = counts @ weights
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / count, dtype=np.float64)


def _pdp_documents(plan: Resamples, x: FloatArray, y: FloatArray, valid: BoolArray) -> FloatArray:
    # A drawn copy of a document pairs its outputs among themselves: its sums add once
    # per copy.
    assert plan.doc_counts is not None
    sums = pdp_sums(x[valid], y[valid], plan.docs.subset(valid))
    return pdp_from_sums(plan.doc_counts @ sums)


def _spa(
    plan: Resamples,
    x: FloatArray,
    y: FloatArray,
    settings: Settings,
    estimate: CorrelationResult | None,
) -> FloatArray:
    if plan.doc_draws is not None or plan.system_counts is None or plan.systems is None:
        raise ValueError(
            "spa's intervals resample systems only (unit=systems): resampling documents "
            "would rerun every pair's permutation test on each resample"
        )
    spa = estimate.spa if estimate is not None else None
    if spa is None or estimate is None or estimate.options != settings.options:
        spa = correlate(
            x,
            y,
            level=Level.SYSTEM,
            coefficient=Coefficient.SPA,
            docs=plan.docs,
            systems=plan.systems,
            options=settings.options,
        ).spa
    assert spa is not None
    return resampled_spa(spa, plan.system_counts)


def _system_level(
    plan: Resamples,
    x: FloatArray,
    y: FloatArray,
    valid: BoolArray,
    settings: Settings,
    totals: tuple[FloatArray, FloatArray] | None = None,
) -> FloatArray:
    systems = plan.systems
    if systems is None:
        raise ValueError("system level needs system keys in the resamples")
    if plan.doc_counts is None:  # systems alone: each system's sums over every document
        sx, sy, n = system_sums(x, y, systems, valid, totals)
        return _resampled_systems(plan, sx[None, :], sy[None, :], n[None, :], settings)
    n_docs, n_sys = plan.docs.n_groups, systems.n_groups
    # Sums per (document, system) cell; a resample of documents is then a weighted
    # sum of rows, and a resample of systems a choice of columns.
    if every := bool(valid.all()):  # the cells and their counts are the plan's, no copies
        cell, count = plan.cells
    else:
        cell = plan.docs.codes[valid] * n_sys + systems.codes[valid]
    size = n_docs * n_sys
    xs, ys = (x, y) if every else (x[valid], y[valid])
    sums_x = np.bincount(cell, weights=xs, minlength=size).reshape(n_docs, n_sys)
    sums_y = np.bincount(cell, weights=ys, minlength=size).reshape(n_docs, n_sys)
    if not every:
        count = np.bincount(cell, minlength=size).reshape(n_docs, n_sys).astype(np.float64)
    doc_counts = plan.doc_counts
    sx, sy, n = doc_counts @ sums_x, doc_counts @ sums_y, doc_counts @ count
    return _resampled_systems(plan, sx, sy, n, settings)


def _resampled_systems(
    plan: Resamples, sx: FloatArray, sy: FloatArray, n: FloatArray, settings: Settings
) -> FloatArray:
    """The system-level correlation of each resample from its per-system sums and counts
    (one row per resample, or one row for all when systems alone are resampled)."""
    n_sys = sx.shape[1]
    if plan.system_draws is not None:
        shape = (plan.size, n_sys)
        draws = plan.system_draws
        sx, sy, n = (
            np.take_along_axis(np.broadcast_to(a, shape), draws, axis=1) for a in (sx, sy, n)
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        means_x = np.where(n > 0, sx / n, np.nan)
        means_y = np.where(n > 0, sy / n, np.nan)
    values = row_correlations(means_x, means_y, settings.coefficient, settings.options)
    return np.broadcast_to(values.values(settings.policy), (plan.size,)).copy()


def _dataset_pearson(
    plan: Resamples, x: FloatArray, y: FloatArray, valid: BoolArray, settings: Settings
) -> FloatArray:
    # Centre on the full data's means so the raw moment sums lose little precision.
    dx = x[valid] - x[valid].mean() if valid.any() else x[valid]
    dy = y[valid] - y[valid].mean() if valid.any() else y[valid]
    moments = np.stack([np.ones_like(dx), dx, dy, dx * dx, dy * dy, dx * dy], axis=1)
    doc_codes = plan.docs.codes[valid]
    doc_counts, sys_counts = plan.doc_counts, plan.system_counts
    if sys_counts is None:
        assert doc_counts is not None
        totals = doc_counts @ _sum_by(doc_codes, moments, plan.docs.n_groups)
    else:
        assert plan.systems is not None
        n_sys = plan.systems.n_groups
        sys_codes = plan.systems.codes[valid]
        if doc_counts is None:
            totals = sys_counts @ _sum_by(sys_codes, moments, n_sys)
        else:
            cells = _sum_by(doc_codes * n_sys + sys_codes, moments, plan.docs.n_groups * n_sys)
            cells = cells.reshape(plan.docs.n_groups, n_sys, 6)
            # Weight of cell (d, s) in resample b is doc_counts[b, d] * sys_counts[b, s].
            totals = np.einsum("bd,dsk,bs->bk", doc_counts, cells, sys_counts, optimize=True)
    n, sx, sy, sxx, syy, sxy = totals.T
    with np.errstate(invalid="ignore", divide="ignore"):
        var_x = sxx - sx * sx / n
        var_y = syy - sy * sy / n
        r = np.clip((sxy - sx * sy / n) / np.sqrt(var_x * var_y), -1.0, 1.0)
    # Whether a resample is constant is correlate's question (every value equal), not
    # the sums': a variance this close to rounding may be real, or rounding of zero.
    doubtful = np.flatnonzero(
        (var_x <= NEAR_CONSTANT * sxx) | (var_y <= NEAR_CONSTANT * syy) | (n < 2)
    )
    r[doubtful] = _recompute_each(plan, x, y, valid, settings, only=doubtful)
    return np.asarray(r, dtype=np.float64)


# Outputs × resamples per block of the vectorised dataset-level Spearman (8 MiB each
# of the few temporaries).
_SPEARMAN_CELLS = 1 << 20


def _dataset_spearman(
    plan: Resamples, x: FloatArray, y: FloatArray, valid: BoolArray, settings: Settings
) -> FloatArray:
    """Spearman's ρ of every resample from multiplicities, equal to materialising each
    resample and correlating it (exactly, while the rank sums stay below 2**53).

    In a resample, output k appears w_k times (its document's draw count times its
    system's). Its average rank among the copies is the weight of the distinct values
    below its value v plus (W_v + 1) / 2; centred on the mean rank (N + 1) / 2 that is
    ``below + (W_v − N) / 2``. ρ is Pearson's r of the centred ranks with the copies
    counted: Σ w·cx·cy / √(Σ_v W_v cx_v² · Σ_u W_u cy_u²). A resample with one distinct
    value on a side (or fewer than two copies) is constant, as :func:`correlate`
    decides."""
    out = np.full(plan.size, np.nan)
    if not valid.any():
        return out
    xv, yv = x[valid], y[valid]
    n = xv.size
    doc_codes = plan.docs.codes[valid]
    sys_codes = None if plan.systems is None else plan.systems.codes[valid]
    step = max(1, _SPEARMAN_CELLS // n)
    sides = [_Side(values, step) for values in (xv, yv)]
    zero = settings.policy is DegeneratePolicy.ZERO
    for start in range(0, plan.size, step):
        stop = min(start + step, plan.size)
        weight = _block_weights(plan, start, stop, doc_codes, sys_codes, np.float64)
        total = weight.sum(axis=1)
        (per_x, rank_x), (per_y, rank_y) = (side.ranks(weight, total) for side in sides)
        cross = np.einsum(
            "bn,bn,bn->b",
            weight,
            np.take(rank_x, sides[0].codes, axis=1),
            np.take(rank_y, sides[1].codes, axis=1),
        )
        sxx = np.einsum("bv,bv,bv->b", per_x, rank_x, rank_x)
        syy = np.einsum("bv,bv,bv->b", per_y, rank_y, rank_y)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.clip(cross / np.sqrt(sxx * syy), -1.0, 1.0)
        constant = (np.count_nonzero(per_x, axis=1) <= 1) | (np.count_nonzero(per_y, axis=1) <= 1)
        r = np.where(constant, 0.0 if zero else np.nan, r)
        out[start:stop] = np.where(total < 2, np.nan, r)
    return out


def _block_weights(
    plan: Resamples,
    start: int,
    stop: int,
    doc_codes: IntArray,
    sys_codes: IntArray | None,
    dtype: type[np.generic],
) -> npt.NDArray[Any]:
    """Each output's copies in resamples ``start..stop`` (rows) : its document's draw
    count times its system's, in ``dtype`` (float64 for the rank sums, int64 for the
    pair counts)."""
    weight: npt.NDArray[Any] = np.ones((stop - start, doc_codes.size), dtype=dtype)
    if plan.doc_counts is not None:
        weight = np.take(plan.doc_counts[start:stop].astype(dtype, copy=False), doc_codes, axis=1)
    if plan.system_counts is not None and sys_codes is not None:
        systems = plan.system_counts[start:stop].astype(dtype, copy=False)
        weight = weight * np.take(systems, sys_codes, axis=1)
    return weight


class _Side:
    """One side's distinct values (ascending codes), and the flat codes of a block of
    ``step`` resamples for counting copies per value."""

    def __init__(self, values: FloatArray, step: int) -> None:
        _, codes = np.unique(values, return_inverse=True)
        self.codes = codes.reshape(-1).astype(np.intp)
        self.n_values = int(self.codes.max()) + 1
        self.flat = (np.arange(step, dtype=np.intp)[:, None] * self.n_values + self.codes).ravel()

    def ranks(self, weight: FloatArray, total: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per resample (row of ``weight``): the copies of each distinct value, and its
        average rank among all copies minus the mean rank."""
        rows = weight.shape[0]
        size = rows * self.n_values
        counts = np.bincount(self.flat[: weight.size], weights=weight.ravel(), minlength=size)
        per_value: FloatArray = np.asarray(counts, dtype=np.float64).reshape(rows, self.n_values)
        below = np.cumsum(per_value, axis=1) - per_value
        return per_value, below + (per_value - total[:, None]) / 2.0


# Outputs × resamples per block of the dataset-level pair counts: the dominance tree's
# few int64 temporaries (2 MiB each) stay in cache; blocks of Spearman's size (2**20)
# measured 4 times slower at 100,000 outputs.
_PAIR_CELLS = 1 << 18


def _dataset_pairs(
    plan: Resamples, x: FloatArray, y: FloatArray, valid: BoolArray, settings: Settings
) -> FloatArray:
    """Kendall's τ-b, τ-c, τ23, acc23 or Kendall-like of every resample from weighted
    pair counts (:mod:`scoring.stats.weighted_pairs`), equal to materialising each
    resample and correlating it; constant and too-small resamples as :func:`correlate`
    decides."""
    out = np.full(plan.size, np.nan)
    if not valid.any():
        return out
    options = settings.options
    pooled = weighted_pairs.PooledPairs(
        x[valid],
        y[valid],
        settings.coefficient.value,
        epsilon=options.epsilon,
        threshold=options.threshold,
    )
    doc_codes = plan.docs.codes[valid][pooled.order]
    sys_codes = None if plan.systems is None else plan.systems.codes[valid][pooled.order]
    step = max(1, _PAIR_CELLS // doc_codes.size)
    tau = settings.coefficient in (Coefficient.KENDALL_B, Coefficient.KENDALL_C)
    for start in range(0, plan.size, step):
        stop = min(start + step, plan.size)
        weight = _block_weights(plan, start, stop, doc_codes, sys_codes, np.int64)
        counts = pooled.evaluate(weight)
        n = counts.copies.astype(np.intp)
        r = np.where(n >= 2, counts.value, np.nan)
        if tau:  # a constant side makes τ undefined (NaN), as row_correlations has it
            r = np.where(counts.constant, np.nan, r)
        rows = GroupCorrelations(r=r, n=n, constant=counts.constant, size=counts.copies)
        out[start:stop] = rows.values(settings.policy)
    return out


def _sum_by(codes: IntArray, values: FloatArray, n: int) -> FloatArray:
    return np.stack(
        [np.bincount(codes, weights=values[:, k], minlength=n) for k in range(values.shape[1])],
        axis=1,
    )


def _recompute_each(
    plan: Resamples,
    x: FloatArray,
    y: FloatArray,
    valid: BoolArray,
    settings: Settings,
    only: IntArray | None = None,
) -> FloatArray:
    """Each resample (or those in ``only``) materialised and recomputed."""
    level, coefficient, policy = settings.level, settings.coefficient, settings.policy
    docs = plan.docs.subset(valid)
    xv, yv = x[valid], y[valid]
    doc_codes = docs.codes
    sys_codes = None if plan.systems is None else plan.systems.codes[valid]
    which = range(plan.size) if only is None else only
    out = np.full(len(which), np.nan)
    for k, b in enumerate(which):
        # An output's multiplicity is the product of its document's and its
        # system's draw counts.
        doc_weight = None if plan.doc_counts is None else plan.doc_counts[b].astype(np.intp)
        times = np.ones(xv.size, dtype=np.intp)
        if plan.system_counts is not None and sys_codes is not None:
            times = plan.system_counts[b].astype(np.intp)[sys_codes]
        if level is Level.SAMPLE:
            # A document drawn k times adds k equal per-document values: weight it.
            if doc_weight is not None:
                times = times * (doc_weight[doc_codes] > 0)
            items, groups = docs.repeat(times)
            copies = np.ones(docs.n_groups) if doc_weight is None else doc_weight.astype(np.float64)
            if coefficient is Coefficient.PDP:
                sums = pdp_sums(xv[items], yv[items], groups)
                out[k] = float(pdp_from_sums(copies @ sums))
                continue
            per_doc = group_correlations(
                xv[items], yv[items], groups, coefficient, settings.options
            )
            values = per_doc.values(policy)
            weight = copies * per_doc.weights(policy, settings.average)
            if weight.sum() > 0:
                out[k] = float(np.sum(weight * np.nan_to_num(values)) / weight.sum())
        else:
            if doc_weight is not None:
                times = times * doc_weight[doc_codes]
            items = np.repeat(np.arange(xv.size), times)
            row = row_correlations(
                xv[items][None, :], yv[items][None, :], coefficient, settings.options
            )
            out[k] = row.values(policy)[0]
    return out
