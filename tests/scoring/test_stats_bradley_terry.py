"""Bradley–Terry strengths and win rates on hand-computed toys, against a direct
maximisation of the likelihood with scipy, and their intervals over documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from scoring.stats.bradley_terry import (
    MIN_DOCUMENTS,
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
    result = rank_systems(
        docs, first, second, score, systems=("s0", "s1", "s2"), plan=plan, min_documents=2
    )
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
    # system 0 is only in document "a", system 3 only in "c": a resample without either
    # has no finite fit, and 1 − 2 (2/3)³ + (1/3)³ = 44 % of them have both
    docs, first, second, score = ["a", "b", "c"], [0, 1, 2], [1, 2, 3], [0.7, 0.6, 0.4]
    kept = {"rng": np.random.default_rng(5), "resamples": 200, "min_documents": 3}
    one = rank_systems(docs, first, second, score, **kept)
    two = rank_systems(docs, first, second, score, **{**kept, "rng": np.random.default_rng(5)})
    assert one.n_undefined == two.n_undefined and 0 < one.n_undefined < 200
    # too few fits for an interval, and it says so
    assert np.isnan(one.low).all() and np.isnan(one.high).all()
    assert f"Only {200 - one.n_undefined} of 200 resamples" in one.problem
    assert np.isfinite(one.strength).all()


def test_too_few_documents_give_no_interval_rather_than_a_zero_width_one():
    # every document gives the same wins: each resample fits the same strengths, and the
    # percentiles would be zero-width intervals around them
    docs = [f"d{k}" for k in range(4) for _ in range(3)]
    first, second = [0, 1, 0] * 4, [1, 2, 2] * 4
    found = rank_systems(
        docs, first, second, [0.8, 0.6, 0.7] * 4, rng=np.random.default_rng(0), resamples=100
    )
    assert np.isfinite(found.strength).all()
    assert np.isnan(found.low).all() and np.isnan(found.high).all()
    assert f"4 documents: too few to resample for intervals (at least {MIN_DOCUMENTS})" in (
        found.problem
    )
    many = [f"d{k}" for k in range(MIN_DOCUMENTS) for _ in range(3)]
    enough = rank_systems(
        many,
        [0, 1, 0] * MIN_DOCUMENTS,
        [1, 2, 2] * MIN_DOCUMENTS,
        [0.8, 0.6, 0.7] * MIN_DOCUMENTS,
        rng=np.random.default_rng(0),
        resamples=100,
    )
    assert np.isfinite(enough.low).all() and enough.problem == ""


def test_a_system_that_never_loses_is_named_instead_of_a_nan_strength():
    found = rank_systems(
        [f"d{k}" for k in range(12)],
        [0, 1] * 6,
        [1, 2] * 6,
        [1.0, 0.6] * 6,  # s0 beats s1 outright every time
        systems=("s0", "s1", "s2"),
        rng=np.random.default_rng(0),
        resamples=50,
    )
    assert np.isnan(found.strength).all() and np.isnan(found.low).all()
    assert "Too few comparisons for Bradley–Terry strengths (never lost: s0" in found.problem
    assert "the win rates still rank them" in found.problem
