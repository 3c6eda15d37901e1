"""Soft pairwise accuracy (SPA; Thompson et al. 2024), WMT24/25's system-level statistic.

For every pair of systems, a paired permutation test over documents gives the p-value
that system i is better than system j, once from the human scores and once from the
metric's. SPA = 1 − mean |p_human − p_metric| over the pairs (one minus the pairwise
confidence error): a metric earns a pair in full when it is exactly as sure as the
humans, where plain pairwise accuracy only asks whether it picks the same winner.

As in mt-metrics-eval (``pce.compute_pairwise_p_values``), one matrix of sign flips
(permutations × documents) serves every pair and both score sets, and
p = #(permuted difference ≥ observed) / permutations. Unlike it, data may be ragged:
a pair is compared on the documents where both systems have a scored output (the mean
of a system's outputs for a document, if it has several), and a pair with none is left
out. On complete data, with the flips drawn by :func:`sign_flips` from
``default_rng(4)``, the p-values are mt-metrics-eval's (its sums are float32; ours are
float64, so an exact tie between a permuted and the observed difference can round
differently on non-integer scores).

Cost: one (permutations × documents) @ (documents × systems) product per score set on
complete data; with gaps, one (permutations × documents) @ (documents × pairs) product.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from scoring.stats.ranking import BoolArray, FloatArray, Groups

# Documents × pairs per chunk of the ragged case's difference matrix (16 MiB).
_PAIR_CELLS = 1 << 21


def sign_flips(rng: np.random.Generator, permutations: int, n_docs: int) -> FloatArray:
    """±1 per permutation and document: uniform float32 draws rounded to 0 or 1, as
    mt-metrics-eval draws them (so the same seed gives its permutations)."""
    if permutations < 1:
        raise ValueError("permutations must be at least 1")
    draws = rng.random(size=(permutations, n_docs), dtype=np.float32)
    np.rint(draws, out=draws)
    return np.asarray(2.0 * draws.astype(np.float64) - 1.0, dtype=np.float64)


@lru_cache(maxsize=4)
def shared_sign_flips(seed: int, permutations: int, n_docs: int) -> FloatArray:
    """:func:`sign_flips` from ``default_rng(seed)``, drawn once per (seed, permutations,
    documents) and shared read-only: every cell of a matrix (and its intercorrelation)
    uses the same flips, so drawing them again per cell only repeats work."""
    flips = sign_flips(np.random.default_rng(seed), permutations, n_docs)
    flips.setflags(write=False)
    return flips


# Pairwise p-values already computed, keyed by the seed of their flips and the cells'
# bytes: a matrix asks for the same human p-values once per run, and for a run's
# p-values once per aspect (its cell means are the same when every aspect judged the
# same outputs). Small (systems² floats each) and bounded.
_P_CACHE: OrderedDict[tuple[object, ...], FloatArray] = OrderedDict()
_P_CACHE_SIZE = 64
_P_LOCK = threading.Lock()


def shared_p_values(cells: FloatArray, seed: int, permutations: int) -> FloatArray:
    """:func:`pairwise_p_values` of ``cells`` with :func:`shared_sign_flips`, memoised
    on the cells' content (the same values as computing them afresh)."""
    cells = np.ascontiguousarray(cells, dtype=np.float64)
    digest = hashlib.blake2b(cells.tobytes(), digest_size=16).digest()
    key = (seed, permutations, cells.shape, digest)
    with _P_LOCK:
        found = _P_CACHE.get(key)
        if found is not None:
            _P_CACHE.move_to_end(key)
            return found
    flips = shared_sign_flips(seed, permutations, cells.shape[1])
    values = pairwise_p_values(cells, flips)
    values.setflags(write=False)
    with _P_LOCK:
        _P_CACHE[key] = values
        while len(_P_CACHE) > _P_CACHE_SIZE:
            _P_CACHE.popitem(last=False)
    return values


def cell_means(x: FloatArray, docs: Groups, systems: Groups, valid: BoolArray) -> FloatArray:
    """Systems × documents: the mean of each system's valid outputs for each document
    (NaN where it has none)."""
    n_docs, n_sys = docs.n_groups, systems.n_groups
    cell = systems.codes[valid] * n_docs + docs.codes[valid]
    count = np.bincount(cell, minlength=n_sys * n_docs).astype(np.float64)
    total = np.bincount(cell, weights=x[valid], minlength=n_sys * n_docs)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(count > 0, total / count, np.nan)
    return np.asarray(means.reshape(n_sys, n_docs), dtype=np.float64)


def pairwise_p_values(cells: FloatArray, flips: FloatArray) -> FloatArray:
    """Systems × systems: entry (i, j), i < j, is the permutation p-value that system i
    is better than system j on their common documents; NaN below the diagonal and for
    pairs without a common document."""
    n_sys, n_docs = cells.shape
    if flips.shape[1] != n_docs:
        raise ValueError(f"flips cover {flips.shape[1]} documents, the cells {n_docs}")
    out = np.full((n_sys, n_sys), np.nan)
    first, second = np.triu_indices(n_sys, 1)
    if first.size == 0:
        return out
    scored = ~np.isnan(cells)
    values = np.where(scored, cells, 0.0)
    present = scored.any(axis=1)
    if np.array_equal(scored[present], np.ones((int(present.sum()), n_docs), dtype=bool)):
        # Complete: every pair shares every document, so one product serves all pairs.
        partial = (flips @ values.T).T  # systems × permutations
        totals, sizes = values.sum(axis=1), np.abs(values).sum(axis=1)
        null = partial[first] - partial[second]
        out[first, second] = _p(null, totals[first] - totals[second], sizes[first] + sizes[second])
        common = scored[first].any(axis=1) & scored[second].any(axis=1)
    else:
        common = np.zeros(first.size, dtype=bool)
        step = max(1, _PAIR_CELLS // max(1, n_docs))
        for start in range(0, first.size, step):
            i, j = first[start : start + step], second[start : start + step]
            both = scored[i] & scored[j]
            diff = np.where(both, values[i] - values[j], 0.0)
            null = diff @ flips.T  # pairs × permutations
            out[i, j] = _p(null, diff.sum(axis=1), np.abs(diff).sum(axis=1))
            common[start : start + step] = both.any(axis=1)
    out[first[~common], second[~common]] = np.nan
    return out


def _p(null: FloatArray, observed: FloatArray, scale: FloatArray) -> FloatArray:
    """Per pair (rows of ``null``: its permuted sums), the share at least ``observed``.
    A permuted sum equal to the observed one in exact arithmetic (all flips +1, say) may
    round below it: allow the rounding of sums of ``scale`` in size."""
    tol = 1e-9 * np.maximum(scale, 1e-300)
    return np.asarray(np.mean(null >= (observed - tol)[:, None], axis=1), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class SpaResult:
    """SPA and its parts: the two p-value matrices (upper triangle), the systems with
    a scored output, and the number of system pairs compared."""

    value: float
    n_pairs: int
    present: BoolArray = field(repr=False)
    p_human: FloatArray = field(repr=False)
    p_metric: FloatArray = field(repr=False)

    @property
    def errors(self) -> FloatArray:
        """|p_human − p_metric| per pair (upper triangle; NaN elsewhere)."""
        return np.asarray(np.abs(self.p_human - self.p_metric), dtype=np.float64)


def soft_pairwise_accuracy(
    metric: FloatArray,
    human: FloatArray,
    *,
    docs: Groups,
    systems: Groups,
    flips: FloatArray | None = None,
    human_p: FloatArray | None = None,
    seed: int | None = None,
    permutations: int | None = None,
) -> SpaResult:
    """SPA of aligned metric and human scores (one per output; NaN on either side drops
    the output). ``flips`` (permutations × documents, ±1) come from :func:`sign_flips`;
    ``human_p``, the human p-values of a previous call on the same outputs, saves
    recomputing them. Without ``flips``, ``seed`` and ``permutations`` name
    :func:`shared_sign_flips` and the p-values are memoised (:func:`shared_p_values`)."""
    valid = np.isfinite(metric) & np.isfinite(human)
    if flips is None:
        if seed is None or permutations is None:
            raise ValueError("pass flips, or the seed and permutations of shared ones")
        if human_p is None:
            human_p = shared_p_values(cell_means(human, docs, systems, valid), seed, permutations)
        metric_p = shared_p_values(cell_means(metric, docs, systems, valid), seed, permutations)
    else:
        if human_p is None:
            human_p = pairwise_p_values(cell_means(human, docs, systems, valid), flips)
        metric_p = pairwise_p_values(cell_means(metric, docs, systems, valid), flips)
    errors = np.abs(human_p - metric_p)
    defined = np.isfinite(errors)
    value = 1.0 - float(errors[defined].mean()) if defined.any() else float("nan")
    present = np.bincount(systems.codes[valid], minlength=systems.n_groups) > 0
    return SpaResult(value, int(defined.sum()), present, human_p, metric_p)


def resampled_spa(result: SpaResult, system_counts: FloatArray) -> FloatArray:
    """SPA on each bootstrap resample of systems (resamples × systems draw counts),
    exactly as if the drawn copies were distinct systems (listed in their systems'
    order): a pair of copies counts c_i · c_j times, and two copies of one system agree
    perfectly (both p-values are 1).
    The p-values are not recomputed (a pair's p-value does not depend on the others)."""
    errors = result.errors
    defined = np.isfinite(errors)
    err = np.where(defined, errors, 0.0)
    err, pairs = err + err.T, (defined | defined.T).astype(np.float64)
    counts = system_counts
    # c_b^T E c_b for every resample b: one (resamples × systems) @ (systems × systems)
    # product, then a row-wise dot (einsum's three-operand path is several times slower)
    total = np.einsum("bj,bj->b", counts @ err, counts) / 2
    n_pairs = np.einsum("bj,bj->b", counts @ pairs, counts) / 2
    n_pairs += (counts * (counts - 1) / 2) @ result.present.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(n_pairs > 0, 1.0 - total / n_pairs, np.nan), dtype=np.float64)
