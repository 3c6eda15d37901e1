"""The dominance tree and tie windows behind the vectorised dataset-level Kendall
bootstrap equal counting every pair."""

import numpy as np
import pytest

from scoring.stats.weighted_pairs import Dominance, Windows


@pytest.mark.parametrize("n_keys", [1, 2, 5, 13, 40])
def test_dominance_equals_summing_every_pair(n_keys):
    rng = np.random.default_rng(n_keys)
    n = 60
    point_key = rng.integers(0, n_keys, n)
    query_key = rng.integers(0, n_keys, n)
    limit = np.sort(rng.integers(0, n + 1, n))
    column_of = rng.permutation(n)
    weight = rng.integers(0, 4, size=(3, n)).astype(np.int64)  # by column
    by_place = weight[:, column_of]
    expected = [
        sum(
            by_place[b, j] * by_place[b, i]
            for j in range(n)
            for i in range(n)
            if point_key[i] < query_key[j] and i < limit[j]
        )
        for b in range(3)
    ]
    query_weight = np.stack(
        [np.bincount(query_key, weights=by_place[b], minlength=n_keys) for b in range(3)]
    )
    tree = Dominance(point_key, query_key, limit, n_keys, column_of)
    np.testing.assert_array_equal(tree.totals(weight, query_weight), expected)


def test_windows_count_the_weighted_pairs_inside_each_window():
    # places 0-1 tie, 2 alone, 3-5 tie (3 with 4 and 5, 4 with 5)
    ends = np.array([2, 2, 3, 6, 6, 6])
    order = np.array([5, 4, 3, 2, 1, 0])
    weight = np.array([[1, 2, 3, 4, 5, 6]], dtype=np.int64)
    by_place = weight[0, order]
    expected = by_place[0] * by_place[1] + by_place[3] * (by_place[4] + by_place[5])
    expected += by_place[4] * by_place[5]
    windows = Windows.build(order, ends)
    tied, cum = windows.pairs(weight)
    assert tied[0] == expected
    assert windows.columns.size == 5  # place 2 ties nothing
    assert windows.positive_chains(cum)[0] == 2
