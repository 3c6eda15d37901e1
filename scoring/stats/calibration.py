"""Calibration of a judge's label distributions against the annotators: expected
calibration error with its bins (a reliability diagram), and the Brier score.

A judge that reads p(label) over an aspect's label words (G-Eval on labels) stores a
distribution per item (items × q, in the labels' order; NaN rows where none). Each
(item, annotator answer) pair is one observation, as in :mod:`scoring.stats.labels`
(the judge against a pooled annotator; with one annotator per item, the textbook
definitions):

* **target** ``positive`` (a binary aspect's default): the confidence is the probability
  of the positive label and the outcome whether the annotator gave it, the reliability
  diagram of ``sklearn.calibration.calibration_curve``; ``top_label`` (a categorical
  aspect's default; Guo et al. 2017): the confidence is the largest probability and the
  outcome whether the annotator gave that label (ties: the first in the labels' order);
* **bins**: ``width``, equal-width over [0, 1], or ``mass``, edges at the quantiles of
  the observations' confidences (where many share a confidence, equal edges leave the
  bins between them empty, and the first bin may hold only the lowest); an observation falls in the bin whose upper edge is the first ≥ its confidence (the
  first bin includes its lower edge), as ``calibration_curve`` assigns them, so the
  non-empty bins' mean confidence and observed share equal its ``prob_pred`` and
  ``prob_true``;
* **ECE** = Σ_b (n_b / N) |observed share_b − mean confidence_b|; **MCE** the largest
  such gap over the non-empty bins;
* **Brier** = the mean over observations of Σ_k (p_k − 1[answer = k])², Brier's
  original multi-class score (0 to 2): ``sklearn.metrics.brier_score_loss(...,
  scale_by_half=False)``; for a binary aspect twice its default (which halves it).

Intervals by document as everywhere (:mod:`scoring.stats.table_intervals`), the bins'
edges fixed from the full data. NaN, with the reason, where no item has both a
distribution and an annotator's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from scoring.stats.draws import Resamples
from scoring.stats.label_tables import LabelSet, label_counts
from scoring.stats.ranking import FloatArray, Groups
from scoring.stats.table_intervals import (
    SHARE,
    Estimate,
    Interval,
    document_plan,
    documents,
    intervals,
)

Target = Literal["positive", "top_label"]
Strategy = Literal["width", "mass"]
TOLERANCE = 1e-6  # how far from 1 a distribution's sum may be
NO_PAIRS = "no item has both the judge's distribution and an annotator's answer"


@dataclass(frozen=True)
class Bin:
    """One bin of the reliability diagram: confidences in (``low``, ``high``] (the first
    bin includes ``low``), ``n`` observations, their mean confidence and the share of
    them whose outcome held (NaN when empty)."""

    low: float
    high: float
    n: float
    confidence: float
    observed: float

    @property
    def gap(self) -> float:
        return self.observed - self.confidence


@dataclass(frozen=True, eq=False)
class Calibration:
    """ECE, MCE and Brier with intervals, and the bins they come from."""

    target: Target
    strategy: Strategy
    bins: tuple[Bin, ...]
    ece: Estimate
    mce: Estimate
    brier: Estimate
    n_items: int  # items with a distribution and at least one answer
    n_pairs: int  # (item, answer) observations
    n_documents: int
    resamples: int
    confidence: float
    interval: Interval


def check_distributions(distributions: npt.ArrayLike, q: int) -> FloatArray:
    """``distributions`` as items × q floats: every row all NaN (none) or finite,
    non-negative and summing to 1 within :data:`TOLERANCE`; else an error naming the
    first bad row."""
    p = np.asarray(distributions, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != q:
        raise ValueError(f"distributions must be items × {q} (one column per label)")
    missing = np.isnan(p)
    partial = missing.any(axis=1) & ~missing.all(axis=1)
    given = ~missing.any(axis=1)
    bad = partial | (given & (~np.isfinite(p).all(axis=1) | (p < 0).any(axis=1)))
    bad |= given & (np.abs(p.sum(axis=1) - 1.0) > TOLERANCE)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"distribution of item {k}: {p[k].tolist()} is not a probability distribution "
            f"(non-negative, summing to 1, or all NaN for none)"
        )
    return p


def edges_of(
    confidence: FloatArray, weight: FloatArray, bins: int, strategy: Strategy
) -> FloatArray:
    """The bins' edges: ``bins`` equal widths over [0, 1], or the quantiles of the
    confidences (each repeated ``weight`` times; equal quantiles leave the bins between
    them empty)."""
    if bins < 1:
        raise ValueError("calibration needs at least one bin")
    if strategy == "width":
        return np.linspace(0.0, 1.0, bins + 1)
    if strategy != "mass":
        raise ValueError(f"unknown binning {strategy!r}: use width or mass")
    if confidence.size == 0:
        return np.array([0.0, 1.0])
    repeated = np.repeat(confidence, weight.astype(np.intp))
    # percentiles of q·100, as calibration_curve takes them: quantiles at q may differ
    # in the last bit, and move an observation on an edge to the next bin
    return np.asarray(np.percentile(repeated, np.linspace(0.0, 1.0, bins + 1) * 100))


def calibration_sums(
    confidence: FloatArray,
    outcome: FloatArray,
    weight: FloatArray,
    brier: FloatArray,
    edges: FloatArray,
) -> FloatArray:
    """Items × (2 · bins + 2): per bin the observations and their confidences minus
    their outcomes; then the Brier sums and the observations (what ECE, MCE and Brier
    need, and no more: the bootstrap's left-out tables are this wide)."""
    n_bins = edges.size - 1
    which = np.searchsorted(edges[1:-1], confidence)
    out = np.zeros((confidence.size, 2 * n_bins + 2))
    rows = np.arange(confidence.size)
    out[rows, 2 * which] = weight
    out[rows, 2 * which + 1] = weight * confidence - outcome
    out[:, -2] = brier
    out[:, -1] = weight
    return out


def calibration_statistics(sums: npt.ArrayLike) -> FloatArray:
    """ECE, MCE and Brier (last axis) from summed :func:`calibration_sums`."""
    s = np.asarray(sums, dtype=np.float64)
    per_bin = s[..., :-2].reshape(s.shape[:-1] + (-1, 2))
    n, gap = per_bin[..., 0], np.abs(per_bin[..., 1])
    total = s[..., -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        ece = gap.sum(axis=-1) / total
        mce = np.where(total > 0, np.max(np.where(n > 0, gap / n, -np.inf), axis=-1), np.nan)
        brier = s[..., -2] / total
    return np.stack([ece, mce, brier], axis=-1)


def calibration(
    distributions: npt.ArrayLike,
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    labels: LabelSet,
    *,
    target: Target | None = None,
    bins: int = 10,
    strategy: Strategy = "width",
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
) -> Calibration:
    """The calibration of the judge's ``distributions`` (items × q) against ``humans``'
    answers (annotators × items, label codes, NaN = none); see the module's docstring.
    ``target`` defaults to ``positive`` for a binary aspect, ``top_label`` otherwise."""
    q = labels.q
    p = check_distributions(distributions, q)
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim == 1:
        h = h[None, :]
    if h.shape[1] != p.shape[0]:
        raise ValueError("humans must be annotators × items, one distribution per item")
    chosen: Target = target or ("positive" if labels.is_binary else "top_label")
    if chosen == "positive" and labels.positive_index is None:
        raise ValueError("the positive target needs a binary aspect with a positive label")
    groups = documents(docs, p.shape[0])
    counts = label_counts(h, q)
    m = counts.sum(axis=1)
    used = np.isfinite(p).all(axis=1) & (m > 0)
    p0 = np.where(used[:, None], p, 0.0)
    if chosen == "positive":
        label = np.full(p.shape[0], labels.positive_index, dtype=np.intp)
    else:
        label = np.argmax(p0, axis=1)
    rows = np.arange(p.shape[0])
    conf = p0[rows, label]
    weight = np.where(used, m, 0.0)
    outcome = np.where(used, counts[rows, label], 0.0)
    brier = np.where(used, m * np.sum(p0 * p0, axis=1) - 2.0 * np.sum(p0 * counts, axis=1) + m, 0.0)
    edges = edges_of(conf[used], weight[used], bins, strategy)
    per_item = calibration_sums(conf, outcome, weight, brier, edges)
    per_item[~used] = 0.0
    sums = np.zeros((groups.n_groups, per_item.shape[1]))
    np.add.at(sums, groups.codes, per_item)
    plan = document_plan(groups, rng, resamples, plan)
    total = sums.sum(axis=0)
    n_pairs = float(total[-1])
    why = None if n_pairs > 0 else NO_PAIRS
    ece, mce, brier_score = intervals(
        sums,
        calibration_statistics,
        plan,
        confidence=confidence,
        method=method,
        n=n_pairs,
        reasons=[why, why, why],
        limits=[SHARE, SHARE, (0.0, 2.0)],  # the multiclass Brier score lies in [0, 2]
    )
    return Calibration(
        target=chosen,
        strategy=strategy,
        bins=_bins(conf[used], outcome[used], weight[used], edges),
        ece=ece,
        mce=mce,
        brier=brier_score,
        n_items=int(np.count_nonzero(used)),
        n_pairs=int(n_pairs),
        n_documents=groups.n_groups,
        resamples=0 if plan is None else plan.size,
        confidence=confidence,
        interval=method,
    )


def _bins(
    conf: FloatArray, outcome: FloatArray, weight: FloatArray, edges: FloatArray
) -> tuple[Bin, ...]:
    which = np.searchsorted(edges[1:-1], conf)
    size = edges.size - 1
    n = np.bincount(which, weights=weight, minlength=size)
    confidence = np.bincount(which, weights=weight * conf, minlength=size)
    observed = np.bincount(which, weights=outcome, minlength=size)
    out = []
    for k in range(size):
        mean_conf = confidence[k] / n[k] if n[k] > 0 else float("nan")
        share = observed[k] / n[k] if n[k] > 0 else float("nan")
        out.append(Bin(float(edges[k]), float(edges[k + 1]), float(n[k]), mean_conf, share))
    return tuple(out)
