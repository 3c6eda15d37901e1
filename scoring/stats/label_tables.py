"""Labels and the statistics of confusion tables, vectorised over leading axes.

A label aspect declares its labels in order (:class:`LabelSet`): two for a binary one,
one of them positive (pass/fail, yes/no), or several for a categorical one, ordered or
not. Answers are coded as their position in that order (floats, NaN = no answer), so
the tables of :mod:`scoring.stats.agreement_tables` and the bootstrap of
:mod:`scoring.stats.table_intervals` serve them as they serve Likert points.

A **confusion table** ``t[..., c, k]`` counts pairs of answers, the reference (the
humans) answering the c-th label and the other side (the judge, or another annotator)
the k-th: rows are the truth and columns the prediction, as in
``sklearn.metrics.confusion_matrix(y_true, y_pred)``. :func:`table_statistics` takes
tables of shape ``(..., q, q)`` (leading axes: documents, resamples, left-out
documents) and returns every statistic of each along a last axis.

Undefined is NaN, never a silent 0 or 1: :func:`reasons` says why for a table. Where
the references return a value by convention instead (scikit-learn 1.9, statsmodels
0.15, krippendorff 0.9), the statistics here are NaN with a reason:

* recall of a label the reference never answered (sklearn: 0 with
  ``zero_division="warn"``), precision of a label never predicted (sklearn: 0), F1 of
  a label neither side answered (sklearn: 0; so too a binary aspect's F1 when neither
  side gave the positive label);
* MCC when either side gave one label only (sklearn: 0);
* no pairs at all (sklearn raises: "Found empty input array");
* Krippendorff's α when the pairable answers hold one label only (the package raises:
  "There has to be more than one value in the domain").

Both sides give NaN for Cohen's κ when both raters gave the same single label
(sklearn's ``replace_undefined_by=np.nan``) and for Fleiss' κ when every answer is one
label (statsmodels divides 0 by 0). Macro-F1 averages over the labels that either side
answered, as sklearn's ``f1_score(average="macro")`` does without ``labels``: a label
nobody used does not pull it down, and it is defined whenever there is a pair.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.stats.agreement_tables import Weights, disagreement_weights
from scoring.stats.ranking import FloatArray


@dataclass(frozen=True)
class LabelSet:
    """An aspect's labels in their declared order, the positive one of a binary aspect,
    whether they are ordered, and the weights of Cohen's κ (``identity`` for nominal
    labels; ``linear`` or ``quadratic``, the default, for ordered ones)."""

    labels: tuple[Hashable, ...]
    positive: Hashable | None = None
    ordered: bool = False
    weights: Weights | None = None
    _index: dict[Hashable, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        labels = tuple(self.labels)
        object.__setattr__(self, "labels", labels)
        if len(labels) < 2:
            raise ValueError("a label aspect needs at least two labels")
        index = {label: k for k, label in enumerate(labels)}
        if len(index) != len(labels):
            raise ValueError(f"labels must be distinct: {list(labels)}")
        if self.positive is not None and (len(labels) != 2 or self.positive not in index):
            raise ValueError(
                f"the positive label {self.positive!r} must be one of exactly two labels, "
                f"got {list(labels)}"
            )
        if self.weights not in (None, "identity", "linear", "quadratic"):
            raise ValueError(f"unknown κ weights {self.weights!r}")
        if self.weights not in (None, "identity") and not self.ordered:
            raise ValueError("weighted κ needs ordered labels")
        object.__setattr__(self, "_index", index)

    @classmethod
    def binary(cls, negative: Hashable, positive: Hashable) -> LabelSet:
        """A binary aspect: the negative label first, then the positive one."""
        return cls((negative, positive), positive=positive)

    @property
    def q(self) -> int:
        return len(self.labels)

    @property
    def is_binary(self) -> bool:
        return self.positive is not None

    @property
    def positive_index(self) -> int | None:
        return None if self.positive is None else self._index[self.positive]

    @property
    def kappa_weights(self) -> Weights:
        if self.weights is not None:
            return self.weights
        return "quadratic" if self.ordered and self.q > 2 else "identity"

    def codes(self, answers: Any, where: str = "answer") -> FloatArray:
        """``answers`` (any shape; None or NaN = no answer) as codes, the position of
        each label in the declared order (NaN where none). An answer that is not one of
        the labels is an error naming its position."""
        values = np.asarray(answers, dtype=object)
        out = np.full(values.shape, np.nan)
        flat = out.reshape(-1)
        for k, value in enumerate(values.reshape(-1)):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            code = self._index.get(value)
            if code is None:
                index = np.unravel_index(k, values.shape)
                position = tuple(int(i) for i in index) if values.ndim > 1 else k
                allowed = ", ".join(str(label) for label in self.labels)
                raise ValueError(f"{where} {position}: {value!r} is not one of {allowed}")
            flat[k] = code
        return out

    def name(self, code: int) -> str:
        return str(self.labels[code])


def label_counts(codes: npt.ArrayLike, q: int) -> FloatArray:
    """Items × q: how many raters gave each label on each item (``codes``: raters ×
    items, or one rater's items; NaN = no answer). A code outside 0..q−1 is an error."""
    c = np.asarray(codes, dtype=np.float64)
    if c.ndim == 1:
        c = c[None, :]
    given = np.isfinite(c)
    if np.isinf(c).any():
        raise ValueError("label codes must be finite or NaN")
    values = c[given]
    bad = (values < 0) | (values > q - 1) | (values != np.round(values))
    if bad.any():
        raise ValueError(f"label codes must be 0..{q - 1}: got {np.unique(values[bad])[:5]}")
    counts = np.zeros((c.shape[1], q))
    np.add.at(counts, (np.nonzero(given)[1], values.astype(np.intp)), 1.0)
    return counts


# The statistics of one confusion table, in the order of :func:`table_statistics`'s
# columns; per-label ones take q columns each.
SCALARS = ("accuracy", "kappa", "mcc", "macro_f1", "majority_share", "chance_agreement")
PER_LABEL = ("recall", "precision", "f1")


def table_statistics(table: npt.ArrayLike, weights: Weights = "identity") -> FloatArray:
    """The statistics of confusion tables (… × q × q, rows the reference) along a new
    last axis: :data:`SCALARS`, then each of :data:`PER_LABEL` (q columns each, in the
    labels' order). The margins are taken once for all, so a bootstrap computes every
    statistic of a table in one pass. With r, p the rows' and columns' label counts,
    d the diagonal and n the pairs:

    * accuracy Σ d / n;
    * Cohen's κ 1 − Σ w·t / Σ w·r pᵀ/n (weights of
      :func:`~scoring.stats.agreement_tables.disagreement_weights`, by position for
      ordered labels), as ``sklearn.metrics.cohen_kappa_score(..., labels=range(q))``;
      NaN where chance disagreement is 0 (both sides one and the same label);
    * MCC in Gorodkin's (2004) R_K form, binary MCC for two labels, as
      ``sklearn.metrics.matthews_corrcoef`` computes it: (Σd·n − r·p) / √((n² − p·p)
      (n² − r·r)); NaN where either side gave one label only (sklearn: 0);
    * macro-F1, the mean F1 over the labels either side answered (sklearn's
      ``average="macro"`` without ``labels``);
    * the base rates beside κ: the majority share max r / n (the accuracy of always
      answering the reference's commonest label) and the chance agreement
      1 − Σ w·r pᵀ / (n² max w) (Σ r_k p_k / n² unweighted), so that κ = (p_o − p_e) /
      (1 − p_e) in the same weights;
    * per label: recall d / r (TPR and TNR of a binary aspect's positive and negative
      labels; NaN where the reference never gave the label), precision d / p (NaN where
      the other side never gave it) and F1 2d / (r + p) (NaN where neither did).

    Every statistic is NaN without pairs."""
    t = np.asarray(table, dtype=np.float64)
    return margin_statistics(table_margins(t, weights), t.shape[-1], weights)


def table_margins(table: npt.ArrayLike, weights: Weights = "identity") -> FloatArray:
    """… × (3q + 3): what every statistic of :func:`table_statistics` needs of a table
    (rows r, columns p, diagonal d, the pairs n, Σ d and the weighted disagreement
    Σ w·t), all sums of its cells, so they add over documents: a bootstrap carries
    these instead of the q² cells."""
    t = np.asarray(table, dtype=np.float64)
    q = t.shape[-1]
    flat = t.reshape(t.shape[:-2] + (q * q,))
    return np.asarray(flat @ _projection(q, weights), dtype=np.float64)


def _projection(q: int, weights: Weights) -> FloatArray:
    """q² × (3q + 3): the table's cells (row-major) onto :func:`table_margins`."""
    eye, ones = np.eye(q), np.ones((q, 1))
    rows = np.kron(eye, ones)  # cell (c, k) → row c
    cols = np.kron(ones, eye)  # cell (c, k) → column k
    diag = np.eye(q * q)[:, :: q + 1]
    w = disagreement_weights(q, weights).reshape(q * q, 1)
    total = np.ones((q * q, 1))
    return np.concatenate([rows, cols, diag, total, diag.sum(axis=1, keepdims=True), w], axis=1)


def margin_statistics(margins: npt.ArrayLike, q: int, weights: Weights = "identity") -> FloatArray:
    """:func:`table_statistics` from :func:`table_margins`."""
    m = np.asarray(margins, dtype=np.float64)
    rows, cols, diag = m[..., :q], m[..., q : 2 * q], m[..., 2 * q : 3 * q]
    n, correct, observed = m[..., 3 * q], m[..., 3 * q + 1], m[..., 3 * q + 2]
    w = disagreement_weights(q, weights)
    ones = np.ones(q)
    with np.errstate(invalid="ignore", divide="ignore"):
        both = rows + cols
        recall_ = np.where(rows > 0, diag / rows, np.nan)
        precision_ = np.where(cols > 0, diag / cols, np.nan)
        f1_ = np.where(both > 0, 2.0 * diag / both, np.nan)
        used = (both > 0).astype(np.float64)
        macro = (np.where(both > 0, f1_, 0.0) @ ones) / (used @ ones)
        cov_tp = correct * n - np.einsum("...k,...k->...", rows, cols)
        cov_pp = n * n - np.einsum("...k,...k->...", cols, cols)
        cov_tt = n * n - np.einsum("...k,...k->...", rows, rows)
        product = cov_pp * cov_tt
        mcc_ = np.where(product > 0, cov_tp / np.sqrt(product), np.nan)
        expected = np.einsum("...c,ck,...k->...", rows, w, cols) / n
        kappa_ = 1.0 - observed / expected
        chance = np.where(n > 0, 1.0 - expected / (n * float(w.max())), np.nan)
        scalars = [correct / n, kappa_, mcc_, macro, rows.max(axis=-1) / n, chance]
    columns = [s[..., None] for s in scalars] + [recall_, precision_, f1_]
    return np.asarray(np.concatenate(columns, axis=-1), dtype=np.float64)


@dataclass(frozen=True)
class Sides:
    """How a reason names the table's two sides: its rows and its columns."""

    rows: str = "the humans"
    columns: str = "the judge"
    pairs: str = "no item has both the judge's and a human's answer"


JUDGE_SIDES = Sides()


def reasons(table: npt.ArrayLike, labels: LabelSet, sides: Sides = JUDGE_SIDES) -> list[str | None]:
    """Why each column of :func:`table_statistics` is NaN on one table (None where it is
    defined)."""
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError("reasons explain one table")
    q = labels.q
    rows, cols = t.sum(axis=-1), t.sum(axis=-2)
    n = rows.sum()
    if n == 0:
        return [sides.pairs] * (len(SCALARS) + len(PER_LABEL) * q)
    one_row = _single(rows, labels)
    one_col = _single(cols, labels)
    mcc_why = None
    if one_row is not None:
        mcc_why = (
            f"every answer of {sides.rows} is {one_row!r}: MCC is undefined (sklearn returns 0)"
        )
    elif one_col is not None:
        mcc_why = (
            f"every answer of {sides.columns} is {one_col!r}: MCC is undefined (sklearn returns 0)"
        )
    kappa_why = None
    if one_row is not None and one_row == one_col:
        kappa_why = f"both sides answered {one_row!r} only: chance agreement is 1 and κ undefined"
    out: list[str | None] = [None, kappa_why, mcc_why, None, None, None]
    for k, label in enumerate(labels.labels):
        out.append(
            None
            if rows[k] > 0
            else f"{sides.rows} never answered {label!r}: its recall is undefined (sklearn returns 0)"
        )
    for k, label in enumerate(labels.labels):
        out.append(
            None
            if cols[k] > 0
            else f"{sides.columns} never answered {label!r}: its precision is undefined (sklearn returns 0)"
        )
    for k, label in enumerate(labels.labels):
        out.append(
            None
            if rows[k] + cols[k] > 0
            else f"neither side answered {label!r}: its F1 is undefined (sklearn returns 0)"
        )
    return out


def _single(margin: FloatArray, labels: LabelSet) -> Hashable | None:
    used = np.flatnonzero(margin > 0)
    return labels.labels[int(used[0])] if used.size == 1 else None


# --- several annotators per item ------------------------------------------------------


def fleiss_sums(counts: FloatArray) -> FloatArray:
    """Items × (q + 3): what Fleiss' κ and nominal α add up per item with two answers or
    more (zero rows for the others): the share of agreeing ordered pairs
    P_i = (Σ_k n_ik² − m_i) / (m_i (m_i − 1)), a 1 for the item, its part of the
    coincidence matrix's diagonal Σ_k n_ik (n_ik − 1) / (m_i − 1), and its label
    counts."""
    m = counts.sum(axis=1)
    keep = m >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        same = np.sum(counts * counts, axis=1) - m
        agreeing = same / (m * (m - 1.0))
        diagonal = same / (m - 1.0)
    out = np.zeros((counts.shape[0], counts.shape[1] + 3))
    out[keep, 0] = agreeing[keep]
    out[keep, 1] = 1.0
    out[keep, 2] = diagonal[keep]
    out[keep, 3:] = counts[keep]
    return out


def fleiss_kappa(sums: npt.ArrayLike) -> FloatArray:
    """Fleiss' κ from summed :func:`fleiss_sums` (… × (q + 3)): (P̄ − P_e) / (1 − P_e)
    with P̄ the mean of the items' P_i and P_e = Σ p_k², p_k the share of label k among
    their answers. With every item answered by the same number of raters this is
    ``statsmodels.stats.inter_rater.fleiss_kappa``; with varying numbers each item's P_i
    uses its own (items with one answer are left out). NaN where every answer is one
    label (P_e = 1) or no item has two answers."""
    s = np.asarray(sums, dtype=np.float64)
    labels = s[..., 3:]
    answers = labels.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = s[..., 0] / s[..., 1]
        shares = labels / answers[..., None]
        expected = np.sum(shares * shares, axis=-1)
        value = (observed - expected) / (1.0 - expected)
    return np.asarray(np.where(expected < 1.0, value, np.nan), dtype=np.float64)


def nominal_alpha(sums: npt.ArrayLike) -> FloatArray:
    """Krippendorff's nominal α from summed :func:`fleiss_sums`: 1 − (n − 1)(n − Σ o_cc)
    / (n² − Σ n_c²) with n the pairable answers, n_c those of label c and Σ o_cc the
    coincidences' diagonal; what
    :func:`~scoring.stats.agreement_tables.krippendorff_alpha_from_coincidences` gives
    at the nominal level, from q + 3 numbers per document instead of q². NaN where the
    pairable answers hold one label (or none)."""
    s = np.asarray(sums, dtype=np.float64)
    labels = s[..., 3:]
    n = labels.sum(axis=-1)
    expected = n * n - np.sum(labels * labels, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * (n - s[..., 2]) / expected
    return np.asarray(np.where(expected > 1e-12 * n * n, alpha, np.nan), dtype=np.float64)


def fleiss_reason(sums: npt.ArrayLike, labels: LabelSet) -> str | None:
    """Why Fleiss' κ (or nominal α) of summed :func:`fleiss_sums` is NaN (None where
    defined)."""
    s = np.asarray(sums, dtype=np.float64)
    if s[1] == 0:
        return "no item has two annotators' answers"
    one = _single(s[3:], labels)
    if one is not None:
        return f"every answer is {one!r}: chance agreement is 1 and κ undefined"
    return None


def majority(counts: FloatArray) -> FloatArray:
    """Each item's most frequent label code (NaN where none, or where two labels tie for
    it: the shared data's ``human`` leaves such items out too)."""
    top = counts.max(axis=1)
    ties = np.count_nonzero(counts == top[:, None], axis=1) > 1
    codes = counts.argmax(axis=1).astype(np.float64)
    return np.asarray(np.where((top > 0) & ~ties, codes, np.nan), dtype=np.float64)
