"""How consistent a judge is with itself: across repeated samples of one prompt, and
across two versions of its prompt.

* **Self-consistency** of a sampled judge (:func:`self_consistency`): a judge asked
  ``n`` times per output (G-Eval's sampled estimate keeps the frequencies of its answers)
  gives a spread of scores per output. Reported: the mean over outputs of the sample
  standard deviation of their repeated scores (outputs with two answers or more), the
  pooled within-output standard deviation √MSW, and the one-way random-effects intraclass
  correlations of Shrout & Fleiss (1979): ICC(1) = (MSB − MSW) / (MSB + (k − 1)·MSW),
  the reliability of one sample, and ICC(1,k) = (MSB − MSW) / MSB, that of the mean of k
  samples (the score the judge reports). MSB and MSW are the one-way ANOVA's mean squares
  between and within outputs; with unequal numbers of answers per output k is
  k₀ = (N − Σ nᵢ² / N) / (n − 1) (McGraw & Wong 1996), the mean when they are equal.
* **Prompt sensitivity** (:func:`correlation_change`, :func:`rank_changes`): two runs of
  one judge that differ in their prompt: the change in their correlation with the humans
  on the outputs both scored, with a paired bootstrap interval (both recomputed on the
  same resamples of documents), and the systems each ranks differently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.correlation import correlate
from scoring.stats.diagnostics import system_ranks
from scoring.stats.ranking import Groups
from scoring.stats.resampling import Resamples, bootstrap_distribution
from scoring.stats.settings import DEFAULT_OPTIONS, Average, Coefficient, Level, Options
from scoring.stats.settings import DegeneratePolicy as Policy
from scoring.stats.significance import Alternative, paired_bootstrap_p


@dataclass(frozen=True)
class SelfConsistency:
    """The spread of a judge's repeated scores of the same outputs.

    ``n_outputs`` outputs had at least one answer, ``n_samples`` answers in all, ``k``
    answers per output (k₀ when unequal). ``mean_within_sd`` is the mean sample standard
    deviation (ddof 1) over the outputs with two answers or more, ``pooled_within_sd``
    √MSW; ``icc1`` and ``icck`` are ICC(1) and ICC(1,k), NaN where undefined (fewer than
    two outputs, no output with two answers, or no variance at all)."""

    n_outputs: int
    n_samples: int
    k: float
    mean_within_sd: float
    pooled_within_sd: float
    icc1: float
    icck: float
    ms_between: float
    ms_within: float


def self_consistency(counts: npt.ArrayLike, values: npt.ArrayLike) -> SelfConsistency:
    """From ``counts`` (outputs × scale points: how many answers gave each point) and the
    points' ``values``; see the module's docstring."""
    c = np.asarray(counts, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != v.size:
        raise ValueError("counts must be outputs × scale points, one column per value")
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError("counts must be finite and non-negative")
    n_i = c.sum(axis=1)
    c, n_i = c[n_i > 0], n_i[n_i > 0]
    n, total = int(n_i.size), float(n_i.sum())
    nan = math.nan
    if n == 0:
        return SelfConsistency(0, 0, nan, nan, nan, nan, nan, nan, nan)
    sums = c @ v
    means = sums / n_i
    within = c @ (v**2) - sums * means  # Σ (y − ȳᵢ)² per output
    within = np.maximum(within, 0.0)  # rounding below zero on constant outputs
    grand = float(sums.sum() / total)
    ss_between = float(np.sum(n_i * (means - grand) ** 2))
    ss_within = float(within.sum())
    df_within = total - n
    repeated = n_i >= 2
    mean_sd = nan
    if repeated.any():
        mean_sd = float(np.mean(np.sqrt(within[repeated] / (n_i[repeated] - 1))))
    msw = ss_within / df_within if df_within > 0 else nan
    msb = ss_between / (n - 1) if n >= 2 else nan
    k0 = (total - float(np.sum(n_i**2)) / total) / (n - 1) if n >= 2 else nan
    icc1 = icck = nan
    if math.isfinite(msw) and math.isfinite(msb):
        denominator = msb + (k0 - 1.0) * msw
        icc1 = (msb - msw) / denominator if denominator > 0 else nan
        icck = (msb - msw) / msb if msb > 0 else nan
    return SelfConsistency(
        n_outputs=n,
        n_samples=int(total),
        k=k0,
        mean_within_sd=mean_sd,
        pooled_within_sd=math.sqrt(msw) if math.isfinite(msw) else nan,
        icc1=icc1,
        icck=icck,
        ms_between=msb,
        ms_within=msw,
    )


@dataclass(frozen=True)
class CorrelationChange:
    """Run a's correlation with the humans minus run b's, on the ``n_outputs`` outputs
    both scored (and the humans judged), with its paired bootstrap interval at
    ``confidence`` (percentile; ``n_undefined`` resamples where either was undefined are
    left out), the two-sided paired bootstrap p of no change, and ``p_lower``, the
    one-sided p of H1: a is below b."""

    value_a: float
    value_b: float
    delta: float
    low: float
    high: float
    p_value: float
    p_lower: float
    n_outputs: int
    resamples: int
    n_undefined: int
    confidence: float


def correlation_change(
    plan: Resamples,
    metric_a: npt.ArrayLike,
    metric_b: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    policy: Policy = Policy.SKIP,
    average: Average = Average.MACRO,
    options: Options = DEFAULT_OPTIONS,
    confidence: float = 0.95,
) -> CorrelationChange:
    """The change in correlation from run b to run a (see :class:`CorrelationChange`):
    both are correlated on the outputs where a, b and the humans all have a value, and
    recomputed on each of ``plan``'s resamples (drawn over those outputs' documents)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie in (0, 1)")
    a = np.asarray(metric_a, dtype=np.float64)
    b = np.asarray(metric_b, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    shared = np.isfinite(a) & np.isfinite(b) & np.isfinite(y)
    a, b = np.where(shared, a, np.nan), np.where(shared, b, np.nan)
    values, draws = [], []
    for scores in (a, b):
        estimate = correlate(
            scores,
            y,
            level=level,
            coefficient=coefficient,
            docs=plan.docs,
            systems=plan.systems,
            policy=policy,
            average=average,
            options=options,
        )
        values.append(float(estimate.value))
        draws.append(
            bootstrap_distribution(
                plan,
                scores,
                y,
                level=level,
                coefficient=coefficient,
                policy=policy,
                average=average,
                options=options,
                estimate=estimate,
            )
        )
    delta = values[0] - values[1]
    differences = draws[0] - draws[1]
    finite = differences[np.isfinite(differences)]
    tail = (1.0 - confidence) / 2.0
    low = high = math.nan
    if finite.size and math.isfinite(delta):
        low, high = (float(q) for q in np.quantile(finite, [tail, 1.0 - tail]))
    return CorrelationChange(
        value_a=values[0],
        value_b=values[1],
        delta=delta,
        low=low,
        high=high,
        p_value=paired_bootstrap_p(draws[0], draws[1], values[0], values[1]),
        p_lower=paired_bootstrap_p(draws[0], draws[1], values[0], values[1], Alternative.LESS),
        n_outputs=int(shared.sum()),
        resamples=plan.size,
        n_undefined=int(differences.size - finite.size),
        confidence=confidence,
    )


@dataclass(frozen=True)
class RankChange:
    """A system ranked differently by two runs (1 = highest mean score; ties share the
    average rank), on the outputs both scored."""

    system: int  # the system's code
    rank_a: float
    rank_b: float


def rank_changes(
    metric_a: npt.ArrayLike, metric_b: npt.ArrayLike, systems: Groups
) -> list[RankChange]:
    """The systems whose rank by mean score differs between run a and run b (each
    system's mean over the outputs both runs scored), largest change first."""
    ranks = system_ranks(metric_a, metric_b, systems)
    a, b = ranks.metric_rank, ranks.human_rank
    moved = np.flatnonzero(np.isfinite(a) & np.isfinite(b) & (a != b))
    order = sorted(moved, key=lambda k: (-abs(float(a[k] - b[k])), int(k)))
    return [RankChange(int(k), float(a[k]), float(b[k])) for k in order]
