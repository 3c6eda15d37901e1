"""Calibration of a judge's label distributions: the bins against scikit-learn's
``calibration_curve``, Brier against ``brier_score_loss`` (scikit-learn is a dev
dependency only), ECE by hand, several annotators as their answers written out, and the
checks on the distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from scoring.stats.calibration import calibration
from scoring.stats.label_tables import LabelSet

BINARY = LabelSet.binary(0, 1)


def _binary_case(rng: np.random.Generator, n: int, sharpen: float = 1.0):
    truth = rng.random(n)
    outcome = (rng.random(n) < truth).astype(float)
    p = np.clip(0.5 + sharpen * (truth - 0.5), 0, 1).round(3)
    return np.stack([1 - p, p], axis=1), outcome


@pytest.mark.parametrize(("strategy", "theirs"), [("width", "uniform"), ("mass", "quantile")])
def test_bins_equal_scikit_learns_calibration_curve(strategy, theirs):
    rng = np.random.default_rng(6)
    for bins in (3, 5, 10, 15):
        for _ in range(15):
            n = int(rng.integers(20, 400))
            distributions, outcome = _binary_case(rng, n, rng.uniform(0.5, 1.8))
            found = calibration(
                distributions, outcome[None, :], np.arange(n), BINARY, bins=bins, strategy=strategy
            )
            observed, predicted = calibration_curve(
                outcome, distributions[:, 1], n_bins=bins, strategy=theirs
            )
            used = [b for b in found.bins if b.n > 0]
            assert len(used) == observed.size
            np.testing.assert_allclose([b.observed for b in used], observed, rtol=0, atol=1e-12)
            np.testing.assert_allclose([b.confidence for b in used], predicted, rtol=0, atol=1e-12)
            ece = sum(b.n / n * abs(b.gap) for b in used)
            assert found.ece.value == pytest.approx(ece, abs=1e-12)
            assert found.mce.value == pytest.approx(max(abs(b.gap) for b in used), abs=1e-12)
            assert found.target == "positive" and found.n_pairs == n


def test_brier_is_the_multiclass_score_of_scikit_learn():
    rng = np.random.default_rng(8)
    distributions, outcome = _binary_case(rng, 300)
    found = calibration(distributions, outcome[None, :], np.arange(300), BINARY)
    p = distributions[:, 1]
    assert found.brier.value == pytest.approx(
        brier_score_loss(outcome, p, scale_by_half=False), abs=1e-12
    )
    assert found.brier.value == pytest.approx(2 * brier_score_loss(outcome, p), abs=1e-12)
    labels = LabelSet(("a", "b", "c", "d"))
    for _ in range(20):
        n = int(rng.integers(5, 200))
        probs = rng.dirichlet(np.ones(4) * rng.uniform(0.3, 3), size=n)
        answers = np.array([rng.choice(4, p=row) for row in probs])
        found = calibration(probs, answers[None, :].astype(float), np.arange(n), labels)
        expected = brier_score_loss(answers, probs, labels=[0, 1, 2, 3], scale_by_half=False)
        assert found.brier.value == pytest.approx(expected, abs=1e-12)
        assert found.target == "top_label"


def test_top_label_ece_by_hand():
    # four items, three labels; top labels a (0.6), b (0.5), c (0.9), a (0.4); two bins
    # [0, 0.5] and (0.5, 1]: the low bin holds items 2 and 4 (confidence 0.45 on average;
    # item 2's annotator said b, item 4's said c: observed 1/2); the high bin items 1 and 3
    # (confidence 0.75; item 1 said a, item 3 said b: observed 1/2).
    # ECE = 2/4 · |0.5 − 0.45| + 2/4 · |0.5 − 0.75| = 0.025 + 0.125 = 0.15
    distributions = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.05, 0.05, 0.9], [0.4, 0.3, 0.3]]
    answers = [[0.0, 1.0, 1.0, 2.0]]
    found = calibration(distributions, answers, [0, 0, 1, 1], LabelSet(("a", "b", "c")), bins=2)
    assert found.ece.value == pytest.approx(0.15, abs=1e-15)
    np.testing.assert_allclose(
        [(b.n, b.confidence, b.observed) for b in found.bins],
        [(2, 0.45, 0.5), (2, 0.75, 0.5)],
        rtol=0,
        atol=1e-15,
    )
    assert found.mce.value == pytest.approx(0.25, abs=1e-15)


def test_several_annotators_count_as_their_answers_written_out():
    rng = np.random.default_rng(9)
    n = 120
    probs = rng.dirichlet(np.ones(3), size=n)
    humans = rng.integers(0, 3, (3, n)).astype(float)
    humans[rng.random((3, n)) < 0.3] = np.nan
    labels = LabelSet(("x", "y", "z"))
    docs = rng.integers(0, 20, n)
    pooled = calibration(probs, humans, docs, labels, bins=8, strategy="mass")
    rows = [(i, h) for i in range(n) for h in humans[:, i] if np.isfinite(h)]
    items = np.array([i for i, _ in rows])
    written = calibration(
        probs[items],
        np.array([[h for _, h in rows]]),
        docs[items],
        labels,
        bins=8,
        strategy="mass",
    )
    for name in ("ece", "mce", "brier"):
        assert getattr(pooled, name).value == pytest.approx(getattr(written, name).value, abs=1e-12)
    for ours, theirs in zip(pooled.bins, written.bins, strict=True):
        assert (ours.low, ours.high, ours.n) == (theirs.low, theirs.high, theirs.n)
        assert ours.observed == pytest.approx(theirs.observed, abs=1e-12)
        assert ours.confidence == pytest.approx(theirs.confidence, abs=1e-12)
    assert pooled.n_pairs == written.n_pairs == len(rows)
    assert pooled.n_items == np.count_nonzero(np.isfinite(humans).any(axis=0))


def test_a_calibrated_judge_has_a_small_ece_and_an_overconfident_one_a_large_one():
    rng = np.random.default_rng(10)
    n = 4000
    calibrated, outcome = _binary_case(rng, n, 1.0)
    found = calibration(
        calibrated, outcome[None, :], np.arange(n) // 8, BINARY, rng=rng, resamples=200
    )
    certain = np.round(calibrated[:, 1])
    sharp = np.stack([1.0 - certain, certain], axis=1)
    overconfident = calibration(sharp, outcome[None, :], np.arange(n) // 8, BINARY)
    assert found.ece.value < 0.03 < 0.2 < overconfident.ece.value
    assert found.ece.low < found.ece.value < found.ece.high
    assert found.brier.low < found.brier.value < found.brier.high


def test_bad_distributions_are_named_and_nothing_to_compare_is_nan_with_a_reason():
    with pytest.raises(ValueError, match=r"distribution of item 1: \[0.5, 0.6\]"):
        calibration([[0.5, 0.5], [0.5, 0.6]], [[0.0, 1.0]], [0, 0], BINARY)
    with pytest.raises(ValueError, match="distribution of item 0"):
        calibration([[np.nan, 1.0]], [[0.0]], [0], BINARY)
    with pytest.raises(ValueError, match="items × 2"):
        calibration([[1.0, 0.0, 0.0]], [[0.0]], [0], BINARY)
    with pytest.raises(ValueError, match="binary aspect"):
        calibration([[1.0, 0.0, 0.0]], [[0.0]], [0], LabelSet(("a", "b", "c")), target="positive")
    found = calibration([[np.nan, np.nan], [0.3, 0.7]], [[1.0, np.nan]], [0, 1], BINARY)
    assert math.isnan(found.ece.value) and math.isnan(found.brier.value)
    assert found.ece.reason == "no item has both the judge's distribution and an annotator's answer"
    assert found.n_pairs == 0 and all(b.n == 0 for b in found.bins)
