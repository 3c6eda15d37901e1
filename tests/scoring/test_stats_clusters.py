"""Significance clusters rank metrics as WMT does, and average ranks over tables."""

import math

import numpy as np
import pytest

from scoring.stats import average_ranks, cluster, paired_bootstrap_p
from scoring.stats.significance import Alternative


def test_clusters_separate_clearly_different_metrics_and_keep_indistinguishable_ones_together():
    rng = np.random.default_rng(0)
    truth = np.array([0.5, 0.8, 0.79, math.nan, 0.2])
    noise = rng.normal(size=(1, 500)) * 0.01  # shared resamples: paired
    draws = truth[:, None] + noise + rng.normal(size=(5, 500)) * 0.02

    def p_better(a: int, b: int) -> float:
        return paired_bootstrap_p(draws[a], draws[b], truth[a], truth[b], Alternative.GREATER)

    result = cluster(list(truth), p_better)
    assert list(result.order) == [1, 2, 0, 4]  # NaN left out
    assert result.ranks == [2, 1, 1, None, 3]
    assert result.sig[0, 1] > 0.05 and result.sig[0, 2] < 0.05
    untested = cluster(list(truth), None)
    assert untested.ranks == [None] * 5 and list(untested.order) == [1, 2, 0, 4]


def test_average_ranks_keep_the_metrics_ranked_everywhere_and_sort_best_first():
    tables = [{"a": 1, "b": 2, "c": 1}, {"a": 2, "b": 1, "c": None}, {"a": 1, "b": 3}]
    assert average_ranks(tables) == {"a": pytest.approx(4 / 3), "b": pytest.approx(2.0)}
    weighted = average_ranks(tables, weights=[2, 1, 1])
    assert weighted == {"a": pytest.approx(1.25), "b": pytest.approx(2.0)}
    with pytest.raises(ValueError, match="one non-negative weight"):
        average_ranks(tables, weights=[1, 1])


@pytest.mark.parametrize("weights", [[2, -1, 1], [1, math.nan, 1], [1, math.inf, 1], [0, 0, 0]])
def test_average_ranks_refuse_negative_or_non_finite_weights(weights):
    # A negative weight once passed as long as the sum stayed positive, giving a
    # "mean" rank outside the ranks' range.
    tables = [{"a": 1, "b": 2}, {"a": 2, "b": 1}, {"a": 1, "b": 2}]
    with pytest.raises(ValueError, match="one non-negative weight per table"):
        average_ranks(tables, weights=weights)
