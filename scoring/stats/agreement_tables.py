"""Chance-corrected agreement from tables of paired answers, vectorised over resamples.

Every statistic here takes counts in an array of shape ``(..., q, q)`` over the q points
of a scale (leading axes: documents, bootstrap resamples) and returns one value per
leading index, so a bootstrap is one matrix product and one call. Two kinds of table:

* a **pair table**: ``table[c, k]`` counts the pairs of answers (rater 1 answered the
  c-th point, rater 2 the k-th); for :func:`percent_agreement`, :func:`cohen_kappa`
  and :func:`gwet_ac1`;
* a **coincidence matrix** (Krippendorff 2004, §11.3): each unit with m ≥ 2 answers adds
  its ordered pairs of answers, each weighted 1 / (m − 1); for
  :func:`krippendorff_alpha_from_coincidences`, which equals the ``krippendorff``
  package's α on the same answers.

:func:`answer_counts` and :func:`pairs_and_coincidences` build them from a reliability
matrix (raters × units, NaN = no answer).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import FloatArray
from scoring.stats.scales import point_index

Weights = Literal["identity", "linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]


def _total(table: FloatArray) -> FloatArray:
    return np.asarray(table.sum(axis=(-2, -1)), dtype=np.float64)


def percent_agreement(table: npt.ArrayLike) -> FloatArray:
    """The share of pairs on the diagonal (NaN without pairs)."""
    t = np.asarray(table, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.trace(t, axis1=-2, axis2=-1) / _total(t), dtype=np.float64)


def disagreement_weights(q: int, weights: Weights) -> FloatArray:
    """Cohen's disagreement weights between the scale's steps i and k: 0 on the diagonal
    and 1 off it (``identity``), |i − k| (``linear``) or (i − k)² (``quadratic``), as
    ``sklearn.metrics.cohen_kappa_score`` has them (the scale of the weights cancels)."""
    steps = np.arange(q, dtype=np.float64)
    gap = np.abs(steps[:, None] - steps[None, :])
    if weights == "identity":
        return (gap > 0).astype(np.float64)
    if weights == "linear":
        return gap
    if weights == "quadratic":
        return gap**2
    raise ValueError(f"unknown weights {weights!r}")


def cohen_kappa(table: npt.ArrayLike, weights: Weights = "identity") -> FloatArray:
    """Cohen's κ (weighted with ``weights``) of a pair table, rows rater 1, columns
    rater 2: 1 − Σ w·observed / Σ w·expected, the expected counts from the two raters'
    own marginals. NaN where chance disagreement is zero (one category only) or there
    is no pair."""
    t = np.asarray(table, dtype=np.float64)
    w = disagreement_weights(t.shape[-1], weights)
    n = _total(t)
    rows, cols = t.sum(axis=-1), t.sum(axis=-2)
    q = t.shape[-1]
    observed = t.reshape(t.shape[:-2] + (q * q,)) @ w.reshape(q * q)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.sum((rows @ w) * cols, axis=-1) / n
        return np.asarray(1.0 - observed / expected, dtype=np.float64)


def gwet_ac1(table: npt.ArrayLike) -> FloatArray:
    """Gwet's AC1 (Gwet 2008; Handbook of Inter-Rater Reliability, 4th ed., 2014, ch. 4)
    of a pair table over q categories: (pa − pe) / (1 − pe) with pa the share of pairs
    that agree, π_k the mean of the two raters' shares of category k and
    pe = Σ π_k (1 − π_k) / (q − 1). q is the scale's size, used points or not (pass
    ``categ.labels`` to irrCAC for the same). NaN without pairs."""
    t = np.asarray(table, dtype=np.float64)
    q = t.shape[-1]
    if q < 2:
        raise ValueError("AC1 needs a scale of at least two categories")
    n = _total(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = np.trace(t, axis1=-2, axis2=-1) / n
        pi = (t.sum(axis=-1) + t.sum(axis=-2)) / (2.0 * n[..., None])
        pe = np.sum(pi * (1.0 - pi), axis=-1) / (q - 1)
        return np.asarray((pa - pe) / (1.0 - pe), dtype=np.float64)


def _positions(values: FloatArray, margins: FloatArray, level: AlphaLevel) -> FloatArray:
    """Where the interval and ordinal metrics place the scale's points: δ²_ck is
    (u_c − u_k)² for the values themselves (interval) or for their mid-cumulative counts
    (ordinal: Krippendorff's Σ_{g=c..k} n_g − (n_c + n_k) / 2 is u_k − u_c with
    u_c = n_1 + … + n_c − n_c / 2, the points in ascending order)."""
    if level == "interval":
        return np.broadcast_to(values, margins.shape)
    return np.asarray(np.cumsum(margins, axis=-1) - margins / 2.0, dtype=np.float64)


def krippendorff_alpha_from_coincidences(
    coincidences: npt.ArrayLike, values: npt.ArrayLike, level: AlphaLevel
) -> FloatArray:
    """Krippendorff's α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck from coincidence
    matrices over the scale's points ``values`` (sorted ascending). NaN where there is no
    expected disagreement (a single value used) or no pairable value.

    For the interval and ordinal metrics δ²_ck = (u_c − u_k)², and with o symmetric
    (rows summing to n_c) both sums are quadratic forms: Σ o δ² = 2 (Σ n_c u_c² − uᵀ o u)
    and Σ n_c n_k δ² = 2 (n Σ n_c u_c² − (Σ n_c u_c)²); nominal counts the pairs off the
    diagonal; ratio sums ((v_c − v_k) / (v_c + v_k))² over the table."""
    o = np.asarray(coincidences, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or o.shape[-2:] != (v.size, v.size):
        raise ValueError("the coincidence matrices must be q × q over the q values")
    if v.size > 1 and np.any(np.diff(v) <= 0):
        raise ValueError("the scale's values must be sorted and distinct")
    margins = o.sum(axis=-1)
    n = margins.sum(axis=-1)
    if level == "nominal":
        observed = n - np.trace(o, axis1=-2, axis2=-1)
        expected = n * n - np.sum(margins * margins, axis=-1)
        magnitude = n * n
    elif level in ("interval", "ordinal"):
        u = _positions(v, margins, level)
        spread = np.sum(margins * u * u, axis=-1)
        observed = spread - np.sum((o @ u[..., None])[..., 0] * u, axis=-1)
        expected = n * spread - np.sum(margins * u, axis=-1) ** 2
        magnitude = n * spread
    elif level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = np.nan_to_num(((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2)
        observed = np.sum(o * delta, axis=(-2, -1))
        expected = np.sum((margins @ delta) * margins, axis=-1)
        magnitude = n * n * float(delta.max(initial=0.0))
    else:
        raise ValueError(f"unknown level of measurement {level!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    # rounding can leave a tiny "expected" where every answer is one value: undefined
    defined = expected > 1e-12 * magnitude
    return np.asarray(np.where(defined, alpha, np.nan), dtype=np.float64)


def answer_counts(ratings: npt.ArrayLike, values: npt.ArrayLike) -> FloatArray:
    """Units × q: how many raters gave each of the scale's ``values`` on each unit
    (``ratings`` is raters × units, NaN = no answer). An answer is a scale point to
    :func:`scoring.stats.scales.point_index`'s tolerance (a mean of three answers, 7 / 3,
    is the point 2⅓ however it was computed); an answer off the scale is an error."""
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim == 1:
        r = r[None, :]
    v = np.asarray(values, dtype=np.float64)
    given = ~np.isnan(r)
    position = point_index(r[given], v)
    if np.any(position < 0):
        off = np.unique(r[given][position < 0])
        raise ValueError(f"answers off the scale {v.tolist()}: {off.tolist()[:5]}")
    units = np.nonzero(given)[1]
    counts = np.zeros((r.shape[1], v.size))
    np.add.at(counts, (units, position), 1.0)
    return counts


def pairs_between(first: FloatArray, second: FloatArray) -> FloatArray:
    """Units × q × q: each unit's pairs of one answer from ``first`` (rows) and one from
    ``second`` (columns), from the units' answer counts."""
    return np.asarray(first[:, :, None] * second[:, None, :], dtype=np.float64)


def pairs_within(counts: FloatArray) -> FloatArray:
    """Units × q × q: each unit's unordered pairs of distinct raters, each pair split
    half to (c, k) and half to (k, c), so the table is symmetric and sums to the number
    of pairs, m (m − 1) / 2 for m answers."""
    ordered = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    ordered[:, idx, idx] -= counts
    return np.asarray(ordered / 2.0, dtype=np.float64)


def coincidences(counts: FloatArray) -> FloatArray:
    """Units × q × q: each unit's contribution to the coincidence matrix, its ordered
    pairs of answers weighted 1 / (m − 1); zero for units with fewer than two answers."""
    m = counts.sum(axis=1)
    ordered = 2.0 * pairs_within(counts)
    weight = np.where(m >= 2, 1.0 / np.maximum(m - 1.0, 1.0), 0.0)
    return np.asarray(ordered * weight[:, None, None], dtype=np.float64)


def sum_by(codes: npt.NDArray[np.intp], per_unit: FloatArray, n_groups: int) -> FloatArray:
    """Groups × q × q: the per-unit tables summed within each group (document)."""
    out = np.zeros((n_groups,) + per_unit.shape[1:])
    np.add.at(out, codes, per_unit)
    return out
