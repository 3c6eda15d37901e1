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
draw_resamples` makes them), computed by :mod:`scoring.stats.table_intervals`:
studentized by default (the bootstrap-t, each resample's standard error a jackknife over
its documents), or percentile, or BCa (bias-corrected and accelerated). On 1000
simulated studies of 40 documents the studentized intervals covered 0.943–0.964 at
nominal 0.95, the percentile and BCa ones 0.929–0.949. Resamples whose statistic is
undefined are left out and counted. An interval is never wider than the statistic's
range: the studentized one can reach past it on few documents (κ's [−1.24, 4.98] on a
handful of pairs), and is then cut to it and marked ``clipped``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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
from scoring.stats.resampling import Resamples
from scoring.stats.table_intervals import CHANCE_CORRECTED as CHANCE_CORRECTED
from scoring.stats.table_intervals import METHODS as METHODS
from scoring.stats.table_intervals import SHARE as SHARE
from scoring.stats.table_intervals import Estimate as Estimate
from scoring.stats.table_intervals import Interval as Interval
from scoring.stats.table_intervals import Statistic as Statistic
from scoring.stats.table_intervals import bounded as bounded
from scoring.stats.table_intervals import document_plan, documents
from scoring.stats.table_intervals import interval as interval

VOTES = np.array([PREFERS_B, TIE, PREFERS_A], dtype=np.float64)


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
    groups = documents(docs, j.size)
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
    drawn = document_plan(t.docs, rng, resamples, plan)

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
    drawn = document_plan(t.docs, rng, resamples, plan)

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
