"""Significance clusters and ranks of metrics, as WMT reports them (mt-metrics-eval's
``ComputeSigMatrix`` and ``AssignRanks``), and ranks averaged over several tables.

Metrics are sorted by decreasing value; ``sig[i, j]`` (i < j) is the one-sided p-value
that the i-th is better than the j-th. Walking down the list, a metric opens a new
cluster (rank + 1) when some metric of the current cluster is significantly better
than it (p ≤ alpha); so rank 1 holds the metrics no rank-1 metric beats significantly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from scoring.stats.ranking import FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class Clusters:
    """``order`` lists the metrics (indices into the values given) best first;
    ``sig[i, j]`` is the p-value that ``order[i]`` beats ``order[j]`` (i < j; 0 where
    untested); ``ranks[k]`` is metric k's cluster rank (None where its value is NaN)."""

    order: IntArray
    sig: FloatArray = field(repr=False)
    ranks: list[int | None]


def significance_matrix(
    values: Sequence[float], p_better: Callable[[int, int], float]
) -> tuple[IntArray, FloatArray]:
    """The finite ``values`` in decreasing order (ties kept in input order) and the
    matrix of ``p_better(a, b)``, the one-sided p-value that metric a beats metric b,
    for each pair in that order (upper triangle)."""
    array = np.asarray(values, dtype=np.float64)
    finite = np.flatnonzero(np.isfinite(array))
    order = finite[np.argsort(-array[finite], kind="stable")].astype(np.intp)
    sig = np.zeros((order.size, order.size))
    for i in range(order.size):
        for j in range(i + 1, order.size):
            sig[i, j] = p_better(int(order[i]), int(order[j]))
    return order, sig


def assign_ranks(sig: FloatArray, alpha: float = 0.05) -> list[int]:
    """Cluster ranks for metrics sorted best first, from their significance matrix
    (mt-metrics-eval's ``AssignRanks``): a metric starts a new rank when a metric of the
    current rank beats it (p ≤ alpha), so no metric is significantly beaten by one of
    its own rank, and every metric of rank r + 1 is beaten by one of rank r."""
    if sig.ndim != 2 or sig.shape[0] != sig.shape[1]:
        raise ValueError("the significance matrix must be square")
    ranks: list[int] = []
    rank, start = 1, 0
    for i in range(sig.shape[0]):
        if np.any(sig[start:i, i] <= alpha):
            rank += 1
            start = i
        ranks.append(rank)
    return ranks


def cluster(
    values: Sequence[float], p_better: Callable[[int, int], float] | None, alpha: float = 0.05
) -> Clusters:
    """Sort, test and rank metrics; without ``p_better`` (no test) ranks are None."""
    n = len(values)
    if p_better is None:
        order, sig = significance_matrix(values, lambda a, b: 0.0)
        return Clusters(order=order, sig=sig, ranks=[None] * n)
    order, sig = significance_matrix(values, p_better)
    ranks: list[int | None] = [None] * n
    for position, rank in zip(order, assign_ranks(sig, alpha), strict=True):
        ranks[int(position)] = rank
    return Clusters(order=order, sig=sig, ranks=ranks)


def average_ranks(
    tables: Sequence[Mapping[str, int | None]], weights: Sequence[float] | None = None
) -> dict[str, float]:
    """Each metric's rank averaged over ``tables`` (weighted; uniform by default), for
    the metrics ranked in every table, sorted from best (lowest) to worst.

    The weights are normalised to sum to 1, so this is a weighted mean. mt-metrics-eval's
    ``AverageRanks`` sums rank × weight as given: the two agree for weights that sum to
    1 (its uniform default and its ``AssignWeights``), and for others its values are
    these times the weights' sum (the order is the same)."""
    if not tables:
        return {}
    if weights is None:
        weights = [1.0] * len(tables)
    if (
        len(weights) != len(tables)
        or not all(math.isfinite(w) and w >= 0 for w in weights)
        or sum(weights) <= 0
    ):
        raise ValueError(
            f"one non-negative weight per table, not all zero: got {list(weights)} "
            f"for {len(tables)} tables"
        )
    weights = [w / sum(weights) for w in weights]
    common = set.intersection(*({m for m, r in t.items() if r is not None} for t in tables))
    totals = {
        metric: float(sum(w * float(t[metric] or 0) for t, w in zip(tables, weights, strict=True)))
        for metric in common
    }
    return dict(sorted(totals.items(), key=lambda item: (item[1], item[0])))
