"""Prediction-powered inference: coverage over many seeded replications, narrower
intervals than the human-only mean when the metric correlates, cross-fitted calibration."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats.ppi import (
    by_system,
    calibrate,
    document_folds,
    fit_linear,
    ppi_mean,
    system_differences,
    system_means,
)

TRUTH = 3.0


def replications(
    seed: int, n_reps: int = 2000, n_total: int = 400, n_judged: int = 40, signal: float = 0.8
):  # type: ignore[no-untyped-def]
    """Human scores around TRUTH, a metric on its own scale that follows them with
    ``signal`` (0: pure noise), and a random ``n_judged`` of each replication judged."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(0, 1, (n_reps, n_total))
    human = TRUTH + 0.8 * latent + rng.normal(0, 0.5, latent.shape)
    metric = 0.3 + 0.05 * (signal * latent + (1 - signal) * rng.normal(0, 1, latent.shape))
    metric += rng.normal(0, 0.02, latent.shape)
    order = np.argsort(rng.random(latent.shape), axis=1)
    judged = np.zeros(latent.shape, dtype=bool)
    np.put_along_axis(judged, order[:, :n_judged], True, axis=1)
    folds = np.arange(n_total) % 5  # each output its own document
    return metric, np.where(judged, human, np.nan), folds


def coverage(low: np.ndarray, high: np.ndarray) -> float:
    return float(np.mean((low <= TRUTH) & (high >= TRUTH)))


@pytest.mark.parametrize("tune", [True, False], ids=["ppi++", "ppi"])
def test_intervals_cover_the_truth_at_about_the_nominal_rate(tune):
    metric, labels, folds = replications(0)
    result = ppi_mean(calibrate(metric, labels, folds), labels, tune=tune)
    assert 0.90 <= coverage(result.ppi.low, result.ppi.high) <= 0.99
    assert 0.90 <= coverage(result.human.low, result.human.high) <= 0.99


def test_a_correlated_metric_narrows_the_interval_and_a_useless_one_costs_little():
    metric, labels, folds = replications(1)
    good = ppi_mean(calibrate(metric, labels, folds), labels)
    ratio = np.median(good.ppi.width / good.human.width)
    assert ratio < 0.8
    assert np.median(good.variance_ratio) > 1.5 and np.median(good.saved) > 0.3
    metric, labels, folds = replications(1, signal=0.0)
    noise = ppi_mean(calibrate(metric, labels, folds), labels)
    assert 0.9 <= coverage(noise.ppi.low, noise.ppi.high) <= 0.99
    assert np.median(noise.ppi.width / noise.human.width) < 1.05


def test_ppi_is_the_textbook_formula_at_lambda_one():
    rng = np.random.default_rng(2)
    f = rng.normal(3, 1, 50)
    y = np.where(np.arange(50) < 12, f + rng.normal(0.3, 0.5, 50), np.nan)
    result = ppi_mean(f, y, tune=False)
    judged = np.isfinite(y)
    assert result.ppi.value == pytest.approx(f.mean() - np.mean(f[judged] - y[judged]))
    # the nested design's variance: Var(f)/N + Var(f - y)/n less 2 Cov(f, f - y)/N
    var = (
        np.var(f[judged], ddof=1) / 50
        + np.var(f[judged] - y[judged], ddof=1) / 12
        - 2 * np.cov(f[judged], f[judged] - y[judged])[0, 1] / 50
    )
    assert result.ppi.se == pytest.approx(np.sqrt(var))
    assert result.human.value == pytest.approx(y[judged].mean())
    assert result.metric.value == pytest.approx(f.mean())
    assert (int(result.n_labelled), int(result.n_total), float(result.lam)) == (12, 50, 1.0)


def test_judging_everything_leaves_the_human_mean_and_too_few_judgments_leave_nothing():
    y = np.array([1.0, 2.0, 4.0, 5.0])
    everything = ppi_mean(y * 10, y)
    assert everything.ppi.value == pytest.approx(3.0)
    assert everything.ppi.se == pytest.approx(everything.human.se)
    one = ppi_mean([1.0, 2.0, 3.0], [2.0, np.nan, np.nan])
    assert np.isnan(one.ppi.value) and np.isnan(one.human.value) and int(one.n_labelled) == 1
    with pytest.raises(ValueError, match="aligned"):
        ppi_mean([1.0, 2.0], [1.0])


def test_calibration_is_cross_fitted_so_an_outputs_own_label_never_shapes_its_prediction():
    metric = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    labels = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    folds = np.array([0, 1, 0, 1, 0, 1])
    predicted = calibrate(metric, labels, folds)
    np.testing.assert_allclose(predicted, labels)  # an exact line is found from either half
    changed = labels.copy()
    changed[0] = 100.0  # a fold-0 label moves only fold 1's predictions
    moved = calibrate(metric, changed, folds)
    np.testing.assert_allclose(moved[folds == 0], predicted[folds == 0])
    assert not np.allclose(moved[folds == 1], predicted[folds == 1])
    line = fit_linear(metric, labels)
    assert (line.intercept, line.slope, line.n) == (
        pytest.approx(0.0, abs=1e-12),
        pytest.approx(10.0),
        6,
    )


def test_document_folds_keep_a_documents_outputs_together_and_follow_the_seed():
    docs = np.repeat(np.arange(20), 3)
    folds = document_folds(docs, 5, np.random.default_rng(0))
    assert all(np.unique(folds[docs == d]).size == 1 for d in range(20))
    assert np.bincount(folds).tolist() == [12] * 5
    assert np.array_equal(folds, document_folds(docs, 5, np.random.default_rng(0)))


def test_systems_and_their_differences_are_estimated_per_document():
    rng = np.random.default_rng(3)
    n_docs, quality = 300, np.array([2.0, 3.0, 3.5])
    docs = np.tile(np.arange(n_docs), 3)
    systems = np.repeat(np.arange(3), n_docs)
    difficulty = rng.normal(0, 1, n_docs)  # shared by the systems of a document
    human = quality[systems] + difficulty[docs] + rng.normal(0, 0.3, docs.size)
    metric = 0.1 * human + rng.normal(0, 0.02, docs.size)
    judged = np.isin(docs, rng.choice(n_docs, 60, replace=False))
    labels = np.where(judged, human, np.nan)
    f = calibrate(metric, labels, document_folds(docs, 5, rng))
    means = system_means(f, labels, systems, docs)
    assert np.all(
        np.abs(means.ppi.value - by_system(human, systems, docs).mean(axis=1)) < 2 * means.ppi.se
    )
    diffs = system_differences(f, labels, systems, docs, reference=0)
    assert diffs.ppi.value[0] == 0 and diffs.ppi.se[0] == 0
    np.testing.assert_allclose(diffs.ppi.value[1:], [1.0, 1.5], atol=0.15)
    # pairing by document removes the shared difficulty: far narrower than the means
    assert np.all(diffs.human.se[1:] < means.human.se[1:] / 2)
    assert np.all(diffs.ppi.se[1:] <= diffs.human.se[1:])
    with pytest.raises(ValueError, match="two outputs"):
        by_system([1.0, 2.0], [0, 0], [0, 0])
