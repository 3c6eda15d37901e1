"""Several annotators' judgments become one score per output, as configured."""

import math

import numpy as np
import pytest

from scoring.stats import Aggregate, aggregate_judgments

# o1: 1, 2, 4 (ann3 flagged gives 4); o2: 3, 5; o3: only ann3's 5; o4: a NaN and a 2.
OUTPUTS = ["o1", "o1", "o1", "o2", "o2", "o3", "o4", "o4"]
ANNOTATORS = ["ann1", "ann2", "ann3", "ann1", "ann2", "ann3", "ann1", "ann2"]
VALUES = [1.0, 2.0, 4.0, 3.0, 5.0, 5.0, np.nan, 2.0]


def test_mean_of_each_outputs_judgments_ignores_missing_ones():
    result = aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES)
    assert list(result.outputs) == ["o1", "o2", "o3", "o4"]
    np.testing.assert_allclose(result.values, [7 / 3, 4.0, 5.0, 2.0])
    assert list(result.n_judgments) == [3, 2, 1, 1]
    assert result.n_excluded == 0


def test_median_takes_the_middle_judgment_or_the_mean_of_the_two_middle_ones():
    outputs = ["a", "a", "a", "b", "b", "b", "b", "c"]
    values = [9.0, 1.0, 2.0, 4.0, 1.0, 10.0, 3.0, 7.0]
    result = aggregate_judgments(outputs, list("xyzxyzwx"), values, method=Aggregate.MEDIAN)
    np.testing.assert_allclose(result.values, [2.0, 3.5, 7.0])


def test_flagged_annotators_are_excluded_and_counted():
    result = aggregate_judgments(
        OUTPUTS, ANNOTATORS, VALUES, method=Aggregate.MEDIAN, exclude_annotators={"ann3"}
    )
    np.testing.assert_allclose(result.values[:2], [1.5, 4.0])
    assert math.isnan(result.values[2])  # o3 had only the flagged annotator
    assert list(result.n_judgments) == [2, 2, 0, 1]
    assert result.n_excluded == 2


def test_results_can_be_aligned_with_a_given_output_order():
    listed = ["o4", "o9", "o1", "o3", "o2"]
    result = aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, outputs=listed)
    assert list(result.outputs) == listed
    np.testing.assert_allclose(result.values, [2.0, np.nan, 7 / 3, 5.0, 4.0])
    assert list(result.n_judgments) == [1, 0, 3, 1, 2]
    # "o2" and "o3" were judged but are not listed: that is an error, not a silent drop.
    with pytest.raises(ValueError, match="not in outputs"):
        aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, outputs=["o1", "o4"])


def test_integer_output_ids_and_misaligned_input():
    result = aggregate_judgments([7, 3, 7], [1, 1, 2], [1.0, 2.0, 3.0], outputs=[3, 7])
    np.testing.assert_allclose(result.values, [2.0, 2.0])
    with pytest.raises(ValueError, match="aligned"):
        aggregate_judgments([1, 2], [1], [1.0, 2.0])


def test_weights_make_a_weighted_mean_per_output():
    weights = [1.0, 1.0, 0.0, 0.25, 0.75, 0.0, 1.0, 2.0]
    result = aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, weights=weights)
    # o1: (1 + 2) / 2; o2: (0.75 + 3.75) / 1; o3: its only judgment weighs 0; o4: the NaN is ignored
    np.testing.assert_allclose(result.values, [1.5, 4.5, np.nan, 2.0])
    assert list(result.n_judgments) == [3, 2, 1, 1]
    same = aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, weights=[3.0] * 8)
    np.testing.assert_allclose(same.values, aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES).values)


def test_bad_weights_are_refused():
    with pytest.raises(ValueError, match="aligned"):
        aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, weights=[1.0])
    with pytest.raises(ValueError, match="≥ 0"):
        aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, weights=[-1.0] * 8)
    with pytest.raises(ValueError, match="mean only"):
        aggregate_judgments(OUTPUTS, ANNOTATORS, VALUES, weights=[1.0] * 8, method=Aggregate.MEDIAN)


def test_one_judgment_per_listed_output_in_their_order_aggregates_as_any_order():
    """A frame's usual case (one rating per output, in output order) takes a shortcut;
    its values are those of the same judgments in another order."""
    rng = np.random.default_rng(2)
    outputs = np.sort(rng.choice(10_000, size=500, replace=False))
    values = rng.integers(1, 6, size=500).astype(np.float64)
    order = rng.permutation(500)
    fast = aggregate_judgments(outputs, np.zeros(500), values, outputs=outputs)
    slow = aggregate_judgments(outputs[order], np.zeros(500), values[order], outputs=outputs)
    assert np.array_equal(fast.values, slow.values) and np.array_equal(fast.values, values)
    with pytest.raises(ValueError, match="not in outputs"):
        aggregate_judgments(outputs + 1, np.zeros(500), values, outputs=outputs)
