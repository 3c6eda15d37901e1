"""Krippendorff's α and the annotator correlations against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoring.stats.agreement import annotator_correlations, krippendorff_alpha, versus_others

NAN = math.nan


def test_nominal_alpha_matches_the_coincidence_matrix_by_hand():
    # o11=2, o12=o21=1, o22=4; n1=3, n2=5, n=8: α = 1 - 7·2/(2·3·5) = 8/15
    data = np.array([[1, 1, 2, 2], [1, 2, 2, 2]], dtype=float)
    assert krippendorff_alpha(data, "nominal").value == pytest.approx(8 / 15)


def test_ordinal_alpha_matches_the_rank_distances_by_hand():
    # n1=2, n2=1, n3=3, n=6; δ²12=2.25, δ²23=4, δ²13=12.25;
    # observed Σ o·δ² = 2·4 = 8; expected Σ n·n·δ² = 2(2·2.25 + 6·12.25 + 3·4) = 180
    # α = 1 - 5·8/180 = 7/9 (nominal would be 1 - 5·2/22 = 6/11)
    data = np.array([[1, 2, 3], [1, 3, 3]], dtype=float)
    assert krippendorff_alpha(data, "ordinal").value == pytest.approx(7 / 9)
    assert krippendorff_alpha(data, "nominal").value == pytest.approx(6 / 11)
    # unused scale points above the data do not move the ordinal distances between 1..3
    domain = [1, 2, 3, 4, 5]
    assert krippendorff_alpha(data, "ordinal", value_domain=domain).value == pytest.approx(7 / 9)


def test_units_with_one_answer_are_left_out():
    data = np.array([[1, 2, 3, 5], [1, 3, 3, NAN], [NAN, NAN, NAN, NAN]], dtype=float)
    alpha = krippendorff_alpha(data, "ordinal")
    assert alpha.value == pytest.approx(7 / 9)
    assert (alpha.n_units, alpha.n_answers) == (3, 6)


def test_bootstrap_interval_is_reproducible_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    truth = rng.integers(1, 6, size=60)
    data = np.vstack([truth, np.clip(truth + rng.integers(-1, 2, size=60), 1, 5)]).astype(float)
    first = krippendorff_alpha(data, "ordinal", rng=np.random.default_rng(7), resamples=200)
    again = krippendorff_alpha(data, "ordinal", rng=np.random.default_rng(7), resamples=200)
    other = krippendorff_alpha(data, "ordinal", rng=np.random.default_rng(8), resamples=200)
    assert (first.low, first.high) == (again.low, again.high)
    assert (first.low, first.high) != (other.low, other.high)
    assert first.low < first.value < first.high


def test_alpha_is_undefined_without_variation_or_pairs():
    assert math.isnan(krippendorff_alpha(np.array([[3, 3], [3, 3]], float), "ordinal").value)
    assert math.isnan(krippendorff_alpha(np.array([[1, NAN], [NAN, 2]]), "nominal").value)


def test_annotator_correlations_and_each_against_the_others_by_hand():
    data = np.array([[1, 2, 3, 4], [1, 2, 3, 4], [1, 3, 2, 4]], dtype=float)
    pairs = {(i, j): (rho, n) for i, j, rho, n in annotator_correlations(data)}
    assert pairs[(0, 1)] == (pytest.approx(1.0), 4)
    assert pairs[(0, 2)] == (pytest.approx(0.8), 4)  # 1 - 6·2/(4·15)
    others = versus_others(data)
    # annotator 0 against the mean of 1 and 2 = (1, 2.5, 2.5, 4): ρ = 4.5/√(5·4.5) = 3/√10
    assert others[0] == (pytest.approx(3 / math.sqrt(10)), 4)
    assert others[2][0] == pytest.approx(0.8)  # the others agree, so their mean is 1,2,3,4
