"""The pure side of tuning: stratified splits, jury combinations, score maps and the
paired Δ by document, each against an independent computation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from scoring.stats import Coefficient, Level, correlate
from scoring.stats.jury import combine, dawid_skene_labels, majority, weighted_mean
from scoring.stats.score_mapping import fit, isotonic, mcc, platt, threshold
from scoring.stats.splits import part_sizes, stratified_split
from scoring.stats.tuned_delta import correlation_delta, mcc_delta

SHARES = {"tune": 0.4, "dev": 0.2, "test": 0.4}


def test_part_sizes_add_up_and_follow_the_shares():
    assert part_sizes(10, SHARES) == {"tune": 4, "dev": 2, "test": 4}
    assert sum(part_sizes(17, SHARES).values()) == 17
    assert part_sizes(3, {"tune": 0.5, "test": 0.5}) == {"tune": 2, "test": 1}
    with pytest.raises(ValueError):
        part_sizes(3, {"tune": 0.0})


def test_a_split_is_seeded_complete_and_stratified_by_score():
    keys = [f"d{i}" for i in range(100)]
    values = [float(i % 50) for i in range(100)]
    first = stratified_split(keys, values, SHARES, np.random.default_rng(7))
    again = stratified_split(keys, values, SHARES, np.random.default_rng(7))
    other = stratified_split(keys, values, SHARES, np.random.default_rng(8))
    assert first == again and first != other
    assert Counter(first.values()) == {"tune": 40, "dev": 20, "test": 40}
    # every fifth of the score range holds its share of each part (within one stratum)
    for low in range(0, 50, 10):
        band = Counter(first[k] for k, v in zip(keys, values, strict=True) if low <= v < low + 10)
        assert abs(band["test"] - 8) <= 2 and abs(band["dev"] - 4) <= 2


def test_documents_without_a_score_are_split_too():
    keys = ["a", "b", "c", "d"]
    parts = stratified_split(
        keys,
        [1.0, float("nan"), 2.0, float("nan")],
        {"tune": 1, "test": 1},
        np.random.default_rng(0),
    )
    assert sorted(parts) == keys and Counter(parts.values()) == {"tune": 2, "test": 2}


SCORES = np.array(
    [[1.0, 2.0, 4.0], [3.0, 3.0, np.nan], [np.nan] * 3, [5.0, 1.0, 1.0], [2.4, 2.6, 4.4]]
)


def test_jury_mean_median_majority_weighted_equal_a_direct_computation():
    with np.errstate(all="ignore"):
        mean = [np.mean([1, 2, 4]), 3.0, np.nan, np.mean([5, 1, 1]), np.mean([2.4, 2.6, 4.4])]
    assert np.allclose(combine(SCORES, "mean"), mean, equal_nan=True)
    assert np.allclose(combine(SCORES, "median"), [2, 3, np.nan, 1, 2.6], equal_nan=True)
    # rounded: (1,2,4) all differ → lowest; (2,3,4) → lowest; (5,1,1) → 1
    assert np.allclose(majority(SCORES), [1, 3, np.nan, 1, 2], equal_nan=True)
    w = [0.5, 0.0, 1.5]
    expected = [(0.5 * 1 + 1.5 * 4) / 2, 3.0, np.nan, (0.5 * 5 + 1.5 * 1) / 2, (1.2 + 6.6) / 2]
    assert np.allclose(weighted_mean(SCORES, w), expected, equal_nan=True)
    with pytest.raises(ValueError, match="weight"):
        combine(SCORES, "weighted")


def test_jury_dawid_skene_agrees_with_unanimity_and_outvotes_a_contrarian():
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 4, size=60).astype(float)
    good = np.column_stack([truth, truth, np.where(rng.random(60) < 0.8, truth, 1.0)])
    contrarian = 4.0 - truth  # always wrong, in a consistent way
    labels, confidence, expected = dawid_skene_labels(np.column_stack([good, contrarian]))
    assert (labels == truth).mean() > 0.95
    assert ((confidence > 0) & (confidence <= 1)).all() and np.isfinite(expected).all()


def test_isotonic_equals_scikit_learn_and_platt_equals_logistic_regression():
    import sklearn
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    s = np.round(rng.normal(size=80), 1)
    y = np.clip(np.round(s + rng.normal(0, 0.7, 80) + 3), 1, 5)
    probe = np.linspace(-3, 3, 41)
    reference = IsotonicRegression(out_of_bounds="clip").fit(s, y).predict(probe)
    assert np.allclose(isotonic(s, y).apply(probe), reference)
    backwards = IsotonicRegression(increasing="auto", out_of_bounds="clip").fit(-s, y)
    turned = isotonic(-s, y)
    assert turned.params["increasing"] is False
    assert np.allclose(turned.apply(probe), backwards.predict(probe))
    positive = (y >= 3).astype(float)
    model = LogisticRegression(C=1e9, tol=1e-10, max_iter=10000).fit(s[:, None], positive)
    fitted = platt(s, positive)
    assert np.allclose(
        fitted.probability(probe), model.predict_proba(probe[:, None])[:, 1], atol=1e-5
    )
    assert sklearn.__version__


def test_threshold_picks_the_cut_with_the_best_mcc():
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    y = np.array([0, 0, 1, 0, 1, 1.0])
    best = threshold(s, y)
    cuts = [0.1, 0.15, 0.25, 0.45, 0.65, 0.8]
    assert best.params["t"] == max(cuts, key=lambda t: (mcc(s >= t, y), -t))
    assert fit("threshold", s, y).apply([0.0, 1.0, np.nan]).tolist()[:2] == [0.0, 1.0]


def test_mcc_delta_is_zero_for_the_same_judge_and_its_point_estimate_is_mcc():
    rng = np.random.default_rng(2)
    docs = np.repeat(np.arange(30), 4)
    truth = (rng.random(120) < 0.5).astype(float)
    start = np.where(rng.random(120) < 0.6, truth, 1 - truth)
    tuned = np.where(rng.random(120) < 0.9, truth, 1 - truth)
    same = mcc_delta(np.random.default_rng(0), docs, start, start, truth, resamples=200)
    assert same.delta == 0 and same.low == same.high == 0
    d = mcc_delta(np.random.default_rng(0), docs, start, tuned, truth, resamples=500)
    assert d.start == pytest.approx(mcc(start, truth)) and d.tuned == pytest.approx(
        mcc(tuned, truth)
    )
    assert d.low < d.delta < d.high and d.low > 0 and d.n_documents == 30


def test_correlation_delta_point_is_the_difference_of_the_correlations():
    rng = np.random.default_rng(4)
    docs = np.repeat(np.arange(25), 4)
    human = rng.normal(size=100)
    start = human + rng.normal(0, 2.0, 100)
    tuned = human + rng.normal(0, 0.3, 100)
    d = correlation_delta(
        np.random.default_rng(0), docs, start, tuned, human, level=Level.DATASET, resamples=400
    )
    rho = [stats.spearmanr(x, human)[0] for x in (start, tuned)]
    assert d.delta == pytest.approx(rho[1] - rho[0])
    assert d.low < d.delta < d.high and d.low > 0
    sample = correlation_delta(np.random.default_rng(0), docs, start, tuned, human, resamples=100)
    expected = correlate(
        tuned, human, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs
    ).value
    assert sample.tuned == pytest.approx(expected)
