"""Inter-annotator agreement on a reliability matrix (annotators × units, NaN = no answer).

Krippendorff's α comes from the maintained ``krippendorff`` package; its interval is a
bootstrap over units (the items), drawn with the caller's ``numpy.random.Generator``.
Annotator correlations are Spearman's ρ over the units both (or all) answered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
import numpy.typing as npt
from scipy import stats

FloatMatrix = npt.NDArray[np.float64]
LevelOfMeasurement = Literal["nominal", "ordinal", "interval", "ratio"]


@dataclass(frozen=True)
class Alpha:
    """α with its bootstrap interval (NaN when undefined) and what it was computed on."""

    value: float
    low: float
    high: float
    n_units: int  # units answered by at least two annotators
    n_answers: int


def pairable(data: FloatMatrix) -> FloatMatrix:
    """The columns (units) with at least two answers: the others carry no agreement."""
    matrix = np.asarray(data, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError("the reliability matrix must be 2-D (annotators × units)")
    keep = np.count_nonzero(~np.isnan(matrix), axis=0) >= 2
    return matrix[:, keep]


def _alpha(matrix: FloatMatrix, level: LevelOfMeasurement, domain: Sequence[float] | None) -> float:
    if matrix.shape[1] == 0 or np.unique(matrix[~np.isnan(matrix)]).size < 2:
        # the package raises on a single value: agreement is then undefined, not perfect
        return math.nan
    return float(
        krippendorff.alpha(
            reliability_data=matrix,
            level_of_measurement=level,
            value_domain=None if domain is None else list(domain),
        )
    )


def krippendorff_alpha(
    data: FloatMatrix,
    level: LevelOfMeasurement,
    *,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    value_domain: Sequence[float] | None = None,
    confidence: float = 0.95,
) -> Alpha:
    """Krippendorff's α of ``data`` (annotators × units) at ``level``, with a percentile
    bootstrap interval over units when ``rng`` is given (resamples whose α is undefined
    are left out). ``value_domain`` lists the scale's points for ordinal data, so that
    unused points still count in the ordinal distance."""
    matrix = pairable(data)
    value = _alpha(matrix, level, value_domain)
    low = high = math.nan
    n_units = matrix.shape[1]
    if rng is not None and n_units >= 2 and math.isfinite(value):
        draws = np.empty(resamples)
        for k in range(resamples):
            columns = rng.integers(0, n_units, size=n_units)
            draws[k] = _alpha(matrix[:, columns], level, value_domain)
        finite = draws[np.isfinite(draws)]
        if finite.size:
            tail = (1 - confidence) / 2
            low, high = (float(q) for q in np.quantile(finite, [tail, 1 - tail]))
    return Alpha(value, low, high, n_units, int(np.count_nonzero(~np.isnan(matrix))))


def _spearman(x: FloatMatrix, y: FloatMatrix) -> tuple[float, int]:
    both = ~np.isnan(x) & ~np.isnan(y)
    n = int(np.count_nonzero(both))
    if n < 3 or np.ptp(x[both]) == 0 or np.ptp(y[both]) == 0:
        return math.nan, n
    return float(stats.spearmanr(x[both], y[both]).statistic), n


def annotator_correlations(data: FloatMatrix) -> list[tuple[int, int, float, int]]:
    """Spearman ρ for every pair of annotators (rows i < j) over the units both
    answered: ``(i, j, rho, n)``; NaN with fewer than three shared units or a constant."""
    matrix = np.asarray(data, dtype=np.float64)
    return [
        (i, j, *_spearman(matrix[i], matrix[j]))
        for i in range(matrix.shape[0])
        for j in range(i + 1, matrix.shape[0])
    ]


def versus_others(data: FloatMatrix) -> list[tuple[float, int]]:
    """For each annotator, Spearman ρ between their answers and the mean of the other
    annotators' answers on the same units: ``(rho, n)`` per row."""
    matrix = np.asarray(data, dtype=np.float64)
    answered = ~np.isnan(matrix)
    totals = np.where(answered, matrix, 0).sum(axis=0)
    counts = answered.sum(axis=0)
    result = []
    for i in range(matrix.shape[0]):
        others = counts - answered[i]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (totals - np.where(answered[i], matrix[i], 0)) / others
        result.append(_spearman(matrix[i], np.where(others > 0, mean, np.nan)))
    return result
