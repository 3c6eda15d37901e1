"""Bradley–Terry strengths and win rates on hand-computed toys, against a direct
maximisation of the likelihood with scipy, and their intervals over documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from scoring.stats.bradley_terry import (
    bradley_terry,
    log_likelihood,
    rank_systems,
    strongly_connected,
    win_rates,
    wins_by_document,
)
from scoring.stats.ranking import Groups
from scoring.stats.resampling import Resamples, Unit


def test_two_systems_have_the_log_odds_of_their_wins_split_around_zero():
    theta = bradley_terry([[0.0, 3.0], [1.0, 0.0]])
    assert theta == pytest.approx([math.log(3) / 2, -math.log(3) / 2], abs=1e-9)


def test_a_chain_of_two_to_one_wins_steps_by_log_two():
    # 0 beats 1 two times in three, 1 beats 2 two times in three, 0 and 2 never meet:
    # the likelihood separates, θ0 − θ1 = θ1 − θ2 = log 2, centred at 0
    wins = [[0, 2, 0], [1, 0, 2], [0, 1, 0]]
    assert bradley_terry(wins) == pytest.approx([math.log(2), 0.0, -math.log(2)], abs=1e-8)


def test_a_cycle_of_equal_wins_gives_equal_strengths():
    wins = [[0, 2, 1], [1, 0, 2], [2, 1, 0]]
    assert bradley_terry(wins) == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)


def test_the_fit_maximises_the_likelihood_as_scipy_finds_it():
    rng = np.random.default_rng(3)
    wins = rng.uniform(0.1, 4.0, size=(5, 5)) * (1 - np.eye(5))
    theta = bradley_terry(wins)

    def negative(free: np.ndarray) -> float:
        return -log_likelihood(np.append(free, -free.sum()), wins)

    found = optimize.minimize(negative, np.zeros(4), method="BFGS", options={"gtol": 1e-10})
    direct = np.append(found.x, -found.x.sum())
    assert theta == pytest.approx(direct, abs=1e-5)
    assert theta.sum() == pytest.approx(0.0, abs=1e-12)
    assert log_likelihood(theta, wins) >= log_likelihood(direct, wins) - 1e-9


def test_a_system_that_never_loses_has_no_finite_strength():
    wins = np.array([[0, 2, 1], [0, 0, 1], [0, 1, 0]], dtype=float)
    assert strongly_connected(wins) == np.bool_(False)
    assert np.isnan(bradley_terry(wins)).all()
    stacked = bradley_terry(np.stack([wins, wins + wins.T]))  # the second is symmetric
    assert np.isnan(stacked[0]).all() and stacked[1] == pytest.approx([0, 0, 0], abs=1e-9)


def test_wins_count_ties_as_half_a_win_each_way_per_document():
    # doc x: 0 vs 1 scored 0.8, 1 vs 2 scored 0.5 (p(first)=0.2, p(tie)=0.6); doc y: 2 vs 0 at 1.0
    groups, wins = wins_by_document(["x", "x", "y"], [0, 1, 2], [1, 2, 0], [0.8, 0.5, 1.0], 3)
    assert groups.keys.tolist() == ["x", "y"]
    assert np.allclose(wins[0], [[0, 0.8, 0], [0.2, 0, 0.5], [0, 0.5, 0]])
    assert np.allclose(wins[1], [[0, 0, 0], [0, 0, 0], [1.0, 0, 0]])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        wins_by_document(["x"], [0], [1], [1.2], 2)


def test_win_rates_are_each_systems_mean_score_over_its_pairs():
    rates, counts = win_rates([0, 0, 1], [1, 2, 2], [0.75, 1.0, 0.5], 4)
    # 0: (0.75 + 1.0) / 2; 1: (0.25 + 0.5) / 2; 2: (0.0 + 0.5) / 2; 3: in no pair
    assert rates[:3] == pytest.approx([0.875, 0.375, 0.25]) and math.isnan(rates[3])
    assert counts.tolist() == [2, 2, 2, 0]


def test_intervals_are_the_percentiles_of_the_fits_of_the_resampled_documents():
    docs = ["a", "a", "b", "b"]
    first, second, score = [0, 1, 0, 1], [1, 2, 1, 2], [0.9, 0.6, 0.6, 0.7]
    groups = Groups.from_keys(docs)
    draws = np.array([[0, 0], [1, 1], [0, 1], [1, 0]], dtype=np.intp)
    plan = Resamples(Unit.DOCUMENTS, groups, None, draws, None)
    result = rank_systems(docs, first, second, score, systems=("s0", "s1", "s2"), plan=plan)
    _, per_doc = wins_by_document(docs, first, second, score, 3)
    # BT is unchanged by scaling the wins: a document drawn twice fits as drawn once
    fits = np.stack(
        [bradley_terry(per_doc[0]), bradley_terry(per_doc[1])] + [bradley_terry(per_doc.sum(0))] * 2
    )
    assert result.strength == pytest.approx(bradley_terry(per_doc.sum(0)))
    assert result.low == pytest.approx(np.quantile(fits, 0.025, axis=0))
    assert result.high == pytest.approx(np.quantile(fits, 0.975, axis=0))
    assert result.systems == ("s0", "s1", "s2") and result.n_documents == 2
    assert result.resamples == 4 and result.n_undefined == 0
    assert result.win_rate == pytest.approx([0.75, (0.1 + 0.6 + 0.4 + 0.7) / 4, 0.35])


def test_a_seeded_bootstrap_repeats_and_counts_resamples_that_lose_a_system():
    # system 2 is only in document "b": a resample without it has no finite fit
    docs, first, second, score = ["a", "b"], [0, 1], [1, 2], [0.7, 0.6]
    one = rank_systems(docs, first, second, score, rng=np.random.default_rng(5), resamples=200)
    two = rank_systems(docs, first, second, score, rng=np.random.default_rng(5), resamples=200)
    assert np.array_equal(one.low, two.low) and np.array_equal(one.high, two.high)
    assert 0 < one.n_undefined < 200  # about three in four resamples miss a or b
    assert np.all(one.low <= one.strength + 1e-12) and np.all(one.strength <= one.high + 1e-12)
