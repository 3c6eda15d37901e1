"""Kendall-type statistics of pooled bootstrap resamples, from pair counts weighted by
copies.

A pooled (dataset-level) bootstrap resample holds output k ``w_k`` times (its
document's draw count times its system's). Every Kendall-type statistic is a function
of counts of pairs of copies: concordant C, metric ties, human ties, ties on both sides,
and N = Σ w (τ-c also needs how many distinct values are present). Copies of one output
tie on both sides, so each output adds w (w − 1) / 2 to every tie count; two different
outputs k, l add w_k w_l to the class their pair falls in. Each count is a quadratic
form in w over structure that no resample changes (sorts, tie windows, a dominance
tree): it is built once here and evaluated for a block of resamples at a time with
cumulative sums, without materialising a resample.

C, Σ over pairs with y_i < y_j and x_j − x_i > ε of w_i w_j, is the costly count. A
tree over the distinct human values (or, for a statistic symmetric in its sides, the
side with fewer distinct values) does it: at each node the outputs of the lower half of
its values are points and those of the upper half queries, laid out in metric order,
so one cumulative sum of the points' weights gives each query the weight of the points
it beats. Two outputs with different values meet at exactly one node, so the cost is
depth × resamples × outputs, depth = log2 of the distinct values (3 for 1-5 ratings),
where comparing pairs would cost outputs².

The counts are integers, exact in float64 while below 2**53 (N²/2 for N copies).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.pairwise import LikeCounts, RightPairs, count_within, dense_codes
from scoring.stats.ranking import BoolArray, FloatArray, IntArray

# Copies are counted in int64: exact, and numpy's integer cumulative sums measured
# several times faster than float64 ones.
WeightArray = npt.NDArray[np.int64]

# The statistics counted here, by their Coefficient value (plain strings: the caller
# maps them).
KENDALL_B, KENDALL_C = "kendall_tau_b", "kendall_tau_c"
ACC23, KENDALL_23, KENDALL_LIKE = "acc23", "kendall_tau_23", "kendall_like"
STATISTICS = frozenset({KENDALL_B, KENDALL_C, ACC23, KENDALL_23, KENDALL_LIKE})


@dataclass(frozen=True, eq=False)
class _Depth:
    """One depth of the dominance tree: its elements (columns of the weight block, node
    by node, in metric order within a node), which are points (1) and which queries
    (1), and per node its first element and the key range [mid, hi) of its queries."""

    columns: IntArray
    point: WeightArray
    query: WeightArray
    node_first: IntArray
    query_keys: IntArray


class Dominance:
    """For weight rows w: Σ over queries j of w_j · Σ over points i with
    ``point_key[i] < query_key[j]`` and ``i < limit[j]`` of w_i.

    Every output is a point and a query. Outputs are numbered by place in the order
    ``limit`` counts in (metric order); ``column_of`` maps a place to its column in the
    weight rows. Keys are dense codes 0..n_keys−1 of one side's values.
    """

    def __init__(
        self,
        point_key: IntArray,
        query_key: IntArray,
        limit: IntArray,
        n_keys: int,
        column_of: IntArray,
    ) -> None:
        n = point_key.size
        self.n_keys = n_keys
        column = np.arange(n, dtype=np.int64)
        # Within a node, a point at column c sorts after the queries whose limit
        # exceeds c: keys 2c + 1 against 2·limit.
        point_order, query_order = 2 * column + 1, 2 * limit.astype(np.int64)
        self.depths: list[_Depth] = []
        nodes = [(0, n_keys)] if n_keys >= 2 else []
        while nodes:
            lo, hi = (np.array(side, dtype=np.int64) for side in zip(*nodes, strict=True))
            mid = (lo + hi) // 2
            node_of = np.full(n_keys, -1, dtype=np.int64)  # keys in no node: leaves
            for k, (a, b) in enumerate(nodes):
                node_of[a:b] = k
            p_node, q_node = node_of[point_key], node_of[query_key]
            p_items = np.flatnonzero((p_node >= 0) & (point_key < mid[p_node]))
            q_items = np.flatnonzero((q_node >= 0) & (query_key >= mid[q_node]))
            span = np.int64(2 * n + 2)
            keys = np.concatenate(
                [
                    p_node[p_items] * span + point_order[p_items],
                    q_node[q_items] * span + query_order[q_items],
                ]
            )
            order = np.argsort(keys, kind="stable")  # odd and even keys never collide
            is_point = np.concatenate(
                [np.ones(p_items.size, dtype=np.int64), np.zeros(q_items.size, dtype=np.int64)]
            )[order]
            element_node = np.concatenate([p_node[p_items], q_node[q_items]])[order]
            self.depths.append(
                _Depth(
                    columns=column_of[np.concatenate([p_items, q_items])[order]],
                    point=is_point,
                    query=1 - is_point,
                    node_first=np.searchsorted(element_node, np.arange(len(nodes))).astype(np.intp),
                    query_keys=np.stack([mid, hi], axis=1).astype(np.intp),
                )
            )
            nodes = [
                part
                for a, m, b in zip(lo.tolist(), mid.tolist(), hi.tolist(), strict=True)
                for part in ((a, m), (m, b))
                if part[1] - part[0] >= 2
            ]

    def totals(self, weight: WeightArray, query_weight: FloatArray) -> FloatArray:
        """The sum for each row of ``weight`` (resamples × outputs); ``query_weight``
        (resamples × n_keys) is the weight of the outputs with each query key."""
        rows = weight.shape[0]
        out = np.zeros(rows, dtype=np.int64)
        keyed = np.zeros((rows, self.n_keys + 1), dtype=np.int64)
        np.cumsum(query_weight.astype(np.int64), axis=1, out=keyed[:, 1:])
        for depth in self.depths:
            if depth.columns.size == 0:
                continue
            taken = np.take(weight, depth.columns, axis=1)
            points = np.cumsum(taken * depth.point, axis=1)
            out += np.einsum("bn,bn->b", taken * depth.query, points)
            # The cumulative sum runs on across nodes: take off, for each node, the
            # points of the nodes before it times the weight of its queries.
            first = depth.node_first
            before = np.where(first > 0, points[:, np.maximum(first - 1, 0)], 0)
            mid, hi = depth.query_keys[:, 0], depth.query_keys[:, 1]
            out -= np.einsum("bk,bk->b", before, keyed[:, hi] - keyed[:, mid])
        return out.astype(np.float64)


@dataclass(frozen=True, eq=False)
class Windows:
    """Tying pairs of different outputs in one order of the columns: the output at place
    i ties those at places i+1 .. end[i]−1 (the rest of its run of equal values, or the
    values within ε above it). Places in no window are dropped (``columns`` keeps the
    rest in order, ``ends`` renumbered); ``chain_starts`` start each maximal chain of
    overlapping windows among them (with exact ties: each run of equal values)."""

    columns: IntArray
    ends: IntArray
    chain_starts: IntArray

    @classmethod
    def build(cls, order: IntArray, ends: IntArray) -> Windows:
        """``order``: the columns in this order; ``ends``: each place's exclusive window
        end (greater than the place, non-decreasing)."""
        n = order.size
        places = np.arange(n, dtype=np.intp)
        reach = np.maximum.accumulate(np.concatenate([[0], ends[:-1]])) if n else ends
        inside = reach > places  # within an earlier place's window
        kept = (ends > places + 1) | inside
        renumber = np.cumsum(kept) - 1
        kept_ends = renumber[np.maximum(ends[kept], 1) - 1] + 1
        return cls(
            columns=order[kept].astype(np.intp),
            ends=kept_ends.astype(np.intp),
            chain_starts=renumber[kept & ~inside].astype(np.intp),
        )

    def pairs(self, weight: WeightArray) -> tuple[FloatArray, WeightArray]:
        """Per row, Σ over tying pairs of different outputs of w_k w_l; and the kept
        places' cumulative weights (rows × kept + 1, from 0)."""
        taken = np.take(weight, self.columns, axis=1)
        cum = np.zeros((weight.shape[0], self.columns.size + 1), dtype=np.int64)
        np.cumsum(taken, axis=1, out=cum[:, 1:])
        tied = np.einsum("bn,bn->b", taken, cum[:, self.ends] - cum[:, 1:])
        return tied.astype(np.float64), cum

    def positive_chains(self, cum: WeightArray) -> FloatArray:
        """Per row, the chains with any weight (from :meth:`pairs`' cumulative sums)."""
        starts = self.chain_starts
        ends = np.append(starts[1:], self.columns.size)
        positive = np.count_nonzero(cum[:, ends] > cum[:, starts], axis=1)
        return np.asarray(positive, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ResampledPairs:
    """Per resample (row of a weight block): the statistic, the copies N, and whether
    the resample is constant as :func:`~scoring.stats.group_correlations.row_correlations`
    decides (τ: one side takes one value; Kendall-like: no pair differs enough)."""

    value: FloatArray
    copies: FloatArray
    constant: BoolArray


class PooledPairs:
    """A dataset-level Kendall-type statistic for many weightings of the same outputs.

    Built once from the scored outputs (no NaN); :attr:`order` lists the outputs in the
    column order :meth:`evaluate` expects its weights in.
    """

    def __init__(
        self,
        metric: FloatArray,
        human: FloatArray,
        statistic: str,
        *,
        epsilon: float = 0.0,
        threshold: float = 25.0,
    ) -> None:
        if statistic not in STATISTICS:
            raise ValueError(f"no pooled pair counts for {statistic}")
        if epsilon < 0:
            raise ValueError("epsilon must be non-negative")
        if statistic == KENDALL_LIKE and not threshold > 0:
            raise ValueError("the Kendall-like threshold must be positive")
        if statistic not in (ACC23, KENDALL_23):
            epsilon = 0.0  # ε is acc23's and τ23's only
        self.statistic = statistic
        x, y = metric, human
        symmetric = statistic != KENDALL_LIKE and epsilon == 0.0
        if symmetric and np.unique(x).size < np.unique(y).size:
            x, y = y, x  # the tree runs over the side with fewer distinct values
        # Places: the outputs in metric order. Columns: in human-level order, then
        # metric order, so each level's copies are one contiguous sum.
        order = np.argsort(x, kind="stable").astype(np.intp)
        xs, ys = x[order], y[order]
        unique_x, x_code = dense_codes(xs)
        unique_y, y_code = dense_codes(ys)
        self.n_levels = unique_y.size
        n = xs.size
        by_level = np.lexsort((x_code, y_code)).astype(np.intp)
        column_of = np.empty(n, dtype=np.intp)
        column_of[by_level] = np.arange(n, dtype=np.intp)
        self.order = order[by_level]
        self.level_starts = np.searchsorted(y_code[by_level], np.arange(self.n_levels))
        # last[i]: the highest metric code within ε above x_i (x_i's own for ε = 0).
        last = count_within(unique_x, xs, epsilon) - 1 if epsilon > 0 else x_code
        self.x_ties = Windows.build(column_of, np.searchsorted(x_code, last, side="right"))
        # Tied on both sides: same human level, metric codes within the window.
        joint = y_code[by_level] * np.int64(unique_x.size) + x_code[by_level]
        reach = y_code[by_level] * np.int64(unique_x.size) + last[by_level]
        self.both_ties = Windows.build(
            np.arange(n, dtype=np.intp), np.searchsorted(joint, reach, side="right")
        )
        query_key = y_code
        if statistic == KENDALL_LIKE:
            # A pair counts when the human difference reaches the threshold: the
            # levels a query beats are those at most its value minus the threshold.
            self.reach = _count_at_most(unique_y, unique_y, threshold)
            query_key = self.reach[y_code]
            limit = np.searchsorted(x_code, x_code, side="left")  # metric strictly below
        else:
            # Points i whose window ends before j's metric code: x_j − x_i > ε.
            limit = np.searchsorted(last, x_code, side="left")
        self.dominance = Dominance(y_code, query_key, limit, self.n_levels, column_of)

    def evaluate(self, weight: WeightArray) -> ResampledPairs:
        """The statistic of each row of ``weight`` (resamples × outputs, in
        :attr:`order`: each output's copies)."""
        levels = np.add.reduceat(weight, self.level_starts, axis=1).astype(np.float64)
        copies = levels.sum(axis=1)
        pairs = copies * (copies - 1) / 2
        if self.statistic == KENDALL_LIKE:
            cum = np.zeros((weight.shape[0], self.n_levels + 1))
            np.cumsum(levels, axis=1, out=cum[:, 1:])
            counted = np.einsum("bk,bk->b", levels, cum[:, self.reach])
            # Query weight per key: the reach grows with the level, so the levels
            # reaching key k are a run of them.
            keys = np.arange(self.n_levels)
            first = np.searchsorted(self.reach, keys, side="left")
            last = np.searchsorted(self.reach, keys, side="right")
            keyed = cum[:, last] - cum[:, first]
            concordant = self.dominance.totals(weight, keyed)
            like = LikeCounts(counted, concordant)
            return ResampledPairs(like.tau(), copies, (counted == 0) & (copies >= 2))
        concordant = self.dominance.totals(weight, levels)
        # Copies of one output tie on both sides.
        own = (np.einsum("bn,bn->b", weight, weight).astype(np.float64) - copies) / 2
        tied_x, cum_x = self.x_ties.pairs(weight)
        tied_x += own
        tied_both = self.both_ties.pairs(weight)[0] + own
        tied_y = (np.einsum("bk,bk->b", levels, levels) - copies) / 2
        if self.statistic in (ACC23, KENDALL_23):
            right = RightPairs(concordant + tied_both, pairs)
            value = right.acc23() if self.statistic == ACC23 else right.tau23()
            return ResampledPairs(value, copies, np.zeros(copies.size, dtype=bool))
        # S = C − D, with D = pairs − C − ties in x − ties in y + ties in both.
        s = 2 * concordant - pairs + tied_x + tied_y - tied_both
        constant = ((tied_x == pairs) | (tied_y == pairs)) & (copies >= 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.statistic == KENDALL_B:
                value = s / np.sqrt((pairs - tied_x) * (pairs - tied_y))
            else:
                distinct_x = np.count_nonzero(weight > 0, axis=1).astype(np.float64)
                if self.x_ties.columns.size:  # a run of tied values is one value
                    tied = np.take(weight, self.x_ties.columns, axis=1)
                    distinct_x += self.x_ties.positive_chains(cum_x)
                    distinct_x -= np.count_nonzero(tied > 0, axis=1)
                classes = np.minimum(distinct_x, np.count_nonzero(levels > 0, axis=1))
                value = 2 * s / (copies**2 * (classes - 1) / classes)
        return ResampledPairs(np.asarray(value, dtype=np.float64), copies, constant)


def _count_at_most(sorted_values: FloatArray, start: FloatArray, threshold: float) -> IntArray:
    """For each v in ``start``: how many of ``sorted_values`` have ``v − s >= threshold``
    (rounded as the pairwise comparison rounds it)."""
    n = sorted_values.size
    guess = np.searchsorted(sorted_values, start - threshold, side="right")
    while True:
        up = (guess < n) & (start - sorted_values[np.minimum(guess, n - 1)] >= threshold)
        down = (guess > 0) & (start - sorted_values[np.maximum(guess - 1, 0)] < threshold)
        if not (up.any() or down.any()):
            return guess.astype(np.intp)
        guess = guess + up - down
