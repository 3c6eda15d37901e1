"""Is one metric's correlation with the human judgments significantly higher?

Three tests, for two metrics (or two settings of one metric) scored on the same
outputs against the same judgments:

* :func:`permutation_test`: the paired permutation test (PERM-BOTH of Deutsch et al.
  2021): swap the two metrics' scores at random, whole documents at a time (the
  default at sample level; nlpstats' "inputs" scheme) or output by output
  (mt-metrics-eval's), and see how often the difference is as large;
* :func:`paired_bootstrap_test`: resample the data and see how often the difference
  moves as far from the observed one as the observed is from zero
  (:func:`paired_bootstrap_p` on resamples already drawn: the dashboards' "best",
  "below best" and significance clusters use it on each cell's bootstrap draws);
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

from scoring.stats.correlation import correlate, sample_level
from scoring.stats.group_correlations import (
    as_groups,
    as_scores,
    group_correlations,
    row_correlations,
)
from scoring.stats.pairwise import pdp_from_sums, pdp_sums
from scoring.stats.ranking import BoolArray, FloatArray, Groups
from scoring.stats.resampling import NEAR_CONSTANT, Resamples, bootstrap_distribution
from scoring.stats.settings import (
    DEFAULT_OPTIONS,
    Average,
    Coefficient,
    DegeneratePolicy,
    Level,
    Options,
    Settings,
)
from scoring.stats.spa import (
    cell_means,
    pairwise_p_values,
    shared_sign_flips,
    soft_pairwise_accuracy,
)

# Rows × outputs per chunk of permuted score rows (8 MiB of float64).
_CHUNK_CELLS = 1 << 20


class Alternative(Enum):
    """The alternative hypothesis, about metric a's correlation versus metric b's."""

    TWO_SIDED = "two-sided"
    GREATER = "greater"  # a correlates better than b (signed: p near 1 when b is better)
    LESS = "less"
    # Williams' test only: one-sided towards whichever metric the data favour,
    # P(T >= |t|), half the two-sided p: mt-metrics-eval's WilliamsTest(one_sided=True).
    # It says that the two differ, not which is better (read the sign of the delta).
    UNSIGNED = "one-sided-unsigned"


class Swap(Enum):
    """What the permutation test swaps between the two metrics."""

    # All of a document's scores at once (nlpstats' "inputs" permutation): the default
    # at sample level, where the statistic is a mean over documents.
    DOCUMENTS = "documents"
    # Each output's pair of scores independently (mt-metrics-eval's PermutationSigDiff).
    OUTPUTS = "outputs"


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
    average: Average = Average.MACRO,
    options: Options = DEFAULT_OPTIONS,
) -> SignificanceResult:
    """Paired permutation test of the difference between two metrics' correlations.

    ``swap`` defaults to whole documents at sample level (each document's pair of
    per-document correlations trades places: cheap, and the averaged statistic only
    sees documents; nlpstats' "inputs") and to single outputs at dataset and system
    level; ``Swap.OUTPUTS`` at sample level is mt-metrics-eval's scheme. As in
    mt-metrics-eval, both metrics are z-scored first so swapped scores are on one
    scale; no coefficient changes under that, but a tie threshold would, so acc23 and
    τ23 are tested here with exact ties only (compare tie-calibrated metrics with the
    paired bootstrap, where each keeps its ε). p = (1 + extreme) / (1 + resamples),
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
    if options.epsilon > 0:
        raise ValueError(
            "a tie threshold is on one metric's scale, which the test's z-scores change: "
            "compare tie-calibrated metrics with the paired bootstrap"
        )
    a, b, y, valid = _common(metric_a, metric_b, human)
    doc_groups = None if docs is None else as_groups(docs, y.size, "docs")
    sys_groups = None if systems is None else as_groups(systems, y.size, "systems")
    swap = swap or (Swap.DOCUMENTS if level is Level.SAMPLE else Swap.OUTPUTS)
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
            average=average,
            options=options,
        ).value
        for scores in (a, b)
    )
    a, b = _zscore(a, valid), _zscore(b, valid)
    settings = Settings(level, coefficient, policy, average, options)

    if not valid.any():
        permuted, observed = np.empty(0), float("nan")
    elif level is Level.SAMPLE and swap is Swap.DOCUMENTS:
        assert doc_groups is not None
        groups = doc_groups.subset(valid)
        parts_a, parts_b = (_document_parts(m[valid], y[valid], groups, settings) for m in (a, b))
        unswapped = np.zeros((1, groups.n_groups))
        observed = float(_swapped_documents(unswapped, parts_a, parts_b, settings)[0])
        flips = rng.integers(0, 2, size=(resamples, groups.n_groups)).astype(np.float64)
        permuted = _swapped_documents(flips, parts_a, parts_b, settings)
    else:
        a, b, y = a[valid], b[valid], y[valid]
        statistic = _RowStatistic(y, settings, doc_groups, sys_groups, valid)
        observed = float((statistic(a[None, :]) - statistic(b[None, :]))[0])
        doc_codes = None if doc_groups is None else doc_groups.codes[valid]
        pooled = level is Level.DATASET and coefficient in (Coefficient.PEARSON, Coefficient.PDP)
        pearson = _SwappedPearson(a, b, y, statistic) if pooled else None
        permuted = np.empty(resamples)
        step = max(1, _CHUNK_CELLS // max(1, y.size))
        for start in range(0, resamples, step):
            rows = min(step, resamples - start)
            if swap is Swap.OUTPUTS:
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
    average: Average = Average.MACRO,
    options: Options = DEFAULT_OPTIONS,
    options_b: Options | None = None,
) -> SignificanceResult:
    """Paired bootstrap test: both metrics are recomputed on the same resamples.

    Under the null the resampled differences, shifted to centre on zero, would be as
    far from zero as the observed difference (Efron & Tibshirani 1993, §16.4;
    Berg-Kirkpatrick et al. 2012): p = (1 + such resamples) / (1 + resamples).
    ``options_b`` (default: ``options``) lets metric b keep its own tie threshold.
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
            average=average,
            options=option,
        )
        for scores, option in zip((a, b), (options, options_b or options), strict=True)
    ]
    value_a, value_b = estimates[0].value, estimates[1].value
    resampled = [
        bootstrap_distribution(
            plan,
            scores,
            y,
            level=level,
            coefficient=coefficient,
            policy=policy,
            average=average,
            options=estimate.options,
            estimate=estimate,
        )
        for scores, estimate in zip((a, b), estimates, strict=True)
    ]
    return SignificanceResult(
        method=f"paired bootstrap ({plan.unit.value})",
        value_a=value_a,
        value_b=value_b,
        delta=value_a - value_b,
        p_value=paired_bootstrap_p(resampled[0], resampled[1], value_a, value_b, alternative),
        alternative=alternative,
        resamples=plan.size,
    )


def paired_bootstrap_p(
    resampled_a: FloatArray,
    resampled_b: FloatArray,
    value_a: float,
    value_b: float,
    alternative: Alternative = Alternative.TWO_SIDED,
) -> float:
    """The paired bootstrap p-value from two metrics' values on the same resamples:
    under the null the resampled differences, shifted to centre on zero, are as far
    from zero as the observed difference; p = (1 + such resamples) / (1 + resamples),
    resamples where either value is undefined left out (NaN when none is left)."""
    delta = value_a - value_b
    shifted = np.asarray(resampled_a, dtype=np.float64) - resampled_b - delta
    return _permutation_p(shifted, delta, alternative)


def williams_test(
    r12: float, r13: float, r23: float, n: int, alternative: Alternative = Alternative.TWO_SIDED
) -> float:
    """Williams' test that r12 and r13 differ, for correlations sharing variable 1.

    For metrics: r12 = corr(human, metric a), r13 = corr(human, metric b),
    r23 = corr(metric a, metric b), over the same n outputs (or systems). The
    statistic follows Student's t with n - 3 degrees of freedom (Steiger 1980,
    eq. 7). ``GREATER`` is the signed one-sided test of r12 > r13 (p = P(T ≥ t), near 1
    when r13 is the larger). ``UNSIGNED`` is mt-metrics-eval's ``WilliamsTest``
    (``one_sided=True``): P(T ≥ |t|), small whichever correlation is larger.
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
    if alternative is Alternative.UNSIGNED:
        return float(scipy.stats.t.sf(abs(t), df))
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


def _document_parts(x: FloatArray, y: FloatArray, groups: Groups, settings: Settings) -> FloatArray:
    """Documents × 2: (weight × value, weight) for a weighted mean; for PDP documents ×
    3 pair sums. Swapping documents swaps these rows."""
    if settings.coefficient is Coefficient.PDP:
        return pdp_sums(x, y, groups)
    per_doc = group_correlations(x, y, groups, settings.coefficient, settings.options)
    values = per_doc.values(settings.policy)
    weights = per_doc.weights(settings.policy, settings.average)
    return np.stack([np.where(weights > 0, np.nan_to_num(values) * weights, 0.0), weights], 1)


def _swapped_documents(
    flips: FloatArray, parts_a: FloatArray, parts_b: FloatArray, settings: Settings
) -> FloatArray:
    # Document d of permutation k comes from the other metric where flips[k, d] is 1;
    # a document skipped for one metric moves its "skipped" (weight 0) with it.
    keep = 1.0 - flips
    totals_a = keep @ parts_a + flips @ parts_b
    totals_b = keep @ parts_b + flips @ parts_a
    if settings.coefficient is Coefficient.PDP:
        return np.asarray(pdp_from_sums(totals_a) - pdp_from_sums(totals_b), dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = totals_a[:, 0] / totals_a[:, 1]
        mean_b = totals_b[:, 0] / totals_b[:, 1]
    return np.asarray(mean_a - mean_b, dtype=np.float64)


class _SwappedPearson:
    """Pooled Pearson r(a', y) - r(b', y) for each row of swaps, from sums alone.

    With d = b - a and m a row of the mask, a' = a + m d and b' = b - m d, so each sum
    over a' or b' is a fixed part plus m @ (a fixed vector): one matrix product for
    all rows instead of rebuilding and re-centring every permuted row. A row whose
    variance is within rounding of zero next to its sums is recomputed by ``exact``,
    so constant rows follow correlate's rule (as the bootstrap's do).
    """

    def __init__(self, a: FloatArray, b: FloatArray, y: FloatArray, exact: _RowStatistic):
        d = b - a
        centred = y - y.mean()
        self.a, self.b, self.exact = a, b, exact
        self.vectors = np.stack([d, d * d, a * d, b * d, d * centred], axis=1)
        self.fixed_a = (a.sum(), a @ a, a @ centred)
        self.fixed_b = (b.sum(), b @ b, b @ centred)
        self.n, self.spread = y.size, centred @ centred

    def __call__(self, mask: BoolArray) -> FloatArray:
        shift, square, cross_a, cross_b, cross_y = (mask.astype(np.float64) @ self.vectors).T
        total_a, squares_a, product_a = self.fixed_a
        total_b, squares_b, product_b = self.fixed_b
        r_a, doubt_a = self._r(
            total_a + shift, squares_a + 2 * cross_a + square, product_a + cross_y
        )
        r_b, doubt_b = self._r(
            total_b - shift, squares_b - 2 * cross_b + square, product_b - cross_y
        )
        out = r_a - r_b
        doubtful = np.flatnonzero(doubt_a | doubt_b)
        if doubtful.size:
            rows = mask[doubtful]
            swapped_a = np.where(rows, self.b, self.a)
            swapped_b = np.where(rows, self.a, self.b)
            out[doubtful] = self.exact(swapped_a) - self.exact(swapped_b)
        return out

    def _r(
        self, total: FloatArray, squares: FloatArray, cross: FloatArray
    ) -> tuple[FloatArray, BoolArray]:
        variance = squares - total * total / self.n
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.clip(cross / np.sqrt(variance * self.spread), -1.0, 1.0)
        doubtful = (variance <= NEAR_CONSTANT * squares) | (self.spread == 0.0) | (self.n < 2)
        return np.asarray(r, dtype=np.float64), np.asarray(doubtful, dtype=bool)


class _RowStatistic:
    """The statistic of each row of metric scores (valid outputs only) with ``y``,
    with what depends only on the keys and judgments prepared once."""

    def __init__(
        self,
        y: FloatArray,
        settings: Settings,
        docs: Groups | None,
        systems: Groups | None,
        valid: BoolArray,
    ) -> None:
        self.y, self.settings = y, settings
        level = settings.level
        if level is Level.SYSTEM:
            if systems is None:
                raise ValueError("system level needs system keys (systems=...)")
            if settings.coefficient is Coefficient.SPA:
                if docs is None:
                    raise ValueError("spa compares systems document by document: it needs docs=...")
                self.docs, self.systems = docs.subset(valid), systems.subset(valid)
                options = settings.options
                self.flips = shared_sign_flips(options.seed, options.permutations, docs.n_groups)
                every = np.ones(y.size, dtype=bool)
                human_cells = cell_means(y, self.docs, self.systems, every)
                self.human_p = pairwise_p_values(human_cells, self.flips)
                return
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
        s = self.settings
        if s.level is Level.DATASET:
            human = np.broadcast_to(self.y, rows.shape)
            return row_correlations(rows, human, s.coefficient, s.options).values(s.policy)
        if s.level is Level.SYSTEM and s.coefficient is Coefficient.SPA:
            return np.array(
                [
                    soft_pairwise_accuracy(
                        row,
                        self.y,
                        docs=self.docs,
                        systems=self.systems,
                        flips=self.flips,
                        human_p=self.human_p,
                    ).value
                    for row in rows
                ]
            )
        if s.level is Level.SYSTEM:
            means = self._means(rows)
            human = np.broadcast_to(self.human, means.shape)
            return row_correlations(means, human, s.coefficient, s.options).values(s.policy)
        return np.array(
            [
                sample_level(
                    row, self.y, self.groups, s.coefficient, s.policy, s.average, s.options
                ).value
                for row in rows
            ]
        )


def _permutation_p(values: FloatArray, observed: float, alternative: Alternative) -> float:
    finite = values[np.isfinite(values)]
    if not math.isfinite(observed) or finite.size == 0:
        return float("nan")
    # Ties with the observed value count as extreme; the tolerance absorbs rounding
    # in statistics that are equal in exact arithmetic.
    tol = 1e-12 * max(1.0, abs(observed))
    if alternative is Alternative.UNSIGNED:
        raise ValueError("the unsigned one-sided alternative is Williams' test's only")
    if alternative is Alternative.GREATER:
        extreme = np.count_nonzero(finite >= observed - tol)
    elif alternative is Alternative.LESS:
        extreme = np.count_nonzero(finite <= observed + tol)
    else:
        extreme = np.count_nonzero(np.abs(finite) >= abs(observed) - tol)
    return float((1.0 + extreme) / (1.0 + finite.size))
