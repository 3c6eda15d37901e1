"""Sample-size planning for sample-level meta-evaluation: how wide a correlation's
confidence interval would be with n documents, and how many documents would separate
two metrics.

A sample-level correlation is a weighted mean of per-document values (macro: every
document weighs 1; micro: by size), so a set of n documents drawn with replacement from
the observed ones is a resample of those values. From it:

* :func:`half_widths`: the 95% percentile-bootstrap interval's half-width of a
  metric's correlation (or of the difference of two metrics' correlations) over
  ``resamples`` draws of n documents, for each n (beyond the dataset's size too: the
  documents seen stand for the population);
* :func:`power`: for each n, the share of ``trials`` simulated studies of n documents
  (drawn with replacement) in which the paired bootstrap test
  (:func:`~scoring.stats.significance.paired_bootstrap_p`, two-sided, on ``resamples``
  draws inside the study) finds the metrics different at ``alpha``;
* :func:`documents_needed`: the smallest n of the grid with power ≥ the target.

Every draw comes from the caller's ``numpy.random.Generator``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.significance import Alternative, paired_bootstrap_p

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
ALPHA = 0.05
TARGET_POWER = 0.8
# draws of n documents are made in blocks of about this many indices (memory)
BLOCK = 2_000_000


def size_grid(n_documents: int, *, start: int = 10, beyond: int = 4) -> list[int]:
    """Doubling sizes from ``start`` up to ``beyond`` times the dataset's size, and the
    size itself: 10, 20, 40, … (at least up to 160)."""
    top = max(beyond * n_documents, 160)
    sizes = {n_documents} if n_documents >= 2 else set()
    n = start
    while n <= top:
        sizes.add(n)
        n *= 2
    return sorted(sizes)


def _as_values(
    values: npt.ArrayLike, weights: npt.ArrayLike | None
) -> tuple[FloatArray, FloatArray]:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
    if v.shape != w.shape:
        raise ValueError("values and weights must have the same length")
    if not v.size or np.any(~np.isfinite(v)) or np.any(w <= 0):
        raise ValueError("need at least one document, finite values and positive weights")
    return v, w


def _means(v: FloatArray, w: FloatArray, idx: IntArray) -> FloatArray:
    """The weighted mean of ``v`` over each row of ``idx``."""
    return np.asarray((w[idx] * v[idx]).sum(axis=-1) / w[idx].sum(axis=-1), dtype=np.float64)


def _draw(rng: np.random.Generator, n_docs: int, rows: int, n: int) -> IntArray:
    return rng.integers(0, n_docs, size=(rows, n))


def resampled_means(
    values: npt.ArrayLike,
    n: int,
    rng: np.random.Generator,
    *,
    weights: npt.ArrayLike | None = None,
    resamples: int = 1000,
) -> FloatArray:
    """The sample-level value (weighted mean of per-document values) of ``resamples``
    draws of ``n`` documents with replacement."""
    v, w = _as_values(values, weights)
    rows = max(1, BLOCK // max(n, 1))
    parts = [
        _means(v, w, _draw(rng, v.size, min(rows, resamples - s), n))
        for s in range(0, resamples, rows)
    ]
    return np.concatenate(parts) if parts else np.zeros(0)


def _half_width(draws: FloatArray, alpha: float) -> float:
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float((high - low) / 2)


def half_widths(
    values: npt.ArrayLike,
    sizes: Sequence[int],
    rng: np.random.Generator,
    *,
    weights: npt.ArrayLike | None = None,
    resamples: int = 1000,
    alpha: float = ALPHA,
) -> FloatArray:
    """For each n of ``sizes``, the half-width of the (1 - alpha) percentile bootstrap
    interval of the sample-level value over ``resamples`` draws of n documents. For a
    difference of two metrics pass the per-document differences (macro) or see
    :func:`paired_half_widths`."""
    return np.array(
        [
            _half_width(
                resampled_means(values, n, rng, weights=weights, resamples=resamples), alpha
            )
            for n in sizes
        ]
    )


def _paired(
    values_a: npt.ArrayLike,
    weights_a: npt.ArrayLike | None,
    values_b: npt.ArrayLike,
    weights_b: npt.ArrayLike | None,
) -> tuple[tuple[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]:
    """Both metrics' (values, weights), which must cover the same documents."""
    a, b = _as_values(values_a, weights_a), _as_values(values_b, weights_b)
    if a[0].size != b[0].size:
        raise ValueError("the two metrics must have values for the same documents")
    return a, b


def paired_half_widths(
    values_a: npt.ArrayLike,
    values_b: npt.ArrayLike,
    sizes: Sequence[int],
    rng: np.random.Generator,
    *,
    weights_a: npt.ArrayLike | None = None,
    weights_b: npt.ArrayLike | None = None,
    resamples: int = 1000,
    alpha: float = ALPHA,
) -> FloatArray:
    """Like :func:`half_widths` for the difference a − b of two metrics' sample-level
    values, both computed on the same draws of documents."""
    (va, wa), (vb, wb) = _paired(values_a, weights_a, values_b, weights_b)
    out = []
    for n in sizes:
        idx = _draw(rng, va.size, resamples, n)
        out.append(_half_width(_means(va, wa, idx) - _means(vb, wb, idx), alpha))
    return np.array(out)


def power(
    values_a: npt.ArrayLike,
    values_b: npt.ArrayLike,
    n: int,
    rng: np.random.Generator,
    *,
    weights_a: npt.ArrayLike | None = None,
    weights_b: npt.ArrayLike | None = None,
    trials: int = 200,
    resamples: int = 200,
    alpha: float = ALPHA,
) -> float:
    """The share of ``trials`` simulated studies of ``n`` documents (drawn with
    replacement from the observed ones) in which the two-sided paired bootstrap test
    finds a and b different at ``alpha`` (``resamples`` draws within each study)."""
    (va, wa), (vb, wb) = _paired(values_a, weights_a, values_b, weights_b)
    significant = 0
    for _ in range(trials):
        study = _draw(rng, va.size, 1, n)[0]
        a, b = va[study], vb[study]
        pa, pb = wa[study], wb[study]
        observed_a = float((pa * a).sum() / pa.sum())
        observed_b = float((pb * b).sum() / pb.sum())
        inner = _draw(rng, n, resamples, n)
        p = paired_bootstrap_p(
            _means(a, pa, inner),
            _means(b, pb, inner),
            observed_a,
            observed_b,
            Alternative.TWO_SIDED,
        )
        significant += bool(p < alpha)
    return significant / trials if trials else float("nan")


@dataclass(frozen=True)
class PowerCurve:
    """Power at each size, and the smallest size reaching the target (None: more than
    the grid's largest)."""

    sizes: list[int]
    power: list[float]
    needed: int | None
    target: float


def documents_needed(
    values_a: npt.ArrayLike,
    values_b: npt.ArrayLike,
    sizes: Sequence[int],
    rng: np.random.Generator,
    *,
    weights_a: npt.ArrayLike | None = None,
    weights_b: npt.ArrayLike | None = None,
    trials: int = 200,
    resamples: int = 200,
    alpha: float = ALPHA,
    target: float = TARGET_POWER,
) -> PowerCurve:
    """:func:`power` at each size (ascending) and the smallest size whose power reaches
    ``target``."""
    ordered = sorted(sizes)
    curve = [
        power(
            values_a,
            values_b,
            n,
            rng,
            weights_a=weights_a,
            weights_b=weights_b,
            trials=trials,
            resamples=resamples,
            alpha=alpha,
        )
        for n in ordered
    ]
    needed = next((n for n, p in zip(ordered, curve, strict=True) if p >= target), None)
    return PowerCurve(sizes=list(ordered), power=curve, needed=needed, target=target)
