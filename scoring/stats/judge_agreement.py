"""How well a judge agrees with human annotators, beside how well they agree with each other.

The inputs are a reliability matrix ``humans`` (annotators × items, NaN = no answer),
the judge's answer per item (``judge``, NaN = not judged) and each item's document
(``docs``). Everything is computed from per-document tables of answer pairs
(:mod:`scoring.stats.agreement_tables`), so a bootstrap over documents is a product of
draw counts and tables, and every resample is computed exactly.

* **Pointwise judges** on an ordinal scale (:func:`pointwise_agreement`): quadratic-
  weighted Cohen's κ and Gwet's AC1 over the pairs (judge's answer, one annotator's
  answer) on every item both judged, i.e. the judge against a pooled annotator; and
  Krippendorff's α with the judge as one more annotator. Beside them, the same
  statistics among the annotators: κ and AC1 over the pairs of annotators on the same
  item (each pair in both orders, so κ's two marginals are the pooled annotators'), α
  of the annotators alone. With missing answers this pools the pairs (an item answered
  by m annotators adds m(m − 1)/2 of them); irrCAC's multi-rater AC1 averages each
  item's agreement instead, so the two differ unless every item has as many answers.
* **Pairwise judges** (:func:`pairwise_agreement`; answers ``PREFERS_A`` = 1, ``TIE`` = 0,
  ``PREFERS_B`` = −1): agreement as the MT-Bench paper defines it (Zheng et al., NeurIPS
  2023, and its code, FastChat's ``llm_judge/compute_agreement.py``): the share of (judge vote, human vote)
  pairs on the same item that agree, *with ties* (a tie is a third category, and agrees
  with a tie) and *without ties* (pairs where either side voted tie are left out), and
  Cohen's κ over the three categories; beside them the same over the pairs of distinct
  annotators on the same item (MT-Bench's human–human agreement).

Intervals are bootstrap intervals over documents (items of one document stay together;
draws from the caller's seeded generator, as :func:`scoring.stats.resampling.
draw_resamples` makes them): studentized by default (the bootstrap-t, each resample's
standard error a jackknife over its documents), or percentile, or BCa (bias-corrected
and accelerated). On 1000 simulated studies of 40 documents the studentized intervals
covered 0.943–0.964 at nominal 0.95, the percentile and BCa ones 0.929–0.949 (see
:func:`interval`). Resamples whose statistic is undefined are left out and counted.
An interval is never wider than the statistic's range: the studentized one can reach
past it on few documents (κ's [−1.24, 4.98] on a handful of pairs), and is then cut to
it and marked ``clipped``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from scoring.stats.agreement_tables import (
    AlphaLevel,
    answer_counts,
    cohen_kappa,
    coincidences,
    gwet_ac1,
    krippendorff_alpha_from_coincidences,
    pairs_between,
    pairs_within,
    percent_agreement,
    sum_by,
)
from scoring.stats.position import PREFERS_A, PREFERS_B, TIE
from scoring.stats.ranking import FloatArray, Groups
from scoring.stats.resampling import Resamples, Unit, draw_resamples

Interval = Literal["studentized", "percentile", "bca"]
Statistic = Callable[[FloatArray], FloatArray]
VOTES = np.array([PREFERS_B, TIE, PREFERS_A], dtype=np.float64)


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap interval (NaN when undefined or not asked for).

    ``n`` is what it was computed on: pairs of answers, or for α the pairable answers;
    ``n_undefined`` resamples had no defined value and were left out of the interval;
    ``clipped``: the interval reached past the statistic's range (:data:`RANGES`) and
    was cut to it (the studentized bootstrap can, on few documents)."""

    value: float
    low: float
    high: float
    n: float
    n_undefined: int = 0
    clipped: bool = False


@dataclass(frozen=True)
class PointwiseAgreement:
    """The judge against the annotators, and the annotators among themselves."""

    quadratic_kappa: Estimate
    gwet_ac1: Estimate
    krippendorff_alpha: Estimate  # the annotators and the judge as one more
    human_quadratic_kappa: Estimate
    human_gwet_ac1: Estimate
    human_krippendorff_alpha: Estimate
    n_items: int  # items judged by the judge and at least one annotator
    n_documents: int
    resamples: int
    confidence: float
    interval: Interval


@dataclass(frozen=True)
class PairwiseAgreement:
    """MT-Bench agreement (with and without ties) and Cohen's κ, judge and annotators."""

    with_ties: Estimate
    without_ties: Estimate
    kappa: Estimate
    human_with_ties: Estimate
    human_without_ties: Estimate
    human_kappa: Estimate
    n_items: int  # items judged by the judge and at least one annotator
    n_documents: int
    resamples: int
    confidence: float
    interval: Interval


def without_ties(table: npt.ArrayLike) -> FloatArray:
    """A 3 × 3 vote table (B, tie, A) without the pairs where either side voted tie."""
    t = np.asarray(table, dtype=np.float64)
    keep = [0, 2]
    return np.asarray(t[..., keep, :][..., :, keep], dtype=np.float64)


METHODS: tuple[Interval, ...] = ("studentized", "percentile", "bca")
# The range of each statistic: a share of agreeing pairs lies in [0, 1]; Cohen's κ
# (weighted or not) and Gwet's AC1 (its chance agreement is at most ½) in [−1, 1];
# Krippendorff's α is at most 1 and, with its small-sample correction, above −1 (−1 + 1/N
# for two coders disagreeing on all N units; 20,000 random small tables reached −0.77).
SHARE = (0.0, 1.0)
CHANCE_CORRECTED = (-1.0, 1.0)


def bounded(found: Estimate, limits: tuple[float, float] | None) -> Estimate:
    """``found`` with its interval cut to the statistic's range ``limits`` (and
    ``clipped`` set when it had to be): a percentile interval never leaves it, the
    studentized one can on few documents, where it says the data hardly bound it."""
    if limits is None or not (math.isfinite(found.low) and math.isfinite(found.high)):
        return found
    low, high = max(found.low, limits[0]), min(found.high, limits[1])
    if low == found.low and high == found.high:
        return found
    return replace(found, low=min(low, high), high=max(low, high), clipped=True)


def interval(
    tables: FloatArray,
    statistic: Statistic,
    plan: Resamples | None,
    *,
    confidence: float = 0.95,
    method: Interval = "studentized",
    n: float | None = None,
    limits: tuple[float, float] | None = None,
) -> Estimate:
    """``statistic`` of the documents' tables (documents × q × q) summed, with a bootstrap
    interval over ``plan``'s resampled documents (none when ``plan`` is None), cut to
    the statistic's range ``limits`` when given (:func:`bounded`).

    ``studentized`` (the bootstrap-t: each resample's deviation from the estimate over
    its own jackknife standard error by documents) covered 0.943–0.964 at nominal 0.95
    for the statistics here on 1000 simulated studies of 40 documents, ``percentile``
    0.929–0.947 and ``bca`` 0.931–0.949 (``bench/judge_agreement_coverage.py``). It
    costs a jackknife per resample: D statistics on each of the B resamples (about
    0.15 s for the six pointwise statistics at D = 40, B = 500)."""
    return bounded(_interval(tables, statistic, plan, confidence, method, n), limits)


def _interval(
    tables: FloatArray,
    statistic: Statistic,
    plan: Resamples | None,
    confidence: float,
    method: Interval,
    n: float | None,
) -> Estimate:
    if method not in METHODS:
        raise ValueError(f"unknown interval {method!r}: use one of {', '.join(METHODS)}")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie in (0, 1)")
    total = tables.sum(axis=0)
    value = float(statistic(total))
    size = float(total.sum()) if n is None else n
    if plan is None or plan.doc_counts is None or not math.isfinite(value):
        return Estimate(value, math.nan, math.nan, size)
    if plan.doc_counts.shape[1] != tables.shape[0]:
        raise ValueError("the resamples were drawn over other documents")
    tail = (1.0 - confidence) / 2.0
    levels = np.array([tail, 1.0 - tail])
    if method == "studentized":
        return _studentized(tables, total, statistic, value, plan.doc_counts, levels, size)
    draws = statistic(np.einsum("bd,dck->bck", plan.doc_counts, tables))
    finite = draws[np.isfinite(draws)]
    undefined = int(draws.size - finite.size)
    if finite.size == 0:
        return Estimate(value, math.nan, math.nan, size, undefined)
    if method == "bca":
        levels = _bca_levels(tables, total, statistic, value, finite, levels)
    low, high = np.quantile(finite, levels)
    return Estimate(value, float(low), float(high), size, undefined)


# Resamples × documents per block of the studentized bootstrap's jackknives (a block's
# left-out tables are this many q × q tables).
_JACKKNIFE_CELLS = 1 << 16


def _jackknife_se(
    tables: FloatArray, totals: FloatArray, counts: FloatArray, statistic: Statistic
) -> FloatArray:
    """Per row of ``counts`` (a resample: how often each document was drawn) and its
    summed tables ``totals``, the jackknife standard error over its drawn documents, one
    copy left out at a time: √((n − 1) / n · Σ (θ₍ᵢ₎ − θ̄)²) over the n copies."""
    n = counts.sum(axis=1)
    left_out = statistic(totals[:, None, :, :] - tables[None, :, :, :])
    weight = np.where(np.isfinite(left_out), counts, 0.0)
    values = np.where(weight > 0, left_out, 0.0)
    mean = np.sum(weight * values, axis=1) / n
    spread = np.sum(weight * (values - mean[:, None]) ** 2, axis=1)
    return np.asarray(np.sqrt((n - 1.0) / n * spread), dtype=np.float64)


def _studentized(
    tables: FloatArray,
    total: FloatArray,
    statistic: Statistic,
    value: float,
    counts: FloatArray,
    levels: FloatArray,
    size: float,
) -> Estimate:
    """The bootstrap-t interval (Efron & Tibshirani 1993, ch. 12): the quantiles of
    t* = (θ* − θ̂) / se* over the resamples turned around the estimate,
    [θ̂ − t*₉₇.₅ · se, θ̂ − t*₂.₅ · se], every se a jackknife over documents."""
    ones = np.ones((1, tables.shape[0]))
    se = float(_jackknife_se(tables, total[None], ones, statistic)[0])
    if se == 0.0:  # every document leaves the statistic where it is: so does every resample
        return Estimate(value, value, value, size)
    step = max(1, _JACKKNIFE_CELLS // max(1, tables.shape[0]))
    t = np.empty(counts.shape[0])
    for start in range(0, counts.shape[0], step):
        block = counts[start : start + step]
        totals = np.einsum("bd,dck->bck", block, tables)
        with np.errstate(invalid="ignore", divide="ignore"):
            spread = _jackknife_se(tables, totals, block, statistic)
            t[start : start + step] = (statistic(totals) - value) / spread
    finite = t[np.isfinite(t)]
    undefined = int(t.size - finite.size)
    if finite.size == 0 or not math.isfinite(se):
        return Estimate(value, math.nan, math.nan, size, undefined)
    upper_t, lower_t = np.quantile(finite, levels[::-1])
    return Estimate(
        value, value - float(upper_t) * se, value - float(lower_t) * se, size, undefined
    )


def _bca_levels(
    tables: FloatArray,
    total: FloatArray,
    statistic: Statistic,
    value: float,
    draws: FloatArray,
    levels: FloatArray,
) -> FloatArray:
    """Efron's BCa percentiles: bias from the share of resamples below the estimate,
    acceleration from the leave-one-document-out jackknife."""
    share = (np.count_nonzero(draws < value) + 0.5 * np.count_nonzero(draws == value)) / draws.size
    if share <= 0.0 or share >= 1.0:
        return levels
    z0 = float(special.ndtri(share))
    jack = statistic(total[None, :, :] - tables)
    jack = jack[np.isfinite(jack)]
    spread = jack.mean() - jack if jack.size else np.zeros(1)
    denominator = 6.0 * float(np.sum(spread**2)) ** 1.5
    accel = float(np.sum(spread**3)) / denominator if denominator > 0 else 0.0
    z = special.ndtri(levels)
    adjusted = special.ndtr(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))
    return np.asarray(np.clip(adjusted, 0.0, 1.0), dtype=np.float64)


@dataclass(frozen=True)
class JudgeTables:
    """Per document (documents × q × q): the (judge, annotator) answer pairs, rows the
    judge's answer; the pairs of annotators on one item, each in both orders; the
    coincidences of the annotators with the judge as one more, and of the annotators
    alone. ``n_items`` items were judged by the judge and at least one annotator."""

    docs: Groups
    values: FloatArray
    judge_human: FloatArray
    human_human: FloatArray
    with_judge: FloatArray
    humans_only: FloatArray
    n_items: int


def judge_tables(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    values: npt.ArrayLike,
) -> JudgeTables:
    """The per-document tables of ``judge`` (one answer per item, NaN = none) and
    ``humans`` (annotators × items) over the scale's ``values`` (ascending)."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size < 2 or np.any(np.diff(v) <= 0):
        raise ValueError("the scale needs two or more points, ascending")
    j = np.asarray(judge, dtype=np.float64).reshape(-1)
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != j.size:
        raise ValueError("humans must be annotators × items, with one judge answer per item")
    groups = docs if isinstance(docs, Groups) else Groups.from_keys(docs)
    if groups.n_items != j.size:
        raise ValueError("docs must name one document per item")
    judge_counts, human_counts = answer_counts(j, v), answer_counts(h, v)
    codes, n_docs = groups.codes, groups.n_groups
    both = (judge_counts.sum(axis=1) > 0) & (human_counts.sum(axis=1) > 0)
    return JudgeTables(
        docs=groups,
        values=v,
        judge_human=sum_by(codes, pairs_between(judge_counts, human_counts), n_docs),
        human_human=sum_by(codes, 2.0 * pairs_within(human_counts), n_docs),
        with_judge=sum_by(codes, coincidences(judge_counts + human_counts), n_docs),
        humans_only=sum_by(codes, coincidences(human_counts), n_docs),
        n_items=int(np.count_nonzero(both)),
    )


def _plan(
    tables: JudgeTables, rng: np.random.Generator | None, resamples: int, plan: Resamples | None
) -> Resamples | None:
    if plan is None and rng is not None:
        plan = draw_resamples(rng, tables.docs, unit=Unit.DOCUMENTS, resamples=resamples)
    return plan


def pointwise_agreement(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    scale: npt.ArrayLike,
    *,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
    alpha_level: AlphaLevel = "ordinal",
    annotator_intervals: bool = True,
) -> PointwiseAgreement:
    """Quadratic-weighted κ, Gwet's AC1 and Krippendorff's α (at ``alpha_level``) of the
    judge against the annotators and among the annotators, on the ordinal ``scale``
    (its points, ascending: 1..5 for a Likert scale; every answer must be one of them).
    Intervals over documents come from ``plan`` or, when ``rng`` is given, from
    ``resamples`` fresh draws; ``annotator_intervals=False`` leaves the annotators' own
    statistics without them (half the work, for a caller that compares several judges
    with the same annotators and has them already). See the module's docstring."""
    t = judge_tables(judge, humans, docs, scale)
    drawn = _plan(t, rng, resamples, plan)

    def kappa(table: FloatArray) -> FloatArray:
        return cohen_kappa(table, "quadratic")

    def alpha(table: FloatArray) -> FloatArray:
        return krippendorff_alpha_from_coincidences(table, t.values, alpha_level)

    def run(
        tables: FloatArray, statistic: Statistic, n: float | None = None, among: bool = False
    ) -> Estimate:
        plan = drawn if annotator_intervals or not among else None
        return interval(
            tables,
            statistic,
            plan,
            confidence=confidence,
            method=method,
            n=n,
            limits=CHANCE_CORRECTED,
        )

    n_hh = float(t.human_human.sum()) / 2.0
    return PointwiseAgreement(
        quadratic_kappa=run(t.judge_human, kappa),
        gwet_ac1=run(t.judge_human, gwet_ac1),
        krippendorff_alpha=run(t.with_judge, alpha),
        human_quadratic_kappa=run(t.human_human, kappa, n_hh, among=True),
        human_gwet_ac1=run(t.human_human, gwet_ac1, n_hh, among=True),
        human_krippendorff_alpha=run(t.humans_only, alpha, among=True),
        n_items=t.n_items,
        n_documents=t.docs.n_groups,
        resamples=0 if drawn is None else drawn.size,
        confidence=confidence,
        interval=method,
    )


def agreement_without_ties(table: npt.ArrayLike) -> FloatArray:
    """MT-Bench's agreement without ties: the share of agreeing pairs among those where
    neither side voted tie."""
    return percent_agreement(without_ties(table))


def pairwise_agreement(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    *,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
) -> PairwiseAgreement:
    """MT-Bench agreement with and without ties and Cohen's κ (three categories) of a
    pairwise judge's votes against the annotators' and among the annotators, votes
    coded ``PREFERS_A`` (1), ``TIE`` (0), ``PREFERS_B`` (−1). Intervals as in
    :func:`pointwise_agreement`. See the module's docstring."""
    t = judge_tables(judge, humans, docs, VOTES)
    drawn = _plan(t, rng, resamples, plan)

    def run(tables: FloatArray, statistic: Statistic, n: float) -> Estimate:
        limits = CHANCE_CORRECTED if statistic is cohen_kappa else SHARE
        return interval(
            tables, statistic, drawn, confidence=confidence, method=method, n=n, limits=limits
        )

    jh, hh = t.judge_human, t.human_human  # hh holds each pair twice, once per order
    n_jh, n_hh = float(jh.sum()), float(hh.sum()) / 2.0
    n_jh_sided, n_hh_sided = float(without_ties(jh).sum()), float(without_ties(hh).sum()) / 2.0
    return PairwiseAgreement(
        with_ties=run(jh, percent_agreement, n_jh),
        without_ties=run(jh, agreement_without_ties, n_jh_sided),
        kappa=run(jh, cohen_kappa, n_jh),
        human_with_ties=run(hh, percent_agreement, n_hh),
        human_without_ties=run(hh, agreement_without_ties, n_hh_sided),
        human_kappa=run(hh, cohen_kappa, n_hh),
        n_items=t.n_items,
        n_documents=t.docs.n_groups,
        resamples=0 if drawn is None else drawn.size,
        confidence=confidence,
        interval=method,
    )
