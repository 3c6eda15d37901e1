"""A jury: several judges' scores of the same items combined into one score per item.

``scores`` is items × judges, NaN where a judge has no score. Methods:

* ``mean`` and ``median`` of the judges' scores;
* ``majority``: the most frequent answer, each score rounded to the nearest whole
  number (a label's position, a scale point); ties go to the lowest answer;
* ``weighted``: the mean weighted by each judge's weight (its agreement with the
  humans on tune documents; judges of weight 0 take no part);
* ``dawid-skene``: each judge is an annotator of :mod:`scoring.stats.dawid_skene`
  over the rounded answers; the item's most probable answer.

An item no judge scored stays NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scoring.stats.dawid_skene import dawid_skene
from scoring.stats.ranking import FloatArray

METHODS = ("mean", "median", "majority", "weighted", "dawid-skene")


def _matrix(scores: npt.ArrayLike) -> FloatArray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError("scores must be items × judges")
    return x


def majority(scores: npt.ArrayLike) -> FloatArray:
    """Each item's most frequent rounded answer (ties: the lowest)."""
    x = np.round(_matrix(scores))
    out = np.full(x.shape[0], np.nan)
    for i, row in enumerate(x):
        row = row[np.isfinite(row)]
        if row.size:
            values, counts = np.unique(row, return_counts=True)
            out[i] = values[np.argmax(counts)]
    return out


def weighted_mean(scores: npt.ArrayLike, weights: Sequence[float]) -> FloatArray:
    """Each item's mean of its judges' scores weighted by ``weights`` (one per judge,
    non-negative), over the judges that scored it."""
    x = _matrix(scores)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (x.shape[1],) or (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("one non-negative weight per judge")
    present = np.isfinite(x) & (w > 0)
    total = (present * w).sum(axis=1)
    sums = np.where(present, x, 0.0) @ w
    out: FloatArray = np.divide(sums, total, out=np.full(x.shape[0], np.nan), where=total > 0)
    return out


def dawid_skene_labels(scores: npt.ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Dawid–Skene over the rounded answers: each item's most probable answer, its
    posterior probability and the posterior mean answer."""
    x = np.round(_matrix(scores))
    item, judge = np.nonzero(np.isfinite(x))
    out = np.full(x.shape[0], np.nan)
    confidence, expected = out.copy(), out.copy()
    if not item.size:
        return out, confidence, expected
    values, codes = np.unique(x[item, judge], return_inverse=True)
    scored, dense = np.unique(item, return_inverse=True)
    fit = dawid_skene(dense, judge, codes, n_classes=values.size)
    out[scored] = values[fit.labels]
    confidence[scored] = fit.probas.max(axis=1)
    expected[scored] = fit.probas @ values
    return out, confidence, expected


def combine(
    scores: npt.ArrayLike, method: str, weights: Sequence[float] | None = None
) -> FloatArray:
    """One score per item by ``method`` (:data:`METHODS`)."""
    x = _matrix(scores)
    empty = np.logical_not(np.isfinite(x).any(axis=1))
    safe = np.where(empty[:, None], 0.0, x)  # no all-NaN slice warnings; NaN put back below
    if method == "mean":
        out = np.nanmean(safe, axis=1)
    elif method == "median":
        out = np.nanmedian(safe, axis=1)
    elif method == "majority":
        return majority(x)
    elif method == "weighted":
        if weights is None:
            raise ValueError("the weighted method needs one weight per judge")
        return weighted_mean(x, weights)
    elif method == "dawid-skene":
        return dawid_skene_labels(x)[0]
    else:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    out[empty] = np.nan
    result: FloatArray = out
    return result
