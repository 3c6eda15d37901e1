"""How well a judge's labels agree with the annotators', beside how well the annotators
agree with each other: the statistics of binary (pass/fail) and categorical aspects.

Inputs, as in :mod:`scoring.stats.judge_agreement`: the annotators' answers ``humans``
(annotators × items), the judge's ``judge`` (one per item) and each item's document
``docs``; answers are label codes, the position of each label in the aspect's
:class:`~scoring.stats.label_tables.LabelSet` (``labels.codes(raw)`` makes them; NaN =
no answer).

* :func:`label_agreement`: the confusion table of the pairs (one annotator's answer, the
  judge's) on every item both answered, i.e. the judge against a pooled annotator (rows:
  the humans, the truth; columns: the judge), and from it accuracy, Cohen's κ (weighted
  for ordered labels) with its base rates beside it (the majority label's share, the
  chance agreement), MCC, macro-F1 and per label recall, precision and F1 (a binary
  aspect's TPR, TNR, precision and F1 of the positive label). Beside each, the **human
  ceiling**: the same statistic over the pairs of distinct annotators on one item, each
  pair in both orders (so the table is symmetric: recall and precision of a label are
  then its specific agreement), as :func:`~scoring.stats.judge_agreement.
  pointwise_agreement` does for κ. With one annotator per item the judge's statistics
  are scikit-learn's on (human, judge) vectors. On the symmetric table the ceiling's κ
  is Scott's π (and its MCC the same number); with the same number of annotators on
  every item it is Fleiss' κ (:func:`human_ceiling`).
* :func:`annotator_reliability`: the annotators among themselves, as a campaign reports
  them: Fleiss' κ, Krippendorff's α (nominal by default; missing answers allowed) and
  Cohen's κ of each pair of annotators on the items both answered.

Intervals are bootstrap intervals by document (:mod:`scoring.stats.table_intervals`,
studentized by default; draws from ``plan`` or the caller's generator), each resample
computed exactly from per-document tables; every statistic of one table is resampled in
one pass. NaN comes with its reason (``Estimate.reason``); the cases where scikit-learn
returns a number by convention are listed in :mod:`scoring.stats.label_tables`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.agreement_tables import (
    AlphaLevel,
    cohen_kappa,
    coincidences,
    krippendorff_alpha_from_coincidences,
    pairs_between,
    pairs_within,
    sum_by,
)
from scoring.stats.draws import Resamples
from scoring.stats.label_tables import (
    JUDGE_SIDES,
    PER_LABEL,
    SCALARS,
    LabelSet,
    Sides,
    fleiss_kappa,
    fleiss_reason,
    fleiss_sums,
    label_counts,
    margin_statistics,
    nominal_alpha,
    reasons,
    table_margins,
)
from scoring.stats.ranking import FloatArray, Groups
from scoring.stats.table_intervals import (
    CHANCE_CORRECTED,
    SHARE,
    Estimate,
    Interval,
    document_plan,
    documents,
    intervals,
)

HUMAN_SIDES = Sides("the annotators", "the annotators", "no item has two annotators' answers")


@dataclass(frozen=True, eq=False)
class LabelStatistics:
    """The statistics of one confusion table (``table``: q × q pooled pairs, rows the
    reference) with their intervals; ``recall``, ``precision`` and ``f1`` have one
    estimate per label, in the declared order. ``n_pairs`` pairs were counted (for the
    annotators among themselves, unordered pairs)."""

    labels: LabelSet
    table: FloatArray
    n_pairs: float
    accuracy: Estimate
    kappa: Estimate
    mcc: Estimate
    macro_f1: Estimate
    majority_share: Estimate  # base rate: the accuracy of always answering the majority label
    chance_agreement: Estimate  # κ's expected agreement, in κ's weights
    recall: tuple[Estimate, ...]
    precision: tuple[Estimate, ...]
    f1: tuple[Estimate, ...]

    def _positive(self, of: tuple[Estimate, ...], negative: bool = False) -> Estimate | None:
        k = self.labels.positive_index
        return None if k is None else of[1 - k if negative else k]

    @property
    def tpr(self) -> Estimate | None:
        """A binary aspect's true positive rate (recall of the positive label)."""
        return self._positive(self.recall)

    @property
    def tnr(self) -> Estimate | None:
        """A binary aspect's true negative rate (recall of the negative label)."""
        return self._positive(self.recall, negative=True)

    @property
    def positive_precision(self) -> Estimate | None:
        return self._positive(self.precision)

    @property
    def positive_f1(self) -> Estimate | None:
        """A binary aspect's F1 of the positive label (sklearn's ``average="binary"``)."""
        return self._positive(self.f1)


@dataclass(frozen=True, eq=False)
class LabelAgreement:
    """The judge against the annotators (``judge``), and the annotators among themselves
    (``human``: the ceiling), on one label aspect."""

    labels: LabelSet
    judge: LabelStatistics
    human: LabelStatistics
    n_items: int  # items answered by the judge and at least one annotator
    n_human_items: int  # items answered by at least two annotators
    n_documents: int
    resamples: int
    confidence: float
    interval: Interval


@dataclass(frozen=True, eq=False)
class LabelTables:
    """Per document (documents × q × q): the (annotator, judge) pairs, rows the
    annotator's answer; the pairs of distinct annotators on one item, each in both
    orders. And each item's label counts (items × q) of the annotators and the judge."""

    docs: Groups
    judge_human: FloatArray
    human_human: FloatArray
    human_counts: FloatArray
    judge_counts: FloatArray


def label_tables(
    judge: npt.ArrayLike, humans: npt.ArrayLike, docs: Groups | npt.ArrayLike, labels: LabelSet
) -> LabelTables:
    """The per-document tables of ``judge`` (one code per item) and ``humans``
    (annotators × items)."""
    j = np.asarray(judge, dtype=np.float64).reshape(-1)
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != j.size:
        raise ValueError("humans must be annotators × items, with one judge answer per item")
    groups = documents(docs, j.size)
    judge_counts, human_counts = label_counts(j, labels.q), label_counts(h, labels.q)
    codes, n_docs = groups.codes, groups.n_groups
    return LabelTables(
        docs=groups,
        judge_human=sum_by(codes, pairs_between(human_counts, judge_counts), n_docs),
        human_human=sum_by(codes, 2.0 * pairs_within(human_counts), n_docs),
        human_counts=human_counts,
        judge_counts=judge_counts,
    )


def statistics_of(
    tables: FloatArray,
    labels: LabelSet,
    plan: Resamples | None,
    *,
    confidence: float = 0.95,
    method: Interval = "studentized",
    sides: Sides = JUDGE_SIDES,
    halve: bool = False,
) -> LabelStatistics:
    """Every statistic of the documents' confusion ``tables`` summed, with intervals
    over ``plan`` (none when None); ``halve`` counts the pairs of a table that holds
    each pair in both orders once."""
    weights, q = labels.kappa_weights, labels.q
    total = tables.sum(axis=0)
    n_pairs = float(total.sum()) / (2.0 if halve else 1.0)

    def statistic(m: FloatArray) -> FloatArray:
        return margin_statistics(m, q, weights)

    found = intervals(
        table_margins(tables, weights),
        statistic,
        plan,
        confidence=confidence,
        method=method,
        n=n_pairs,
        reasons=reasons(total, labels, sides),
        limits=[CHANCE_CORRECTED if name in ("kappa", "mcc") else SHARE for name in SCALARS]
        + [SHARE] * (len(PER_LABEL) * q),
    )
    scalars = dict(zip(SCALARS, found[: len(SCALARS)], strict=True))
    per_label = {
        name: tuple(found[len(SCALARS) + i * q : len(SCALARS) + (i + 1) * q])
        for i, name in enumerate(PER_LABEL)
    }
    return LabelStatistics(
        labels=labels,
        table=total,
        n_pairs=n_pairs,
        accuracy=scalars["accuracy"],
        kappa=scalars["kappa"],
        mcc=scalars["mcc"],
        macro_f1=scalars["macro_f1"],
        majority_share=scalars["majority_share"],
        chance_agreement=scalars["chance_agreement"],
        recall=per_label["recall"],
        precision=per_label["precision"],
        f1=per_label["f1"],
    )


def label_agreement(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    labels: LabelSet,
    *,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
    annotator_intervals: bool = True,
) -> LabelAgreement:
    """The judge's label statistics against the annotators and the annotators' among
    themselves (see the module's docstring). Intervals over documents come from
    ``plan`` or, when ``rng`` is given, from ``resamples`` fresh draws;
    ``annotator_intervals=False`` leaves the annotators' own statistics without them
    (for a caller comparing several judges with the same annotators)."""
    t = label_tables(judge, humans, docs, labels)
    drawn = document_plan(t.docs, rng, resamples, plan)
    judge_stats = statistics_of(t.judge_human, labels, drawn, confidence=confidence, method=method)
    human_stats = _ceiling(
        t.human_human, labels, drawn if annotator_intervals else None, confidence, method
    )
    answered = t.human_counts.sum(axis=1)
    return LabelAgreement(
        labels=labels,
        judge=judge_stats,
        human=human_stats,
        n_items=int(np.count_nonzero((t.judge_counts.sum(axis=1) > 0) & (answered > 0))),
        n_human_items=int(np.count_nonzero(answered >= 2)),
        n_documents=t.docs.n_groups,
        resamples=0 if drawn is None else drawn.size,
        confidence=confidence,
        interval=method,
    )


# --- the annotators among themselves --------------------------------------------------


def _ceiling(
    tables: FloatArray,
    labels: LabelSet,
    plan: Resamples | None,
    confidence: float,
    method: Interval,
) -> LabelStatistics:
    return statistics_of(
        tables, labels, plan, confidence=confidence, method=method, sides=HUMAN_SIDES, halve=True
    )


def human_ceiling(
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    labels: LabelSet,
    *,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
) -> LabelStatistics:
    """The annotators' statistics among themselves, the ceiling of a judge's: the pairs
    of distinct annotators on one item, each pair in both orders (``label_agreement``'s
    ``human``, without a judge: compute it once per aspect and call
    :func:`label_agreement` with ``annotator_intervals=False`` for each judge). With the
    same number of annotators on every item its κ is Fleiss' κ and its accuracy the
    mean share of agreeing pairs."""
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim != 2:
        raise ValueError("humans must be annotators × items")
    groups = documents(docs, h.shape[1])
    tables = sum_by(groups.codes, 2.0 * pairs_within(label_counts(h, labels.q)), groups.n_groups)
    return _ceiling(tables, labels, document_plan(groups, rng, resamples, plan), confidence, method)


@dataclass(frozen=True)
class AnnotatorPair:
    """Cohen's κ (in the labels' weights) of two annotators (rows ``first``, ``second``
    of ``humans``) on the ``n_items`` items both answered."""

    first: int
    second: int
    kappa: Estimate
    n_items: int


@dataclass(frozen=True, eq=False)
class Reliability:
    """Agreement among the annotators of a campaign: Fleiss' κ and Krippendorff's α over
    all of them, Cohen's κ per pair (the pairs that share an item)."""

    labels: LabelSet
    fleiss_kappa: Estimate
    krippendorff_alpha: Estimate
    alpha_level: AlphaLevel
    pairs: tuple[AnnotatorPair, ...]
    n_items: int  # items answered by at least two annotators
    n_answers: int  # the answers on those items
    n_documents: int
    resamples: int
    confidence: float
    interval: Interval


def annotator_reliability(
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    labels: LabelSet,
    *,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
    alpha_level: AlphaLevel = "nominal",
    pairs: Sequence[tuple[int, int]] | None = None,
) -> Reliability:
    """Fleiss' κ, Krippendorff's α (at ``alpha_level``, over the labels' codes: give
    ``ordinal`` only for ordered labels) and each pair's Cohen's κ of ``humans``
    (annotators × items; NaN = no answer), intervals by document as in
    :func:`label_agreement`. ``pairs`` limits the pairs of annotators (row indices)
    whose κ is computed; by default every pair that shares an item."""
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim != 2:
        raise ValueError("humans must be annotators × items")
    if alpha_level != "nominal" and not labels.ordered:
        raise ValueError(f"a {alpha_level} α needs ordered labels")
    groups = documents(docs, h.shape[1])
    drawn = document_plan(groups, rng, resamples, plan)
    codes, n_docs = groups.codes, groups.n_groups
    counts = label_counts(h, labels.q)
    sums = sum_by(codes, fleiss_sums(counts), n_docs)
    total = sums.sum(axis=0)
    why = fleiss_reason(total, labels)
    n_answers = float(total[3:].sum())
    values = np.arange(labels.q, dtype=np.float64)
    if alpha_level == "nominal":  # both from the same sums, in one pass

        def both(s: FloatArray) -> FloatArray:
            return np.stack([fleiss_kappa(s), nominal_alpha(s)], axis=-1)

        fleiss, alpha_estimate = intervals(
            sums,
            both,
            drawn,
            confidence=confidence,
            method=method,
            n=[float(total[1]), n_answers],
            reasons=[why, why],
            limits=[CHANCE_CORRECTED, CHANCE_CORRECTED],
        )
    else:

        def alpha(table: FloatArray) -> FloatArray:
            return krippendorff_alpha_from_coincidences(table, values, alpha_level)[..., None]

        (fleiss,) = intervals(
            sums,
            lambda s: fleiss_kappa(s)[..., None],
            drawn,
            confidence=confidence,
            method=method,
            n=float(total[1]),
            reasons=[why],
            limits=[CHANCE_CORRECTED],
        )
        (alpha_estimate,) = intervals(
            sum_by(codes, coincidences(counts), n_docs),
            alpha,
            drawn,
            confidence=confidence,
            method=method,
            n=n_answers,
            reasons=[why],
            limits=[CHANCE_CORRECTED],
        )
    return Reliability(
        labels=labels,
        fleiss_kappa=fleiss,
        krippendorff_alpha=alpha_estimate,
        alpha_level=alpha_level,
        pairs=_pairs(h, groups, labels, drawn, pairs, confidence, method),
        n_items=int(total[1]),
        n_answers=int(n_answers),
        n_documents=n_docs,
        resamples=0 if drawn is None else drawn.size,
        confidence=confidence,
        interval=method,
    )


def _pairs(
    humans: FloatArray,
    groups: Groups,
    labels: LabelSet,
    plan: Resamples | None,
    chosen: Sequence[tuple[int, int]] | None,
    confidence: float,
    method: Interval,
) -> tuple[AnnotatorPair, ...]:
    """Every chosen pair's κ, all pairs' tables bootstrapped in one pass (documents ×
    pairs × q × q)."""
    answered = np.isfinite(humans)
    if chosen is None:
        shared = answered.astype(np.float64) @ answered.T.astype(np.float64)
        rows, cols = np.nonzero(np.triu(shared, k=1))
        chosen = list(zip(rows.tolist(), cols.tolist(), strict=True))
    if not chosen:
        return ()
    q, weights = labels.q, labels.kappa_weights
    each = [label_counts(row, q) for row in humans]
    tables = np.stack(
        [sum_by(groups.codes, pairs_between(each[i], each[j]), groups.n_groups) for i, j in chosen],
        axis=1,
    )
    totals = tables.sum(axis=0)
    sides = [Sides(f"annotator {i}", f"annotator {j}", "the two share no item") for i, j in chosen]
    why = [reasons(totals[p], labels, sides[p])[SCALARS.index("kappa")] for p in range(len(chosen))]

    def statistic(t: FloatArray) -> FloatArray:
        return cohen_kappa(t, weights)

    found = intervals(
        tables,
        statistic,
        plan,
        confidence=confidence,
        method=method,
        n=[float(t.sum()) for t in totals],
        reasons=why,
        limits=[CHANCE_CORRECTED] * len(chosen),
    )
    return tuple(
        AnnotatorPair(i, j, estimate, int(totals[p].sum()))
        for p, ((i, j), estimate) in enumerate(zip(chosen, found, strict=True))
    )
