"""Prevalence of a binary aspect's positive label: by hand, the Rogan–Gladen correction
on simulated judges of known sensitivity and specificity, PPI++ equal to
``scoring.stats.ppi.ppi_mean``, and the undefined cases with their reasons."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoring.stats.label_tables import LabelSet
from scoring.stats.ppi import ppi_mean
from scoring.stats.prevalence import prevalence

LABELS = LabelSet.binary("fail", "pass")


def test_prevalence_by_hand():
    # six items; humans on the first four (item 2 has two annotators who disagree)
    #   judge:  pass pass fail fail pass fail
    #   humans: pass ½    fail pass  —    —
    judge = LABELS.codes(["pass", "pass", "fail", "fail", "pass", "fail"])
    humans = LABELS.codes(
        [["pass", "pass", "fail", "pass", None, None], [None, "fail", None, None, None, None]]
    )
    found = prevalence(judge, humans, [0, 0, 1, 1, 2, 2], LABELS)
    assert found.human.value == pytest.approx((1 + 0.5 + 0 + 1) / 4, abs=1e-15)
    assert found.judge.value == pytest.approx(3 / 6, abs=1e-15)
    # Se = Σ J·y / Σ y = (1 + ½) / 2.5 = 0.6; Sp = Σ (1−J)(1−y) / Σ (1−y) = (1) / 1.5
    assert found.sensitivity.value == pytest.approx(0.6, abs=1e-15)
    assert found.specificity.value == pytest.approx(2 / 3, abs=1e-15)
    # Rogan–Gladen: (0.5 + 2/3 − 1) / (0.6 + 2/3 − 1) = (1/6) / (4/15) = 0.625
    assert found.corrected.value == pytest.approx(0.625, abs=1e-15)
    assert (found.n_judged, found.n_labelled, found.n_both, found.n_documents) == (6, 4, 4, 3)


@pytest.mark.parametrize("tune", [True, False])
@pytest.mark.parametrize("with_probability", [True, False])
def test_ppi_equals_ppi_mean_on_the_same_predictions(tune, with_probability):
    rng = np.random.default_rng(17)
    for _ in range(30):
        n = int(rng.integers(5, 300))
        truth = rng.random(n) < rng.uniform(0.05, 0.6)
        judge = np.where(rng.random(n) < 0.85, truth, ~truth).astype(float)
        humans = np.where(rng.random((2, n)) < 0.9, truth, ~truth).astype(float)
        humans[:, rng.random(n) < rng.uniform(0.2, 0.9)] = np.nan
        humans[1, rng.random(n) < 0.5] = np.nan
        probability = None
        if with_probability:
            probability = np.clip(0.2 + 0.6 * judge + rng.normal(0, 0.1, n), 0, 1)
        found = prevalence(
            judge, humans, rng.integers(0, 10, n), LABELS, probability=probability, tune=tune
        )
        answered = np.isfinite(humans).sum(axis=0)
        share = np.where(answered > 0, np.nansum(humans, axis=0) / np.maximum(answered, 1), np.nan)
        reference = ppi_mean(judge if probability is None else probability, share, tune=tune)
        np.testing.assert_array_equal(found.ppi_result.ppi.value, reference.ppi.value)
        expected = float(reference.ppi.value)
        if math.isnan(expected):
            assert math.isnan(found.ppi.value) and "PPI needs 2 items" in found.ppi.reason
        else:
            assert abs(found.ppi.value - expected) <= 1e-12


def test_rogan_gladen_undoes_a_judges_known_errors():
    rng = np.random.default_rng(4)
    n, truth_rate, se, sp = 40_000, 0.2, 0.7, 0.9
    truth = rng.random(n) < truth_rate
    judge = np.where(truth, rng.random(n) < se, rng.random(n) >= sp).astype(float)
    humans = truth.astype(float)[None, :].copy()
    humans[:, 4000:] = np.nan  # a tenth labelled
    found = prevalence(
        judge, humans, np.arange(n) // 20, LABELS, rng=np.random.default_rng(1), resamples=200
    )
    # the judge's raw share is biased: 0.2·0.7 + 0.8·0.1 = 0.22
    assert found.judge.value == pytest.approx(0.22, abs=0.01)
    assert found.sensitivity.value == pytest.approx(se, abs=0.05)
    assert found.specificity.value == pytest.approx(sp, abs=0.02)
    assert abs(found.corrected.value - truth.mean()) < abs(found.judge.value - truth.mean())
    for estimate in (found.corrected, found.ppi, found.human):
        assert estimate.low < truth.mean() < estimate.high
    # PPI narrows the human-only interval: the judge carries information
    assert found.ppi.high - found.ppi.low < found.human.high - found.human.low


def test_undefined_prevalences_say_why():
    # a judge that says the opposite half the time: Se + Sp = 1
    judge = LABELS.codes(["pass", "fail", "pass", "fail"])
    humans = LABELS.codes([["pass", "pass", "fail", "fail"]])
    found = prevalence(judge, humans, [0, 0, 1, 1], LABELS)
    assert math.isnan(found.corrected.value)
    assert "no better than chance" in found.corrected.reason
    assert found.judge.value == 0.5 and found.corrected.reason.count("≤ 1") == 1
    # no human answer at all
    none = prevalence(judge, np.full((1, 4), np.nan), [0, 0, 1, 1], LABELS)
    assert none.human.reason == "no item has a human answer"
    assert none.sensitivity.reason.startswith("no item both answered has a human answer 'pass'")
    assert math.isnan(none.ppi.value) and none.judge.value == 0.5
    with pytest.raises(ValueError, match="binary aspect"):
        prevalence(judge, humans, [0, 0, 1, 1], LabelSet(("a", "b")))
