"""A judge's scores on the annotators' ordinal scale: hand-computed cases, and the means
of several annotators (thirds, quarters, fifths) however they were computed."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from scoring.stats.agreement_tables import answer_counts
from scoring.stats.judge_agreement import pointwise_agreement
from scoring.stats.scales import on_points, point_index, scale_points, to_scale


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


# --- means of several annotators: thirds, quarters, fifths ------------------------------


def test_the_thirds_of_three_annotators_are_points_of_their_scale():
    # SummEval's coherence: means of three experts; the grid built by multiplying a
    # step of 0.33333333333333326 missed 2.0 by 9e-16 and every statistic refused them
    answers = np.array([[1, 2, 2, 3, 5], [1, 2, 3, 3, 5], [2, 3, 2, 3, 5]], dtype=float)
    means = answers.mean(axis=0)  # 4/3, 7/3, 7/3, 3, 5
    points = scale_points(means, 1, 5)
    assert points is not None and points.size == 13
    assert points[3] == 2.0 and points[-1] == 5.0
    counts = answer_counts(means, points)
    assert counts.sum(axis=1).tolist() == [1.0] * 5
    found = pointwise_agreement(means, means[None, :], ["d1", "d1", "d2", "d2", "d3"], points)
    assert found.quadratic_kappa.value == pytest.approx(1.0)


def test_a_value_within_rounding_of_a_point_is_that_point_and_others_are_none():
    points = np.array([1, 4 / 3, 5 / 3, 2])
    assert point_index(
        [1 + 1 / 3, 2.0000000000000004, 1.9999999999999991, np.nan], points
    ).tolist() == [1, 3, 3, -1]
    assert point_index([1.5, 0.0, 2.1], points).tolist() == [-1, -1, -1]
    assert np.array_equal(
        on_points([1.9999999999999991, 1.5], points), [2.0, np.nan], equal_nan=True
    )
    with pytest.raises(ValueError, match="off the scale"):
        answer_counts([1.5], points)


def _means(answers: np.ndarray, how: str) -> np.ndarray:
    """The annotators' mean per item, computed the ways real files were made."""
    k = answers.shape[0]
    if how == "numpy":
        return answers.mean(axis=0)
    if how == "sum":
        return answers.sum(axis=0) / k
    if how == "shares":  # one k-th of each answer, added up
        return np.sum(answers / k, axis=0)
    if how == "reversed":
        return np.array([math.fsum(col[::-1]) / k for col in answers.T])
    return np.array([float(Fraction(int(col.sum()), k)) for col in answers.T])


@st.composite
def panels(draw: st.DrawFn) -> tuple[int, int, np.ndarray, np.ndarray]:
    """A scale low..high (2 to 5 points), k = 2..5 annotators' integer answers on n
    items, and their means computed one of several ways."""
    k = draw(st.integers(2, 5))
    low = draw(st.integers(-2, 1))
    high = low + draw(st.integers(1, 4))
    n = draw(st.integers(2, 30))
    answers = draw(hnp.arrays(np.float64, (k, n), elements=st.integers(low, high).map(float)))
    how = draw(st.sampled_from(["numpy", "sum", "shares", "reversed", "fraction"]))
    return low, high, answers, _means(answers, how)


@settings(max_examples=200, deadline=None)
@given(panels())
def test_means_of_k_annotators_lie_on_their_scale_however_computed(panel):
    low, high, answers, means = panel
    k = answers.shape[0]
    points = scale_points(means, low, high)
    assert points is not None
    assert points[0] == low and points[-1] == high  # exact: the ends are the declared ones
    for point in points:  # each point is the float nearest a fraction of k-ths
        assert abs(point * k - round(point * k)) <= 1e-9
    index = point_index(means, points)
    assert np.all(index >= 0)
    exact = [Fraction(int(col.sum()), k) for col in answers.T]
    assert [Fraction(p).limit_denominator(60) for p in points[index]] == exact
    assert answer_counts(means, points).sum(axis=1).tolist() == [1.0] * means.size
    again = to_scale(_means(answers, "fraction"), points, means)
    assert again.method == "as_is" and np.array_equal(again.values, points[index])


@settings(max_examples=100, deadline=None)
@given(panels(), st.integers(0, 2**32 - 1))
def test_agreement_on_means_runs_and_a_judge_equal_to_them_agrees_fully(panel, seed):
    low, high, answers, means = panel
    points = scale_points(means, low, high)
    assert points is not None
    docs = np.arange(means.size) // 2
    judge = to_scale(_means(answers, "shares"), points, means).values
    found = pointwise_agreement(
        judge, means[None, :], docs, points, rng=np.random.default_rng(seed), resamples=20
    )
    if np.unique(means).size > 1:
        assert found.quadratic_kappa.value == pytest.approx(1.0)
        assert found.krippendorff_alpha.value == pytest.approx(1.0)
    assert found.n_items == means.size
