"""A judge's scores on the annotators' ordinal scale, for agreement statistics that need
both sides on the same points (quadratic-weighted κ, Gwet's AC1, Krippendorff's α).

:func:`scale_points` names the scale's points; :func:`to_scale` puts a judge's scores on
them, and says how:

* ``as_is``: every score already is one of the points;
* ``rounded``: the scores lie within the scale's range (a G-Eval probability-weighted
  score of 3.4 on 1–5): each goes to the nearest point, a score half-way to the higher;
* ``quantiles``: the scores are on another scale (log-probabilities, a 0–1 similarity):
  equipercentile binning, so that each point gets the share of the judge's scores that
  it has of the annotators' answers. A score at mid-rank percentile
  q = (rank − ½) / n (tied scores share their average rank, so they share a point) goes
  to the lowest point whose cumulative share of the annotators' answers reaches q. Only
  the judge's order is kept; its agreement then says how well it orders the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from scoring.stats.ranking import FloatArray

Binning = Literal["as_is", "rounded", "quantiles"]
MAX_POINTS = 20  # an ordinal scale with more points is treated as continuous
DESCRIPTIONS: dict[str, str] = {
    "as_is": "on the annotators' scale already",
    "rounded": "rounded to the nearest scale point (half-way: up)",
    "quantiles": "binned by rank so that each scale point gets the annotators' share of it",
}


@dataclass(frozen=True, eq=False)
class OnScale:
    """A judge's scores as scale points (NaN where it gave none) and how they got there."""

    values: FloatArray
    method: Binning

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.method]


def scale_points(
    answers: npt.ArrayLike, scale_min: float, scale_max: float, max_points: int = MAX_POINTS
) -> FloatArray | None:
    """The points of an ordinal scale: the answers lie on a grid (integers: a step of 1;
    else the smallest gap between two distinct answers, which every gap must be a
    multiple of: a half-point scale), and the points are the grid's from the lowest to
    the highest answer, extended to the declared ends where they lie on it. None when
    the answers lie on no such grid, or it has fewer than 2 or more than ``max_points``
    points (a continuous scale: no ordinal agreement)."""
    given = np.unique(np.asarray(answers, dtype=np.float64).reshape(-1))
    given = given[np.isfinite(given)]
    if given.size == 0:
        return None
    integers = bool(np.all(given == np.round(given)))
    step = 1.0 if integers or given.size < 2 else float(np.min(np.diff(given)))
    low, high = float(given[0]), float(given[-1])
    for end in (scale_min, scale_max):
        if _on_grid(end, low, step):
            low, high = min(low, end), max(high, end)
    if not np.all([_on_grid(v, low, step) for v in given]):
        return None
    count = int(round((high - low) / step)) + 1
    if count < 2 or count > max_points:
        return None
    return np.asarray(low + step * np.arange(count), dtype=np.float64)


def _on_grid(value: float, origin: float, step: float) -> bool:
    position = (value - origin) / step
    return bool(np.isfinite(position) and abs(position - round(position)) < 1e-9)


def to_scale(scores: npt.ArrayLike, points: npt.ArrayLike, answers: npt.ArrayLike) -> OnScale:
    """``scores`` on the scale's ``points`` (ascending), using the annotators' ``answers``
    (each one of the points) for equipercentile binning; see the module's docstring."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    p = np.asarray(points, dtype=np.float64).reshape(-1)
    if p.size < 2 or np.any(np.diff(p) <= 0):
        raise ValueError("the scale needs two or more points, ascending")
    finite = np.isfinite(s)
    given = s[finite]
    out = np.full(s.size, np.nan)
    if np.all(np.isin(given, p)):
        out[finite] = given
        return OnScale(out, "as_is")
    if given.min() >= p[0] and given.max() <= p[-1]:
        distance = np.abs(given[:, None] - p[None, :])
        nearest = np.isclose(distance, distance.min(axis=1, keepdims=True), rtol=0, atol=1e-12)
        out[finite] = p[p.size - 1 - np.argmax(nearest[:, ::-1], axis=1)]  # the higher on ties
        return OnScale(out, "rounded")
    human = np.asarray(answers, dtype=np.float64).reshape(-1)
    human = human[np.isfinite(human)]
    shares = np.array([np.count_nonzero(human == point) for point in p], dtype=np.float64)
    shares = shares / shares.sum() if shares.sum() > 0 else np.full(p.size, 1.0 / p.size)
    cumulative = np.cumsum(shares)
    cumulative[-1] = 1.0
    percentile = (rankdata(given) - 0.5) / given.size
    index = np.searchsorted(cumulative, percentile - 1e-12, side="left")
    out[finite] = p[np.minimum(index, p.size - 1)]
    return OnScale(out, "quantiles")
