"""Maps from a judge's score to the human scale, fitted on (score, human) pairs:

* ``isotonic``: the monotone step function closest in squared error (pool adjacent
  violators over the distinct scores, equal scores pooled first, as scikit-learn's
  ``IsotonicRegression``; its direction the sign of Spearman's ρ unless given); between
  fitted scores it interpolates linearly and outside them it holds the end values;
* ``platt``: a binary aspect's probability of the positive label, ``1 / (1 + exp(−(a·s
  + b)))`` by maximum likelihood (Newton's method on the logistic loss with a tiny
  ridge so separable data still converge), read as a label at 0.5;
* ``threshold``: a binary aspect's cut ``t``: scores ≥ t are positive, ``t`` the cut
  among the midpoints of the distinct scores with the highest MCC (ties: the lowest).

A fitted map is a :class:`ScoreMap`: its parameters are plain numbers, so a run
records them and :meth:`ScoreMap.apply` reproduces it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from scoring.stats.ranking import FloatArray

METHODS = ("isotonic", "platt", "threshold")
BINARY_ONLY = ("platt", "threshold")


@dataclass(frozen=True)
class ScoreMap:
    """A fitted map: ``method`` and its ``params`` (isotonic: ``x``, ``y``; platt:
    ``a``, ``b``; threshold: ``t``)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)

    def apply(self, scores: npt.ArrayLike) -> FloatArray:
        """The mapped scores (NaN stays NaN); binary maps give 0 or 1."""
        s = np.asarray(scores, dtype=np.float64)
        if self.method == "isotonic":
            out = np.interp(s, self.params["x"], self.params["y"])
        elif self.method == "platt":
            out = (self.probability(s) >= 0.5).astype(np.float64)
        elif self.method == "threshold":
            out = (s >= self.params["t"]).astype(np.float64)
        else:
            raise ValueError(f"unknown map {self.method!r}")
        result: FloatArray = np.where(np.isfinite(s), out, np.nan)
        return result

    def probability(self, scores: npt.ArrayLike) -> FloatArray:
        """Platt's probability of the positive label."""
        s = np.asarray(scores, dtype=np.float64)
        out: FloatArray = 1.0 / (1.0 + np.exp(-(self.params["a"] * s + self.params["b"])))
        return out


def _pairs(scores: npt.ArrayLike, human: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError("scores and human values must be aligned 1-d arrays")
    keep = np.isfinite(s) & np.isfinite(y)
    if keep.sum() < 2:
        raise ValueError("at least two scored, judged items are needed to fit a map")
    return s[keep], y[keep]


def isotonic(
    scores: npt.ArrayLike, human: npt.ArrayLike, increasing: bool | None = None
) -> ScoreMap:
    """The least-squares monotone map: non-decreasing, or non-increasing where
    ``increasing`` is False; None decides by the sign of Spearman's ρ on the pairs (as
    scikit-learn's ``increasing="auto"``), so a judge that ranks backwards is turned
    round rather than flattened."""
    s, y = _pairs(scores, human)
    if increasing is None:
        rho = stats.spearmanr(s, y)[0] if np.ptp(s) > 0 and np.ptp(y) > 0 else 0.0
        increasing = not rho < 0
    xs, fitted = _pool_adjacent_violators(s if increasing else -s, y)
    if not increasing:
        xs, fitted = -xs[::-1], fitted[::-1]
    return ScoreMap(
        "isotonic", {"x": xs.tolist(), "y": fitted.tolist(), "increasing": bool(increasing)}
    )


def _pool_adjacent_violators(s: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The distinct scores and the non-decreasing least-squares fit at each."""
    xs, inverse = np.unique(s, return_inverse=True)
    weights = np.bincount(inverse).astype(np.float64)
    means = np.bincount(inverse, weights=y) / weights
    # pool adjacent violators over blocks (value, weight, count of distinct scores)
    values: list[float] = []
    mass: list[float] = []
    sizes: list[int] = []
    for v, w in zip(means, weights, strict=True):
        values.append(float(v))
        mass.append(float(w))
        sizes.append(1)
        while len(values) > 1 and values[-2] > values[-1]:
            w2 = mass[-2] + mass[-1]
            values[-2] = (values[-2] * mass[-2] + values[-1] * mass[-1]) / w2
            mass[-2] = w2
            sizes[-2] += sizes[-1]
            del values[-1], mass[-1], sizes[-1]
    return xs, np.repeat(values, sizes).astype(np.float64)


def platt(scores: npt.ArrayLike, positive: npt.ArrayLike, ridge: float = 1e-6) -> ScoreMap:
    """Logistic regression of the 0/1 ``positive`` on the score (standardised for the
    fit, the coefficients given back on the raw score)."""
    s, y = _pairs(scores, positive)
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("Platt scaling needs 0/1 human labels")
    centre, spread = float(s.mean()), float(s.std()) or 1.0
    z = np.column_stack([(s - centre) / spread, np.ones_like(s)])
    beta = np.zeros(2)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        gradient = z.T @ (p - y) + ridge * beta
        hessian = (z * (p * (1 - p))[:, None]).T @ z + ridge * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    a = float(beta[0] / spread)
    return ScoreMap("platt", {"a": a, "b": float(beta[1] - a * centre)})


def mcc(predicted: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """Binary Matthews correlation of two 0/1 arrays (0 where a side is constant, as
    scikit-learn returns)."""
    p = np.asarray(predicted, dtype=np.float64)
    t = np.asarray(truth, dtype=np.float64)
    tp = float((p * t).sum())
    tn = float(((1 - p) * (1 - t)).sum())
    fp = float((p * (1 - t)).sum())
    fn = float(((1 - p) * t).sum())
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / float(np.sqrt(denominator))


def threshold(scores: npt.ArrayLike, positive: npt.ArrayLike) -> ScoreMap:
    """The cut with the highest MCC on the pairs."""
    s, y = _pairs(scores, positive)
    distinct = np.unique(s)
    cuts = np.concatenate([[distinct[0]], (distinct[:-1] + distinct[1:]) / 2])
    best = max(cuts, key=lambda t: (mcc(s >= t, y), -t))
    return ScoreMap("threshold", {"t": float(best)})


def fit(method: str, scores: npt.ArrayLike, human: npt.ArrayLike) -> ScoreMap:
    """Fit the map named ``method`` (:data:`METHODS`)."""
    fitters: dict[str, Callable[[npt.ArrayLike, npt.ArrayLike], ScoreMap]] = {
        "isotonic": isotonic,
        "platt": platt,
        "threshold": threshold,
    }
    if method not in fitters:
        raise ValueError(f"unknown map {method!r}: one of {', '.join(METHODS)}")
    return fitters[method](scores, human)
