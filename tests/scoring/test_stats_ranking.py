"""Grouping by key and the vectorised rank helpers agree with plain per-group code."""

import numpy as np
import pytest
import scipy.stats

from scoring.stats.ranking import Groups, count_descents, rank_rows, tie_runs


def test_groups_from_keys_index_ragged_unsorted_keys():
    groups = Groups.from_keys(["b", "a", "b", "c", "a", "b"])
    assert list(groups.keys) == ["a", "b", "c"]
    assert list(groups.codes) == [1, 0, 1, 2, 0, 1]
    assert list(groups.sizes) == [2, 3, 1]
    assert list(groups.offsets) == [0, 2, 5, 6]
    # Items keep their order within a group.
    assert list(groups.order) == [1, 4, 0, 2, 5, 3]


def test_subset_keeps_every_group_and_renumbers_items():
    groups = Groups.from_keys([0, 1, 0, 1, 2])
    sub = groups.subset(np.array([True, False, True, True, False]))
    assert sub.n_groups == 3 and sub.n_items == 3
    assert list(sub.sizes) == [2, 1, 0]
    assert list(sub.codes) == [0, 0, 1]
    assert list(sub.order) == [0, 1, 2]


def test_repeat_duplicates_items_in_group_order():
    groups = Groups.from_keys([1, 0, 1])
    items, repeated = groups.repeat(np.array([2, 0, 1]))
    assert list(items) == [0, 0, 2]
    assert list(repeated.sizes) == [0, 3]


def test_blocks_cover_each_group_of_two_or_more_exactly_once():
    rng = np.random.default_rng(3)
    sizes = np.r_[rng.integers(0, 12, size=60), 300]
    keys = rng.permutation(np.repeat(np.arange(sizes.size), sizes))
    groups = Groups.from_keys(keys)
    seen = {}
    for block in groups.blocks:
        assert block.index.shape[1] < 2 * block.mask.sum(axis=1).min()  # bounded padding
        for row, group in enumerate(block.rows):
            seen[int(group)] = sorted(block.index[row][block.mask[row]])
    expected = {
        g: sorted(np.flatnonzero(keys == key))
        for g, key in enumerate(groups.keys)
        if sizes[key] >= 2
    }
    assert seen == expected


def test_rank_rows_matches_scipy_with_ties_and_padding():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 4, size=(30, 9)).astype(float)
    lengths = rng.integers(0, 10, size=30)
    values[np.arange(9)[None, :] >= lengths[:, None]] = np.nan
    ranks = rank_rows(values)
    for row, n in enumerate(lengths):
        np.testing.assert_allclose(ranks[row, :n], scipy.stats.rankdata(values[row, :n]))


def test_tie_runs_counts_tied_pairs_and_distinct_values():
    rows = np.array([[1.0, 1.0, 1.0, 2.0, 3.0, 3.0], [0.0, 5.0, 5.0, np.nan, np.nan, np.nan]])
    tied, distinct = tie_runs(rows)
    assert list(tied) == [3 + 1, 1]
    assert list(distinct) == [3, 2]
    other = np.array([[0.0, 0.0, 1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 2.0, np.nan, np.nan, np.nan]])
    joint, _ = tie_runs(rows, other)
    assert list(joint) == [1, 0]  # (1,0),(1,0) tie in both; (3,1),(3,2) do not


def test_count_descents_counts_inversions_and_ignores_padding():
    rows = np.array([[3.0, 1.0, 2.0, np.nan], [1.0, 2.0, 2.0, 0.0]])
    assert list(count_descents(rows)) == [2, 3]


@pytest.mark.parametrize("keys", [np.zeros((2, 2)), [[1], [2]]])
def test_groups_reject_keys_that_are_not_one_dimensional(keys):
    with pytest.raises(ValueError, match="1-D"):
        Groups.from_keys(keys)
