"""A judge's scores on the annotators' ordinal scale: hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats.scales import scale_points, to_scale


def test_scale_points_are_the_answers_grid_to_the_declared_ends():
    assert scale_points([2, 3, 3, 4], 1, 5).tolist() == [1, 2, 3, 4, 5]
    assert scale_points([0, 3, np.nan], 1, 5).tolist() == [0, 1, 2, 3, 4, 5]
    # a quarter-point scale: its grid, to the declared ends
    assert scale_points([0.5, 0.25, 0.5, 1.0], 0, 1).tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert scale_points([1.5, 2.0, 4.0], 1, 5).tolist() == [1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5]
    assert scale_points([1.0, 1.3, 2.0], 1, 5) is None  # on no grid: continuous
    assert scale_points([1.23, 3.47, 2.05], 1, 5) is None  # 0.18 apart: no common step
    assert scale_points([1, 2], 1, 100) is None  # 100 points: continuous
    assert scale_points([3.0, 3.0], 3, 3) is None  # one point: nothing to agree on
    assert scale_points([np.nan], 1, 5) is None


def test_scores_on_the_scale_stay_as_they_are():
    found = to_scale([1, 5, np.nan, 3], [1, 2, 3, 4, 5], [1, 2])
    assert found.method == "as_is" and np.array_equal(found.values, [1, 5, np.nan, 3], True)


def test_scores_within_the_range_go_to_the_nearest_point_and_half_way_up():
    found = to_scale([1.2, 2.5, 3.49, 4.51, 5.0, np.nan], [1, 2, 3, 4, 5], [])
    assert found.method == "rounded"
    assert np.array_equal(found.values, [1, 3, 3, 5, 5, np.nan], equal_nan=True)
    assert "nearest" in found.description


def test_scores_on_another_scale_are_binned_to_the_annotators_shares():
    # humans: half 1s, a quarter 2s, a quarter 3s (cumulative 0.5, 0.75, 1.0); the
    # judge's scores ranked −9 < −4 < −2.5 < −1, at mid-rank percentiles 0.125, 0.375,
    # 0.625, 0.875 → 1, 1, 2, 3
    found = to_scale([-4.0, -9.0, -1.0, -2.5], [1, 2, 3], [1, 1, 2, 3])
    assert found.method == "quantiles" and found.values.tolist() == [1, 1, 3, 2]
    assert "share" in found.description


def test_tied_scores_share_a_point_when_binned():
    # percentiles of [10, 10, 20, 30]: ties at (1.5 − 0.5) / 4 = 0.25 → both 1;
    # 0.625 → 2 of [cumulative 0.5, 1.0] on points 1, 2
    found = to_scale([10, 10, 20, 30], [1, 2], [1, 2])
    assert found.values.tolist() == [1, 1, 2, 2]


def test_a_scale_needs_two_ascending_points():
    with pytest.raises(ValueError, match="ascending"):
        to_scale([1.0], [3, 1], [])
