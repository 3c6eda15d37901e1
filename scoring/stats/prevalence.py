"""How often a binary aspect's positive label holds: by the annotators, by the judge, and
the judge's share corrected for its errors.

On a binary aspect (pass/fail, hallucinated or not) the judge labels every item and the
annotators some. Each item's human answer is the share of its annotators who gave the
positive label (0 or 1 with one annotator), so an item counts once however many
annotators it has. From the items both labelled:

* **human prevalence**: the mean of those shares over the items with a human answer;
* **judge prevalence**: the share of the items the judge labelled positive (all it
  judged, with human answers or not);
* **sensitivity** Se = Σ J·y / Σ y and **specificity** Sp = Σ (1 − J)(1 − y) / Σ (1 − y)
  over the items both answered (J the judge's 0/1, y the human share): with one
  annotator per item, the TPR and TNR of the confusion table;
* the **Rogan–Gladen** estimate (Rogan & Gladen 1978, "Estimating prevalence from the
  results of a screening test", Am. J. Epidemiol.): (p_J + Sp − 1) / (Se + Sp − 1), the
  judge's prevalence with its misclassification undone, truncated to [0, 1] as they
  advise. Undefined (NaN, with the reason) where Se + Sp ≤ 1: a judge no better than a
  coin cannot be corrected;
* **PPI++**: prediction-powered inference of the mean human share
  (:func:`scoring.stats.ppi.ppi_mean`, the judge's 0/1 label, or its probability of the
  positive label when given, as the prediction on every judged item; the power-tuned λ).
  ``ppi_result`` is ppi.py's own result, whose normal-approximation interval treats
  items as independent.

Every value has a bootstrap interval by document (:mod:`scoring.stats.table_intervals`;
each resample computed exactly from per-document sums, the Rogan–Gladen correction and
PPI's λ recomputed in each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.draws import Resamples
from scoring.stats.label_tables import LabelSet, label_counts
from scoring.stats.ppi import MIN_LABELLED, PPIResult, ppi_mean
from scoring.stats.ranking import FloatArray, Groups
from scoring.stats.table_intervals import (
    SHARE,
    Estimate,
    Interval,
    document_plan,
    documents,
    intervals,
)

NAMES = ("human", "judge", "sensitivity", "specificity", "corrected", "ppi")


@dataclass(frozen=True, eq=False)
class Prevalence:
    """The positive label's prevalence by the annotators, by the judge, corrected
    (Rogan–Gladen) and by PPI++, with the judge's sensitivity and specificity."""

    human: Estimate
    judge: Estimate
    sensitivity: Estimate
    specificity: Estimate
    corrected: Estimate
    ppi: Estimate
    ppi_result: PPIResult
    n_judged: int
    n_labelled: int
    n_both: int
    n_documents: int
    resamples: int
    confidence: float
    interval: Interval


def _item_values(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    labels: LabelSet,
    probability: npt.ArrayLike | None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per item: the judge's 0/1, the annotators' positive share, the prediction."""
    positive = labels.positive_index
    if positive is None:
        raise ValueError("prevalence needs a binary aspect with a positive label")
    j = np.asarray(judge, dtype=np.float64).reshape(-1)
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim == 1:
        h = h[None, :]
    if h.shape[1] != j.size:
        raise ValueError("humans must be annotators × items, with one judge answer per item")
    judge_counts, human_counts = label_counts(j, 2), label_counts(h, 2)
    m = human_counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(m > 0, human_counts[:, positive] / m, np.nan)
    said = np.where(judge_counts.sum(axis=1) > 0, judge_counts[:, positive], np.nan)
    if probability is None:
        return said, share, said
    f = np.asarray(probability, dtype=np.float64).reshape(-1)
    if f.size != j.size:
        raise ValueError("give one probability (NaN for none) per item")
    if np.any((f < 0) | (f > 1)):
        raise ValueError("probabilities must lie in [0, 1]")
    return said, share, f


def _first(values: FloatArray, where: npt.NDArray[np.bool_]) -> float:
    return float(values[where][0]) if where.any() else 0.0


COLUMNS = 17


def prevalence_sums(judged: FloatArray, share: FloatArray, prediction: FloatArray) -> FloatArray:
    """Items × 17: each item's part of the sums every estimate is computed from. PPI's
    predictions and shares enter its moments shifted by one of their own values, so
    that constant ones stay exactly constant (λ's variance exactly 0)."""
    has_j, has_y, has_f = np.isfinite(judged), np.isfinite(share), np.isfinite(prediction)
    both, ppi_both = has_j & has_y, has_f & has_y
    j, y = np.nan_to_num(judged), np.nan_to_num(share)
    f = np.where(has_f, prediction - _first(prediction, ppi_both), 0.0)
    f_both = np.where(ppi_both, f, 0.0)
    y_both = np.where(ppi_both, y - _first(share, ppi_both), 0.0)
    columns = [
        has_j,  # 0: judged
        j * has_j,  # 1: judged positive
        has_y,  # 2: with a human answer
        y * has_y,  # 3: the human shares
        both,  # 4: both
        j * y * both,  # 5: true positives (in shares)
        (1 - j) * (1 - y) * both,  # 6: true negatives
        y * both,  # 7: human positives among both
        (1 - y) * both,  # 8: human negatives among both
        has_f,  # 9: PPI: predicted
        f,  # 10: predictions (shifted)
        ppi_both,  # 11: predicted and labelled
        f_both,  # 12: their predictions (shifted)
        y * ppi_both,  # 13: their shares
        y_both,  # 14: their shares (shifted)
        f_both * f_both,  # 15
        f_both * y_both,  # 16
    ]
    return np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=-1)


def prevalence_statistics(sums: npt.ArrayLike) -> FloatArray:
    """The six estimates of :data:`NAMES` (last axis) from summed
    :func:`prevalence_sums`, PPI's λ tuned as :func:`scoring.stats.ppi.ppi_mean` tunes
    it."""
    return _statistics(np.asarray(sums, dtype=np.float64), tune=True)


def _statistics(s: FloatArray, tune: bool) -> FloatArray:
    n_j, sum_j, n_y, sum_y = s[..., 0], s[..., 1], s[..., 2], s[..., 3]
    tp, tn, pos, neg = s[..., 5], s[..., 6], s[..., 7], s[..., 8]
    n_all, sum_f_all, n, sum_f, sum_y_both = (s[..., k] for k in (9, 10, 11, 12, 13))
    sum_yc, sff, sfy = s[..., 14], s[..., 15], s[..., 16]
    with np.errstate(invalid="ignore", divide="ignore"):
        human, judge = sum_y / n_y, sum_j / n_j
        sensitivity, specificity = tp / pos, tn / neg
        youden = sensitivity + specificity - 1.0
        corrected = np.clip((judge + specificity - 1.0) / youden, 0.0, 1.0)
        corrected = np.where(youden > 0, corrected, np.nan)
        if tune:
            var_f = (sff - sum_f * sum_f / n) / (n - 1.0)
            cov = (sfy - sum_f * sum_yc / n) / (n - 1.0)
            lam = np.where(var_f > 0, np.clip(cov / var_f, 0.0, 1.0), 0.0)
        else:
            lam = np.ones_like(n)
        ppi = sum_y_both / n + lam * (sum_f_all / n_all - sum_f / n)
        ppi = np.where(n >= MIN_LABELLED, ppi, np.nan)
    return np.stack([human, judge, sensitivity, specificity, corrected, ppi], axis=-1)


def _reasons(total: FloatArray, labels: LabelSet) -> list[str | None]:
    values = prevalence_statistics(total)
    positive = labels.positive
    negative = next(label for label in labels.labels if label != positive)
    sensitivity, specificity = values[2], values[3]
    why: list[str | None] = [
        "no item has a human answer",
        "the judge answered no item",
        f"no item both answered has a human answer {positive!r}: sensitivity is undefined",
        f"no item both answered has a human answer {negative!r}: specificity is undefined",
        "sensitivity or specificity is undefined",
        f"PPI needs {MIN_LABELLED} items with both the judge's and a human answer",
    ]
    if np.isfinite(sensitivity) and np.isfinite(specificity):
        why[4] = (
            f"the judge is no better than chance on the items both answered (sensitivity "
            f"{sensitivity:.3f} + specificity {specificity:.3f} ≤ 1): Rogan–Gladen is undefined"
        )
    return [None if np.isfinite(v) else w for v, w in zip(values, why, strict=True)]


def prevalence(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    labels: LabelSet,
    *,
    probability: npt.ArrayLike | None = None,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
    method: Interval = "studentized",
    tune: bool = True,
) -> Prevalence:
    """The prevalence of ``labels``'s positive label among ``humans``' answers
    (annotators × items, label codes, NaN = none) and ``judge``'s (one per item), the
    judge's corrected, and PPI++ (``tune=False``: PPI) with ``probability`` (the judge's
    probability of the positive label per item) or its label as the prediction. See the
    module's docstring."""
    judged, share, prediction = _item_values(judge, humans, labels, probability)
    groups = documents(docs, judged.size)
    plan = document_plan(groups, rng, resamples, plan)
    sums = np.zeros((groups.n_groups, COLUMNS))
    np.add.at(sums, groups.codes, prevalence_sums(judged, share, prediction))
    total = sums.sum(axis=0)
    counts = [total[2], total[0], total[7], total[8], total[4], total[11]]

    def statistic(s: FloatArray) -> FloatArray:
        return _statistics(s, tune)

    found = intervals(
        sums,
        statistic,
        plan,
        confidence=confidence,
        method=method,
        n=[float(c) for c in counts],
        reasons=_reasons(total, labels),
        limits=[SHARE] * 6,  # prevalences, sensitivity and specificity are shares
    )
    result = ppi_mean(prediction, share, tune=tune, confidence=confidence)
    human, by_judge, sensitivity, specificity, corrected, ppi = found
    return Prevalence(
        human=human,
        judge=by_judge,
        sensitivity=sensitivity,
        specificity=specificity,
        corrected=corrected,
        ppi=ppi,
        ppi_result=result,
        n_judged=int(total[0]),
        n_labelled=int(total[2]),
        n_both=int(total[4]),
        n_documents=groups.n_groups,
        resamples=0 if plan is None else plan.size,
        confidence=confidence,
        interval=method,
    )
