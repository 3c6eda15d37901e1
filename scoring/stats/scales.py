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

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from scoring.stats.ranking import FloatArray, IntArray

Binning = Literal["as_is", "rounded", "quantiles"]
# an ordinal scale with more points is treated as continuous (25: the means of five
# answers on a five-point scale, its fifths, are 21 points)
MAX_POINTS = 25
# A value is a scale point when it lies within this share of the scale's step of it: a
# mean of k answers computed another way (7 / 3, or 1 + 1 / 3 + 1) differs from the point
# in its last bits, never by a millionth of a step.
TOLERANCE = 1e-6
# the largest denominator of a step taken for a fraction (means of up to 60 answers)
MAX_DENOMINATOR = 60
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


def point_index(
    values: npt.ArrayLike, points: npt.ArrayLike, tolerance: float = TOLERANCE
) -> IntArray:
    """For each value, the index of the scale point it is (−1 for NaN or a value that is
    no point): the nearest of the ascending ``points``, when it lies within ``tolerance``
    times the smallest step between points. The one comparison of values with scale
    points: every statistic that puts answers on a scale goes through it."""
    v = np.asarray(values, dtype=np.float64)
    p = np.asarray(points, dtype=np.float64).reshape(-1)
    if p.size == 0:
        return np.full(v.shape, -1, dtype=np.intp)
    if p.size > 1 and np.any(np.diff(p) <= 0):
        raise ValueError("the scale's points must be ascending and distinct")
    step = float(np.min(np.diff(p))) if p.size > 1 else max(1.0, abs(float(p[0])))
    upper = np.clip(np.searchsorted(p, v), 0, p.size - 1)
    lower = np.maximum(upper - 1, 0)
    with np.errstate(invalid="ignore"):
        nearer_lower = np.abs(v - p[lower]) < np.abs(v - p[upper])
    nearest = np.where(nearer_lower, lower, upper)
    with np.errstate(invalid="ignore"):
        close = np.abs(v - p[nearest]) <= tolerance * step
    return np.asarray(np.where(close, nearest, -1), dtype=np.intp)


def on_points(values: npt.ArrayLike, points: npt.ArrayLike) -> FloatArray:
    """The values as the scale's points they are (NaN for NaN and for a value that is no
    point; see :func:`point_index`)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1)
    index = point_index(values, p)
    return np.asarray(np.where(index >= 0, p[np.maximum(index, 0)], np.nan), dtype=np.float64)


def distinct(values: npt.ArrayLike) -> FloatArray:
    """The finite values, sorted, those within rounding of each other (a billionth of
    their size) taken once."""
    given = np.sort(np.asarray(values, dtype=np.float64).reshape(-1))
    given = given[np.isfinite(given)]
    if given.size < 2:
        return given
    apart = np.diff(given) > 1e-9 * np.maximum(1.0, np.abs(given[1:]))
    return np.asarray(given[np.concatenate([[True], apart])], dtype=np.float64)


def scale_points(
    answers: npt.ArrayLike, scale_min: float, scale_max: float, max_points: int = MAX_POINTS
) -> FloatArray | None:
    """The points of an ordinal scale: the answers lie on a grid (integers: a step of 1;
    else the largest step that every difference between two answers is a multiple of:
    a half-point scale, or the thirds of means of three answers), and the points are the
    grid's from the lowest to the highest answer, extended to the declared ends where
    they lie on it. None when the answers lie on no such grid, or it has fewer than 2 or
    more than ``max_points`` points (a continuous scale: no ordinal agreement).

    Answers that are fractions with small denominators (to rounding) are handled as
    exact fractions, so each point is the float nearest to its fraction (2, not
    1.9999999999999991); other grids are found from the smallest gap between answers."""
    given = distinct(answers)
    if given.size == 0:
        return None
    exact = [_fraction(float(v)) for v in given]
    if all(f is not None for f in exact):
        return _exact_points([f for f in exact if f is not None], scale_min, scale_max, max_points)
    step = float(np.min(np.diff(given))) if given.size > 1 else 1.0
    low, high = float(given[0]), float(given[-1])
    for end in (scale_min, scale_max):
        if _on_grid(end, low, step):
            low, high = min(low, end), max(high, end)
    if not all(_on_grid(float(v), low, step) for v in given):
        return None
    count = int(round((high - low) / step)) + 1
    if count < 2 or count > max_points:
        return None
    return np.asarray(low + step * np.arange(count), dtype=np.float64)


def _exact_points(
    given: list[Fraction], scale_min: float, scale_max: float, max_points: int
) -> FloatArray | None:
    """:func:`scale_points` for answers that are fractions (ascending, distinct): the
    step is the largest that divides every difference between the answers and the
    declared ends (1 for integers)."""
    ends = [f for f in (_fraction(float(scale_min)), _fraction(float(scale_max))) if f is not None]
    step = Fraction(1)
    if any(f.denominator != 1 for f in given):
        known = given + ends
        common = math.lcm(*(f.denominator for f in known))
        step = Fraction(math.gcd(*(int((f - given[0]) * common) for f in known)), common)
        if step == 0:  # one answer, and no declared end to measure a step by
            return None
    low, high = given[0], given[-1]
    for end in ends:
        if ((end - low) / step).denominator == 1:
            low, high = min(low, end), max(high, end)
    count = int((high - low) / step) + 1
    if count < 2 or count > max_points:
        return None
    return np.array([float(low + k * step) for k in range(count)], dtype=np.float64)


def _on_grid(value: float, origin: float, step: float) -> bool:
    position = (value - origin) / step
    return bool(np.isfinite(position) and abs(position - round(position)) <= TOLERANCE)


def _fraction(value: float) -> Fraction | None:
    """``value`` as a fraction with a small denominator when it is one (to rounding)."""
    if not math.isfinite(value):
        return None
    found = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    return found if abs(float(found) - value) <= 1e-9 * max(1.0, abs(value)) else None


def to_scale(scores: npt.ArrayLike, points: npt.ArrayLike, answers: npt.ArrayLike) -> OnScale:
    """``scores`` on the scale's ``points`` (ascending), using the annotators' ``answers``
    (each one of the points, to :func:`point_index`'s tolerance) for equipercentile
    binning; see the module's docstring. A score that is a point (to the same tolerance)
    becomes that point exactly."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    p = np.asarray(points, dtype=np.float64).reshape(-1)
    if p.size < 2 or np.any(np.diff(p) <= 0):
        raise ValueError("the scale needs two or more points, ascending")
    finite = np.isfinite(s)
    given = s[finite]
    out = np.full(s.size, np.nan)
    index = point_index(given, p)
    if np.all(index >= 0):
        out[finite] = p[index]
        return OnScale(out, "as_is")
    step = float(np.min(np.diff(p)))
    if given.min() >= p[0] - TOLERANCE * step and given.max() <= p[-1] + TOLERANCE * step:
        distance = np.abs(given[:, None] - p[None, :])
        nearest = np.isclose(
            distance, distance.min(axis=1, keepdims=True), rtol=0, atol=TOLERANCE * step
        )
        out[finite] = p[p.size - 1 - np.argmax(nearest[:, ::-1], axis=1)]  # the higher on ties
        return OnScale(out, "rounded")
    human = point_index(answers, p).reshape(-1)
    shares = np.bincount(human[human >= 0], minlength=p.size).astype(np.float64)
    shares = shares / shares.sum() if shares.sum() > 0 else np.full(p.size, 1.0 / p.size)
    cumulative = np.cumsum(shares)
    cumulative[-1] = 1.0
    percentile = (rankdata(given) - 0.5) / given.size
    index = np.searchsorted(cumulative, percentile - 1e-12, side="left")
    out[finite] = p[np.minimum(index, p.size - 1)]
    return OnScale(out, "quantiles")
