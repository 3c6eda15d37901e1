"""Self-consistency of sampled judges and prompt sensitivity, on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from scoring.stats import Coefficient, Groups, Level, Resamples, Unit
from scoring.stats.consistency import correlation_change, rank_changes, self_consistency

SCALE = [1, 2, 3, 4, 5]


def test_self_consistency_of_three_outputs_sampled_three_times_each():
    # A = [1, 1, 2], B = [3, 3, 3], C = [4, 5, 5]: means 4/3, 3, 14/3, grand mean 3.
    # SSB = 3·((5/3)² + 0 + (5/3)²) = 50/3 on 2 df: MSB = 25/3.
    # SSW = (1/9 + 1/9 + 4/9) + 0 + (4/9 + 1/9 + 1/9) = 4/3 on 6 df: MSW = 2/9.
    counts = [[2, 1, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 1, 2]]
    found = self_consistency(counts, SCALE)
    assert found.n_outputs == 3 and found.n_samples == 9 and found.k == pytest.approx(3.0)
    assert found.ms_between == pytest.approx(25 / 3) and found.ms_within == pytest.approx(2 / 9)
    assert found.icc1 == pytest.approx((25 / 3 - 2 / 9) / (25 / 3 + 2 * 2 / 9))  # 73/79
    assert found.icck == pytest.approx(73 / 75)
    # sample SDs: A and C √(1/3), B 0
    assert found.mean_within_sd == pytest.approx(2 * math.sqrt(1 / 3) / 3)
    assert found.pooled_within_sd == pytest.approx(math.sqrt(2 / 9))


def test_self_consistency_with_unequal_numbers_of_answers_uses_k0():
    # A = [1, 3] (mean 2), B = [4, 4, 4, 5] (mean 4.25); N = 6, grand mean 21/6 = 3.5.
    # SSB = 2·1.5² + 4·0.75² = 6.75 on 1 df; SSW = 2 + 0.75 = 2.75 on 4 df: MSW = 0.6875.
    # k0 = (6 − (4 + 16) / 6) / 1 = 8/3.
    counts = [[1, 0, 1, 0, 0], [0, 0, 0, 3, 1], [0, 0, 0, 0, 0]]  # the third: no answer
    found = self_consistency(counts, SCALE)
    assert found.n_outputs == 2 and found.n_samples == 6 and found.k == pytest.approx(8 / 3)
    assert found.icc1 == pytest.approx((6.75 - 0.6875) / (6.75 + (8 / 3 - 1) * 0.6875))
    assert found.icck == pytest.approx((6.75 - 0.6875) / 6.75)
    assert found.mean_within_sd == pytest.approx((math.sqrt(2) + 0.5) / 2)


def test_self_consistency_of_one_answer_each_or_no_spread_is_undefined_not_zero():
    once = self_consistency([[1, 0, 0, 0, 0], [0, 0, 1, 0, 0]], SCALE)
    assert math.isnan(once.icc1) and math.isnan(once.mean_within_sd) and once.n_samples == 2
    flat = self_consistency([[0, 0, 4, 0, 0], [0, 0, 4, 0, 0]], SCALE)
    assert math.isnan(flat.icc1) and flat.mean_within_sd == 0.0
    assert self_consistency(np.zeros((0, 5)), SCALE).n_outputs == 0
    with pytest.raises(ValueError, match="one column per value"):
        self_consistency([[1, 2]], SCALE)


def test_the_change_in_correlation_is_recomputed_on_the_same_resamples_of_documents():
    # three documents of three outputs; run a follows the humans, run b less so
    human = np.array([1, 2, 3, 2, 4, 5, 1, 3, 2], dtype=float)
    a = np.array([1.1, 2.2, 2.9, 2.5, 3.9, 5.2, 0.8, 3.1, 2.4])
    b = np.array([2.0, 1.0, 3.0, 4.0, 2.0, 5.0, 3.0, 1.0, 2.0])
    docs = Groups.from_keys(np.repeat([0, 1, 2], 3))
    draws = np.array([[0, 0, 1], [2, 1, 2], [0, 1, 2], [1, 1, 1]], dtype=np.intp)
    plan = Resamples(Unit.DOCUMENTS, docs, None, draws, None)
    found = correlation_change(
        plan, a, b, human, level=Level.DATASET, coefficient=Coefficient.PEARSON, confidence=0.5
    )
    r_a, r_b = stats.pearsonr(a, human)[0], stats.pearsonr(b, human)[0]
    assert found.value_a == pytest.approx(r_a) and found.value_b == pytest.approx(r_b)
    assert found.delta == pytest.approx(r_a - r_b) and found.n_outputs == 9
    differences = []
    for row in draws:
        rows = np.concatenate([np.arange(3 * d, 3 * d + 3) for d in row])
        differences.append(
            stats.pearsonr(a[rows], human[rows])[0] - stats.pearsonr(b[rows], human[rows])[0]
        )
    assert (found.low, found.high) == pytest.approx(tuple(np.quantile(differences, [0.25, 0.75])))
    shifted = np.array(differences) - (r_a - r_b)
    expected_p = (1 + np.count_nonzero(np.abs(shifted) >= abs(r_a - r_b) - 1e-12)) / 5
    assert found.p_value == pytest.approx(expected_p)
    assert found.p_lower == pytest.approx((1 + np.count_nonzero(shifted <= r_a - r_b)) / 5)
    assert found.resamples == 4 and found.n_undefined == 0


def test_the_change_in_correlation_uses_only_the_outputs_both_runs_scored():
    human = np.array([1, 2, 3, 4, 5, 1, 2, 3], dtype=float)
    a = np.array([1, 2, 3, 4, 5, 2, 1, 3], dtype=float)
    b = np.array([1, 3, 2, 4, np.nan, 1, 2, 3], dtype=float)
    docs = Groups.from_keys([0, 0, 0, 0, 0, 1, 1, 1])
    plan = Resamples(Unit.DOCUMENTS, docs, None, np.array([[0, 1], [1, 0]], dtype=np.intp), None)
    found = correlation_change(
        plan, a, b, human, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN
    )
    keep = np.isfinite(b)
    per_doc_a = [
        stats.spearmanr(a[keep][:4], human[keep][:4])[0],
        stats.spearmanr(a[5:], human[5:])[0],
    ]
    assert found.n_outputs == 7 and found.value_a == pytest.approx(np.mean(per_doc_a))


def test_rank_changes_name_the_systems_two_runs_order_differently():
    systems = Groups.from_keys(["x", "x", "y", "y", "z", "z"])
    a = [5, 5, 3, 3, 1, 1]  # x > y > z
    b = [3, 3, 5, 5, 1, 1]  # y > x > z
    changes = rank_changes(a, b, systems)
    assert [(c.system, c.rank_a, c.rank_b) for c in changes] == [(0, 1.0, 2.0), (1, 2.0, 1.0)]
    assert rank_changes(a, a, systems) == []
