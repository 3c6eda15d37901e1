"""Pairwise statistics: the sorting paths equal listing every pair, tie calibration is
the maximum of the curve it reports, and SPA follows its definition on ragged data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from scoring.stats import Average, Coefficient, Level, Options, calibrate_ties, correlate
from scoring.stats.pairwise import (
    RightPairs,
    like_counts,
    pooled_like_counts,
    pooled_pair_counts,
    right_pairs,
)
from scoring.stats.ranking import Groups, count_greater_before
from scoring.stats.spa import cell_means, pairwise_p_values, resampled_spa, sign_flips


def brute_counts(x, y, eps):
    """(C, D, T_human only, T_metric only, T_both) by listing the pairs."""
    con = dis = th = tm = tb = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = x[j] - x[i], y[j] - y[i]
        tie_m, tie_h = abs(dx) <= eps, dy == 0
        if tie_m and tie_h:
            tb += 1
        elif tie_h:
            th += 1
        elif tie_m:
            tm += 1
        elif (dx > 0) == (dy > 0):
            con += 1
        else:
            dis += 1
    return (con, dis, th, tm, tb)


def test_count_greater_before_equals_counting_each_prefix():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 7, size=300)
    ends = rng.integers(0, 301, size=500)
    limits = rng.integers(-1, 8, size=500)
    got = count_greater_before(values, ends, limits)
    expected = [np.sum(values[:e] > v) for e, v in zip(ends, limits, strict=True)]
    np.testing.assert_array_equal(got, expected)


def test_pooled_counts_by_sorting_equal_listing_the_pairs_with_ties_and_rounded_epsilons():
    rng = np.random.default_rng(1)
    y = rng.integers(1, 6, size=400).astype(float)
    x = np.round(y * 0.1 + rng.normal(0, 0.1, size=y.size), 1)  # decimals: rounded differences
    # ε equal to some pairs' rounded differences: those pairs must count as ties.
    for eps in (0.0, float(x[7] - x[3]), 0.1, float(abs(x[11] - x[2])), 0.35):
        assert pooled_pair_counts(x, y, eps) == brute_counts(x, y, eps), eps
    t = 2.0
    brute_like = [
        (abs(y[j] - y[i]) >= t, (y[j] - y[i]) * (x[j] - x[i]) > 0)
        for i, j in itertools.combinations(range(y.size), 2)
    ]
    counted = sum(c for c, _ in brute_like)
    concordant = sum(c and a for c, a in brute_like)
    assert pooled_like_counts(x, y, t) == (counted, concordant)


def test_row_counts_equal_the_pooled_counts_and_wide_rows_sort():
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=(3, 300)), 1)
    y = rng.integers(1, 4, size=(3, 300)).astype(float)
    x[0, :10] = np.nan  # missing scores take no part
    for eps in (0.0, 0.2):
        wide = right_pairs(x, y, eps)  # 300 > PAIRWISE_MAX: sorting per row
        narrow = right_pairs(x[:, :200], y[:, :200], eps)  # listing pairs
        for r in range(3):
            keep = ~np.isnan(x[r])
            con, dis, human, metric, both = pooled_pair_counts(x[r, keep], y[r, keep], eps)
            assert (wide.right[r], wide.pairs[r]) == (con + both, con + dis + human + metric + both)
            keep = ~np.isnan(x[r, :200])
            con, dis, human, metric, both = brute_counts(x[r, :200][keep], y[r, :200][keep], eps)
            assert (narrow.right[r], narrow.pairs[r]) == (
                con + both,
                keep.sum() * (keep.sum() - 1) / 2,
            )
    like = like_counts(x, y, 1.0)
    keep = ~np.isnan(x[0])
    assert (like.counted[0], like.concordant[0]) == pooled_like_counts(x[0, keep], y[0, keep], 1.0)


def test_acc23_and_tau23_are_tied_by_tau23_equal_two_acc23_minus_one():
    # C = 5, D = 2, tied in humans only 1, in the metric only 3, in both 4.
    counts = RightPairs(np.array([5.0 + 4.0]), np.array([15.0]))
    assert counts.acc23()[0] == pytest.approx(9 / 15)
    assert counts.tau23()[0] == pytest.approx((5 + 4 - 2 - 1 - 3) / 15)


def _ragged(seed, n_docs=40):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=n_docs)
    docs = rng.permutation(np.repeat(np.arange(n_docs), sizes))
    human = rng.integers(1, 5, size=docs.size).astype(float)
    metric = np.round(human + rng.normal(0, 1.0, size=docs.size), 1)
    human[rng.random(docs.size) < 0.1] = np.nan
    return docs, metric, human


@pytest.mark.parametrize("average", list(Average))
def test_tie_calibration_reaches_the_maximum_of_the_statistic_over_every_threshold(average):
    docs, metric, human = _ragged(3)
    result = calibrate_ties(
        metric, human, level=Level.SAMPLE, docs=docs, average=average, curve=True
    )
    settings = {
        "level": Level.SAMPLE,
        "coefficient": Coefficient.ACC23,
        "docs": docs,
        "average": average,
    }
    # The curve is the statistic itself at each candidate...
    for k in range(0, result.thresholds.size, 7):
        at = correlate(metric, human, options=Options(epsilon=result.thresholds[k]), **settings)
        assert at.value == pytest.approx(result.values[k], abs=1e-12)
    # ...and no threshold in between does better.
    grid = np.linspace(0, 4, 81)
    best = max(correlate(metric, human, options=Options(epsilon=e), **settings).value for e in grid)
    assert result.value >= best - 1e-12
    assert result.epsilon == result.thresholds[np.argmax(result.values >= result.value - 1e-12)]
    tau = calibrate_ties(
        metric,
        human,
        level=Level.SAMPLE,
        docs=docs,
        average=average,
        coefficient=Coefficient.KENDALL_23,
    )
    assert tau.epsilon == result.epsilon and tau.value == pytest.approx(2 * result.value - 1)


@pytest.mark.parametrize("average", list(Average))
@pytest.mark.parametrize("discrete", [False, True])
def test_bounded_search_of_many_pairs_finds_the_full_curves_maximum(average, discrete):
    rng = np.random.default_rng(8)
    sizes = rng.integers(20, 60, size=150)  # ~120,000 pairs: past the sort-everything limit
    docs = np.repeat(np.arange(sizes.size), sizes)
    human = rng.integers(1, 4, size=docs.size).astype(float)  # a third of the pairs tie
    # Metric differences within a human tie are noise: the best ε is well above 0.
    metric = human + rng.normal(0, 0.3, size=docs.size)
    if discrete:
        metric = np.round(2 * metric) / 2
    kwargs = {"level": Level.SAMPLE, "docs": docs, "average": average}
    full = calibrate_ties(metric, human, curve=True, **kwargs)
    fast = calibrate_ties(metric, human, **kwargs)
    assert fast.thresholds is None and full.thresholds.size > (5 if discrete else 1000)
    assert (fast.epsilon, fast.value) == (full.epsilon, pytest.approx(full.value, abs=1e-12))
    assert full.epsilon > 0.2 and full.value > full.values[0] + 0.04


def test_tie_calibration_of_a_group_wider_than_the_pair_blocks_lists_its_pairs_in_chunks():
    rng = np.random.default_rng(4)
    docs = np.repeat([0, 1], [300, 5])
    human = rng.integers(1, 4, size=docs.size).astype(float)
    metric = np.round(human + rng.normal(0, 1, size=docs.size), 1)
    result = calibrate_ties(metric, human, level=Level.SAMPLE, docs=docs)
    assert not result.sampled and result.n_pairs == 300 * 299 // 2 + 10
    at = correlate(
        metric,
        human,
        level=Level.SAMPLE,
        coefficient=Coefficient.ACC23,
        docs=docs,
        options=Options(epsilon=result.epsilon),
    )
    assert at.value == pytest.approx(result.value, abs=1e-12)


def test_pooled_tie_calibration_beyond_the_pair_limit_searches_a_seeded_sample():
    rng = np.random.default_rng(5)
    human = rng.integers(1, 6, size=1500).astype(float)
    metric = human + rng.normal(0, 1.0, size=human.size)
    exact = calibrate_ties(metric, human, level=Level.DATASET)
    sampled = calibrate_ties(
        metric, human, level=Level.DATASET, max_pairs=50_000, rng=np.random.default_rng(0)
    )
    assert not exact.sampled and sampled.sampled and sampled.n_searched <= 50_000
    assert sampled.n_pairs == exact.n_pairs == 1500 * 1499 // 2
    value_at = correlate(
        metric,
        human,
        level=Level.DATASET,
        coefficient=Coefficient.ACC23,
        options=Options(epsilon=sampled.epsilon),
    ).value
    # The sampled ε is nearly as good as the best one on all pairs.
    assert exact.value - 0.005 <= value_at <= exact.value + 1e-12
    assert sampled.value == pytest.approx(value_at, abs=0.01)  # its estimate of the value


# --- SPA on ragged data -------------------------------------------------------------------


def _spa_data(seed, n_docs=15, n_sys=6, missing=0.25):
    rng = np.random.default_rng(seed)
    docs = np.repeat(np.arange(n_docs), n_sys)
    systems = np.tile(np.arange(n_sys), n_docs)
    human = rng.integers(1, 6, size=docs.size) + 0.3 * systems
    metric = np.round(human + rng.normal(0, 1, size=docs.size), 2)
    keep = rng.random(docs.size) > missing
    return docs[keep], systems[keep], metric[keep], human[keep].astype(float)


def test_spa_p_values_on_ragged_data_follow_the_definition_pair_by_pair():
    docs, systems, metric, human = _spa_data(6)
    human[::13] = np.nan  # a missing judgment drops that output from both sides
    flips = sign_flips(np.random.default_rng(4), 500, 15)
    d, s = Groups.from_codes(docs, 15), Groups.from_codes(systems, 6)
    valid = np.isfinite(metric) & np.isfinite(human)
    got = pairwise_p_values(cell_means(human, d, s, valid), flips)
    for i, j in itertools.combinations(range(6), 2):
        both = [
            k
            for k in range(15)
            if any((docs == k) & (systems == i) & valid)
            and any((docs == k) & (systems == j) & valid)
        ]
        delta = np.zeros(15)
        for k in both:
            delta[k] = (
                human[(docs == k) & (systems == i) & valid].mean()
                - human[(docs == k) & (systems == j) & valid].mean()
            )
        expected = np.mean(flips @ delta >= delta.sum() - 1e-9)
        assert got[i, j] == pytest.approx(expected)
    assert np.isnan(got[1, 0])  # only i < j


def test_spa_on_resampled_systems_equals_spa_of_the_materialised_resample():
    docs, systems, metric, human = _spa_data(7)
    options = Options(permutations=300, seed=1)
    result = correlate(
        metric,
        human,
        level=Level.SYSTEM,
        coefficient=Coefficient.SPA,
        docs=docs,
        systems=systems,
        options=options,
    )
    rng = np.random.default_rng(2)
    counts = np.zeros((5, 6))
    for b in range(5):
        # Copies in their systems' order: a pair's p-value is one-sided (i before j), and
        # with ties in the permuted sums, 1 - p(i > j) is not quite p(j > i).
        draw = np.sort(rng.integers(0, 6, size=6))
        counts[b] = np.bincount(draw, minlength=6)
        # Each drawn copy is a system of its own; the documents (so the flips) stay.
        index = np.concatenate([np.flatnonzero(systems == s) for s in draw])
        copies = np.concatenate([np.full((systems == s).sum(), c) for c, s in enumerate(draw)])
        again = correlate(
            metric[index],
            human[index],
            level=Level.SYSTEM,
            coefficient=Coefficient.SPA,
            docs=Groups.from_codes(docs[index], 15),
            systems=copies,
            options=options,
        )
        assert resampled_spa(result.spa, counts[b : b + 1])[0] == pytest.approx(again.value)
    assert 0.0 <= result.value <= 1.0


@pytest.mark.parametrize("average", [Average.MACRO, Average.MICRO])
@pytest.mark.parametrize("coefficient", [Coefficient.ACC23, Coefficient.KENDALL_23])
@pytest.mark.parametrize(("n_docs", "width"), [(30, 7), (300, 40)])  # curve; bounded search
def test_a_calibration_s_counts_give_correlate_s_value_without_recounting(
    n_docs, width, coefficient, average
):
    rng = np.random.default_rng(n_docs + width)
    docs = np.repeat(np.arange(n_docs), width)
    keep = rng.random(docs.size) < 0.9  # ragged documents
    docs = docs[keep]
    human = rng.integers(1, 5, docs.size).astype(float)
    metric = np.round(human + rng.normal(0, 1.0, docs.size), 1)  # ties on both sides
    metric[rng.random(docs.size) < 0.05] = np.nan
    human[rng.random(docs.size) < 0.05] = np.nan
    calibration = calibrate_ties(
        metric, human, level=Level.SAMPLE, coefficient=coefficient, docs=docs, average=average
    )
    assert calibration.group_right is not None and not calibration.sampled
    assert (calibration.thresholds is None) == (n_docs > 100)  # the search path taken
    options = Options(epsilon=calibration.epsilon)
    args = {
        "level": Level.SAMPLE,
        "coefficient": coefficient,
        "docs": docs,
        "average": average,
        "options": options,
    }
    recounted = correlate(metric, human, **args)
    reused = correlate(metric, human, calibration=calibration, **args)
    assert reused.value == recounted.value
    np.testing.assert_array_equal(reused.per_group, recounted.per_group)
    np.testing.assert_array_equal(reused.weights, recounted.weights)
    assert (reused.n_outputs, reused.n_documents, reused.n_skipped) == (
        recounted.n_outputs,
        recounted.n_documents,
        recounted.n_skipped,
    )
    # the calibrated value is the statistic at ε, as correlate computes it
    assert reused.value == pytest.approx(calibration.value, abs=1e-12)
    # a calibration at another ε is not reused
    other = correlate(
        metric,
        human,
        calibration=calibration,
        **{**args, "options": Options(epsilon=calibration.epsilon + 0.05)},
    )
    alone = correlate(
        metric, human, **{**args, "options": Options(epsilon=calibration.epsilon + 0.05)}
    )
    assert other.value == alone.value


def test_a_sampled_calibration_has_no_counts_to_reuse():
    rng = np.random.default_rng(0)
    docs = np.repeat(np.arange(40), 30)
    human = rng.integers(1, 5, docs.size).astype(float)
    metric = human + rng.normal(size=docs.size)
    calibration = calibrate_ties(metric, human, level=Level.SAMPLE, docs=docs, max_pairs=1000)
    assert calibration.sampled and calibration.group_right is None
