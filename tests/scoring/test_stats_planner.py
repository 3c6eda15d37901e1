"""The sample-size planner: half-widths shrink like 1/√n, power is near α when two
metrics are equally good and near 1 when one is much better, and draws are seeded."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats import planner
from scoring.stats.significance import Alternative, paired_bootstrap_p


def _docs(seed: int = 0, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.clip(rng.normal(0.4, 0.25, n), -1, 1)
    return a, rng


def test_size_grid_doubles_past_the_dataset_and_contains_its_size():
    assert planner.size_grid(100) == [10, 20, 40, 80, 100, 160, 320]
    assert planner.size_grid(5) == [5, 10, 20, 40, 80, 160]


def test_resampled_means_equal_a_brute_force_weighted_mean():
    values, weights = np.array([0.1, 0.5, 0.9]), np.array([1.0, 2.0, 3.0])
    means = planner.resampled_means(
        values, 4, np.random.default_rng(5), weights=weights, resamples=50
    )
    idx = np.random.default_rng(5).integers(0, 3, size=(50, 4))
    expected = [np.average(values[row], weights=weights[row]) for row in idx]
    np.testing.assert_allclose(means, expected, rtol=1e-12)


def test_half_width_shrinks_like_one_over_sqrt_n():
    values, _ = _docs()
    widths = planner.half_widths(values, [20, 80, 320], np.random.default_rng(1), resamples=4000)
    assert widths[0] > widths[1] > widths[2]
    np.testing.assert_allclose(widths[0] / widths[1], 2.0, rtol=0.12)
    np.testing.assert_allclose(widths[1] / widths[2], 2.0, rtol=0.12)
    # against the normal approximation: 1.96 · sd / √n
    sd = values.std()
    np.testing.assert_allclose(widths, 1.96 * sd / np.sqrt([20, 80, 320]), rtol=0.1)


def test_paired_half_width_is_that_of_the_differences_under_macro_averaging():
    a, rng = _docs(2)
    b = a + rng.normal(0, 0.1, a.size)
    paired = planner.paired_half_widths(a, b, [40], np.random.default_rng(3), resamples=2000)
    direct = planner.half_widths(a - b, [40], np.random.default_rng(3), resamples=2000)
    np.testing.assert_allclose(paired, direct, rtol=1e-12)


def test_power_is_near_alpha_when_two_metrics_are_equally_good():
    a, rng = _docs(4)
    b = a + rng.normal(0, 0.15, a.size)
    b = b - b.mean() + a.mean()  # equal correlations on average: the null holds
    p = planner.power(a, b, 80, np.random.default_rng(5), trials=400, resamples=200)
    assert p < 0.12  # 0.05 plus Monte-Carlo and small-sample bootstrap error


def test_power_is_high_when_one_metric_is_much_better():
    a, rng = _docs(6)
    b = a - 0.15 + rng.normal(0, 0.1, a.size)
    assert planner.power(a, b, 80, np.random.default_rng(7), trials=200) > 0.95


def test_power_matches_a_brute_force_simulation_with_the_paired_test():
    a, rng = _docs(8, 30)
    b = a - 0.05 + rng.normal(0, 0.15, a.size)
    got = planner.power(a, b, 20, np.random.default_rng(9), trials=60, resamples=100)
    rng = np.random.default_rng(9)
    hits = 0
    for _ in range(60):
        study = rng.integers(0, a.size, size=(1, 20))[0]
        inner = rng.integers(0, 20, size=(100, 20))
        sa, sb = a[study], b[study]
        p = paired_bootstrap_p(
            sa[inner].mean(1), sb[inner].mean(1), sa.mean(), sb.mean(), Alternative.TWO_SIDED
        )
        hits += p < 0.05
    assert got == hits / 60


def test_documents_needed_is_the_first_size_reaching_the_target_or_none():
    a, rng = _docs(10)
    b = a - 0.08 + rng.normal(0, 0.2, a.size)
    curve = planner.documents_needed(
        a, b, [10, 40, 160, 640], np.random.default_rng(11), trials=150
    )
    reached = [n for n, p in zip(curve.sizes, curve.power, strict=True) if p >= 0.8]
    assert curve.needed == (reached[0] if reached else None)
    assert curve.needed is not None and curve.needed > 10
    same = planner.documents_needed(a, a.copy(), [10, 40], np.random.default_rng(1), trials=50)
    assert same.needed is None


def test_the_same_seed_gives_the_same_plan():
    a, rng = _docs(12)
    b = a + rng.normal(0, 0.2, a.size)
    first = planner.documents_needed(a, b, [10, 40], np.random.default_rng(3), trials=50)
    second = planner.documents_needed(a, b, [10, 40], np.random.default_rng(3), trials=50)
    assert first == second
    widths = [planner.half_widths(a, [10, 40], np.random.default_rng(3)) for _ in range(2)]
    np.testing.assert_array_equal(*widths)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        planner.half_widths([0.1, np.nan], [10], np.random.default_rng(0))
    with pytest.raises(ValueError):
        planner.power([0.1, 0.2], [0.1], 10, np.random.default_rng(0))
