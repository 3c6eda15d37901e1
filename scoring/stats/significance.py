"""Is one metric's correlation with the human judgments significantly higher?

Three tests, for two metrics (or two settings of one metric) scored on the same
outputs against the same judgments:

* :func:`permutation_test`: the paired permutation test (PERM-BOTH of Deutsch et al.
  2021, as in mt-metrics-eval): swap the two metrics' scores per item (or per
  document) at random and see how often the difference is as large;
* :func:`paired_bootstrap_test`: resample the data and see how often the difference
  moves as far from the observed one as the observed is from zero;
* :func:`williams_test`: Williams' t-test for two dependent Pearson correlations that
  share one variable (Graham & Baldwin 2014).

Pairs with a NaN in either metric or the judgment are dropped from all three sides,
so both metrics are judged on the same outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt
import scipy.stats

from scoring.stats.correlation import (
    Coefficient,
    DegeneratePolicy,
    Level,
    as_groups,
    as_scores,
    correlate,
    group_correlations,
    row_correlations,
)
from scoring.stats.ranking import BoolArray, FloatArray, Groups
from scoring.stats.resampling import Resamples, bootstrap_distribution

# Rows × outputs per chunk of permuted score rows (8 MiB of float64).
_CHUNK_CELLS = 1 << 20


class Alternative(Enum):
    """The alternative hypothesis, about metric a's correlation versus metric b's."""

    TWO_SIDED = "two-sided"
    GREATER = "greater"  # a correlates better than b
    LESS = "less"


class Swap(Enum):
    """What the permutation test swaps between the two metrics."""

    DOCUMENTS = "documents"  # all of a document's scores at once
    ITEMS = "items"  # each output's pair of scores independently


@dataclass(frozen=True)
class SignificanceResult:
    """A paired test of ``value_a - value_b`` (``delta``)."""

    method: str
    value_a: float
    value_b: float
    delta: float
    p_value: float
    alternative: Alternative
    resamples: int


def permutation_test(
    metric_a: npt.ArrayLike,
    metric_b: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    rng: np.random.Generator,
    docs: Groups | npt.ArrayLike | None = None,
    systems: Groups | npt.ArrayLike | None = None,
    resamples: int = 1000,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
    alternative: Alternative = Alternative.TWO_SIDED,
    swap: Swap | None = None,
) -> SignificanceResult:
    """Paired permutation test of the difference between two metrics' correlations.

    ``swap`` defaults to whole documents at sample level (each document's pair of
    per-document correlations trades places: cheap, and the averaged statistic only
    sees documents) and to single outputs at dataset and system level. As in
    mt-metrics-eval, both metrics are z-scored first so swapped scores are on one
    scale; no coefficient changes under that. p = (1 + extreme) / (1 + resamples),
    which is never 0 and keeps the test exact. The default is two-sided;
    mt-metrics-eval's test is one-sided, which is ``alternative=GREATER`` here.

    Cost (100,000 outputs, 1,000 resamples): sample level by documents, well under a
    second; dataset-level Pearson (from sums) about a second; system level a few
    seconds; dataset-level Spearman or Kendall recompute every permuted row (for
    Kendall, one scipy call per row), and sample level by items recomputes every
    document per resample: tens of seconds, so use fewer resamples there.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    a, b, y, valid = _common(metric_a, metric_b, human)
    doc_groups = None if docs is None else as_groups(docs, y.size, "docs")
    sys_groups = None if systems is None else as_groups(systems, y.size, "systems")
    swap = swap or (Swap.DOCUMENTS if level is Level.SAMPLE else Swap.ITEMS)
    if swap is Swap.DOCUMENTS and doc_groups is None:
        raise ValueError("swapping documents needs document keys (docs=...)")
    value_a, value_b = (
        correlate(
            scores,
            y,
            level=level,
            coefficient=coefficient,
            docs=doc_groups,
            systems=sys_groups,
            policy=policy,
        ).value
        for scores in (a, b)
    )
    a, b = _zscore(a, valid), _zscore(b, valid)

    if not valid.any():
        permuted, observed = np.empty(0), float("nan")
    elif level is Level.SAMPLE and swap is Swap.DOCUMENTS:
        assert doc_groups is not None
        groups = doc_groups.subset(valid)
        per_a = group_correlations(a[valid], y[valid], groups, coefficient).values(policy)
        per_b = group_correlations(b[valid], y[valid], groups, coefficient).values(policy)
        observed = float(_swapped_document_means(np.zeros((1, groups.n_groups)), per_a, per_b)[0])
        flips = rng.integers(0, 2, size=(resamples, groups.n_groups)).astype(np.float64)
        permuted = _swapped_document_means(flips, per_a, per_b)
    else:
        a, b, y = a[valid], b[valid], y[valid]
        statistic = _RowStatistic(y, level, coefficient, policy, doc_groups, sys_groups, valid)
        observed = float((statistic(a[None, :]) - statistic(b[None, :]))[0])
        doc_codes = None if doc_groups is None else doc_groups.codes[valid]
        pooled = level is Level.DATASET and coefficient is Coefficient.PEARSON
        pearson = _SwappedPearson(a, b, y, policy) if pooled else None
        permuted = np.empty(resamples)
        step = max(1, _CHUNK_CELLS // max(1, y.size))
        for start in range(0, resamples, step):
            rows = min(step, resamples - start)
            if swap is Swap.ITEMS:
                mask = rng.integers(0, 2, size=(rows, y.size)).astype(bool)
            else:
                assert doc_groups is not None and doc_codes is not None
                flips = rng.integers(0, 2, size=(rows, doc_groups.n_groups)).astype(bool)
                mask = flips[:, doc_codes]
            if pearson is not None:
                permuted[start : start + rows] = pearson(mask)
            else:
                swapped_a, swapped_b = np.where(mask, b, a), np.where(mask, a, b)
                permuted[start : start + rows] = statistic(swapped_a) - statistic(swapped_b)
    return SignificanceResult(
        method=f"permutation ({swap.value})",
        value_a=value_a,
        value_b=value_b,
        delta=value_a - value_b,
        p_value=_permutation_p(permuted, observed, alternative),
        alternative=alternative,
        resamples=resamples,
    )


def paired_bootstrap_test(
    plan: Resamples,
    metric_a: npt.ArrayLike,
    metric_b: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
    alternative: Alternative = Alternative.TWO_SIDED,
) -> SignificanceResult:
    """Paired bootstrap test: both metrics are recomputed on the same resamples.

    Under the null the resampled differences, shifted to centre on zero, would be as
    far from zero as the observed difference (Efron & Tibshirani 1993, §16.4;
    Berg-Kirkpatrick et al. 2012): p = (1 + such resamples) / (1 + resamples).
    """
    a, b, y, _ = _common(metric_a, metric_b, human)
    estimates = [
        correlate(
            scores,
            y,
            level=level,
            coefficient=coefficient,
            docs=plan.docs,
            systems=plan.systems,
            policy=policy,
        )
        for scores in (a, b)
    ]
    value_a, value_b = estimates[0].value, estimates[1].value
    delta = value_a - value_b
    resampled = [
        bootstrap_distribution(
            plan, scores, y, level=level, coefficient=coefficient, policy=policy, estimate=estimate
        )
        for scores, estimate in zip((a, b), estimates, strict=True)
    ]
    shifted = resampled[0] - resampled[1] - delta
    return SignificanceResult(
        method=f"paired bootstrap ({plan.unit.value})",
        value_a=value_a,
        value_b=value_b,
        delta=delta,
        p_value=_permutation_p(shifted, delta, alternative),
        alternative=alternative,
        resamples=plan.size,
    )


def williams_test(
    r12: float, r13: float, r23: float, n: int, alternative: Alternative = Alternative.TWO_SIDED
) -> float:
    """Williams' test that r12 and r13 differ, for correlations sharing variable 1.

    For metrics: r12 = corr(human, metric a), r13 = corr(human, metric b),
    r23 = corr(metric a, metric b), over the same n outputs (or systems). The
    statistic follows Student's t with n - 3 degrees of freedom (Steiger 1980,
    eq. 7). ``GREATER`` tests r12 > r13 (mt-metrics-eval's one-sided default).
    """
    if n <= 3:
        raise ValueError("Williams' test needs n > 3")
    if not all(-1.0 <= r <= 1.0 for r in (r12, r13, r23)):
        raise ValueError("correlations must lie in [-1, 1]")
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    mean = (r12 + r13) / 2
    t = (r12 - r13) * math.sqrt(
        (n - 1) * (1 + r23) / (2 * (n - 1) / (n - 3) * det + mean**2 * (1 - r23) ** 3)
    )
    df = n - 3
    if alternative is Alternative.GREATER:
        return float(scipy.stats.t.sf(t, df))
    if alternative is Alternative.LESS:
        return float(scipy.stats.t.cdf(t, df))
    return float(min(1.0, 2 * scipy.stats.t.sf(abs(t), df)))


def _common(
    metric_a: npt.ArrayLike, metric_b: npt.ArrayLike, human: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray]:
    a = as_scores(metric_a, "metric_a")
    b = as_scores(metric_b, "metric_b")
    y = as_scores(human, "human")
    if not a.size == b.size == y.size:
        raise ValueError("metric_a, metric_b and human must have one score per output")
    valid = np.isfinite(a) & np.isfinite(b) & np.isfinite(y)
    return np.where(valid, a, np.nan), np.where(valid, b, np.nan), y, valid


def _zscore(x: FloatArray, valid: BoolArray) -> FloatArray:
    if not valid.any():
        return x
    spread = float(x[valid].std())
    return np.asarray((x - x[valid].mean()) / (spread if spread > 0 else 1.0), dtype=np.float64)


def _swapped_document_means(flips: FloatArray, per_a: FloatArray, per_b: FloatArray) -> FloatArray:
    # Document d of permutation k comes from the other metric where flips[k, d] is 1;
    # a document skipped for one metric moves its "skipped" with it.
    used_a, used_b = np.isfinite(per_a), np.isfinite(per_b)
    val_a, val_b = np.where(used_a, per_a, 0.0), np.where(used_b, per_b, 0.0)
    n_a, n_b = used_a.astype(np.float64), used_b.astype(np.float64)
    keep = 1.0 - flips
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = (keep @ val_a + flips @ val_b) / (keep @ n_a + flips @ n_b)
        mean_b = (keep @ val_b + flips @ val_a) / (keep @ n_b + flips @ n_a)
    return np.asarray(mean_a - mean_b, dtype=np.float64)


class _SwappedPearson:
    """Pooled Pearson r(a', y) - r(b', y) for each row of swaps, from sums alone.

    With d = b - a and m a row of the mask, a' = a + m d and b' = b - m d, so each sum
    over a' or b' is a fixed part plus m @ (a fixed vector): one matrix product for
    all rows instead of rebuilding and re-centring every permuted row.
    """

    def __init__(self, a: FloatArray, b: FloatArray, y: FloatArray, policy: DegeneratePolicy):
        d = b - a
        centred = y - y.mean()
        self.vectors = np.stack([d, d * d, a * d, b * d, d * centred], axis=1)
        self.fixed_a = (a.sum(), a @ a, a @ centred)
        self.fixed_b = (b.sum(), b @ b, b @ centred)
        self.n, self.spread, self.policy = y.size, centred @ centred, policy

    def __call__(self, mask: BoolArray) -> FloatArray:
        shift, square, cross_a, cross_b, cross_y = (mask.astype(np.float64) @ self.vectors).T
        total_a, squares_a, product_a = self.fixed_a
        total_b, squares_b, product_b = self.fixed_b
        r_a = self._r(total_a + shift, squares_a + 2 * cross_a + square, product_a + cross_y)
        r_b = self._r(total_b - shift, squares_b - 2 * cross_b + square, product_b - cross_y)
        return r_a - r_b

    def _r(self, total: FloatArray, squares: FloatArray, cross: FloatArray) -> FloatArray:
        variance = squares - total * total / self.n
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.clip(cross / np.sqrt(variance * self.spread), -1.0, 1.0)
        # As in the bootstrap: what is left of a constant row's variance is rounding.
        constant = (variance <= 1e-10 * squares) | (self.spread == 0.0)
        zero = self.policy is DegeneratePolicy.ZERO and self.n >= 2
        return np.asarray(
            np.where(constant | (self.n < 2), 0.0 if zero else np.nan, r), dtype=np.float64
        )


class _RowStatistic:
    """The correlation of each row of metric scores (valid outputs only) with ``y``,
    with what depends only on the keys and judgments prepared once."""

    def __init__(
        self,
        y: FloatArray,
        level: Level,
        coefficient: Coefficient,
        policy: DegeneratePolicy,
        docs: Groups | None,
        systems: Groups | None,
        valid: BoolArray,
    ) -> None:
        self.y, self.level, self.coefficient, self.policy = y, level, coefficient, policy
        if level is Level.SYSTEM:
            if systems is None:
                raise ValueError("system level needs system keys (systems=...)")
            codes = systems.codes[valid]
            self.order = np.argsort(codes, kind="stable")
            count = np.bincount(codes, minlength=systems.n_groups)
            present = count > 0
            self.count = count[present].astype(np.float64)
            self.starts = (np.cumsum(count) - count)[present]
            self.human = self._means(y[None, :])[0]
        elif level is Level.SAMPLE:
            if docs is None:
                raise ValueError("sample level needs document keys (docs=...)")
            self.groups = docs.subset(valid)

    def _means(self, rows: FloatArray) -> FloatArray:
        # Sums over each system's (contiguous, once sorted) columns, all rows at once.
        return np.add.reduceat(rows[:, self.order], self.starts, axis=1) / self.count

    def __call__(self, rows: FloatArray) -> FloatArray:
        if self.level is Level.DATASET:
            human = np.broadcast_to(self.y, rows.shape)
            return row_correlations(rows, human, self.coefficient).values(self.policy)
        if self.level is Level.SYSTEM:
            means = self._means(rows)
            human = np.broadcast_to(self.human, means.shape)
            return row_correlations(means, human, self.coefficient).values(self.policy)
        out = np.full(rows.shape[0], np.nan)
        for k, row in enumerate(rows):
            per_doc = group_correlations(row, self.y, self.groups, self.coefficient)
            values = per_doc.values(self.policy)
            if np.isfinite(values).any():
                out[k] = np.nanmean(values)
        return out


def _permutation_p(values: FloatArray, observed: float, alternative: Alternative) -> float:
    finite = values[np.isfinite(values)]
    if not math.isfinite(observed) or finite.size == 0:
        return float("nan")
    # Ties with the observed value count as extreme; the tolerance absorbs rounding
    # in statistics that are equal in exact arithmetic.
    tol = 1e-12 * max(1.0, abs(observed))
    if alternative is Alternative.GREATER:
        extreme = np.count_nonzero(finite >= observed - tol)
    elif alternative is Alternative.LESS:
        extreme = np.count_nonzero(finite <= observed + tol)
    else:
        extreme = np.count_nonzero(np.abs(finite) >= abs(observed) - tol)
    return float((1.0 + extreme) / (1.0 + finite.size))
