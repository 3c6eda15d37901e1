"""Position bias on simulated pairwise answers: side shares, binomial tests, flip rates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from scoring.stats.position import (
    PREFERS_A,
    PREFERS_B,
    TIE,
    chose_left,
    flip_rate,
    position_bias,
    side_share,
)


def simulate(seed: int, left_habit: dict[str, float], n_items: int = 200):  # type: ignore[no-untyped-def]
    """Every annotator answers every item once with random sides. An annotator with
    habit h picks the left side with probability h, else judges the content: A is
    better on a random 60% of items (no ties)."""
    rng = np.random.default_rng(seed)
    a_better = rng.random(n_items) < 0.6
    rows = []
    for name, habit in left_habit.items():
        a_left = rng.random(n_items) < 0.5
        by_habit = rng.random(n_items) < habit
        prefers_a = np.where(by_habit, a_left, a_better)
        for i in range(n_items):
            rows.append((name, i, PREFERS_A if prefers_a[i] else PREFERS_B, bool(a_left[i])))
    who, unit, choice, a_left = (np.array(c) for c in zip(*rows, strict=True))
    return who, unit, choice, a_left


def test_a_biased_annotator_is_detected_and_an_unbiased_one_is_not():
    who, unit, choice, a_left = simulate(0, {"biased": 0.35, "fair": 0.0})
    result = position_bias(who, unit, choice, a_left)
    biased, fair = result.annotators["biased"], result.annotators["fair"]
    assert biased.p_value < 0.01 and biased.share_left > 0.6
    assert fair.p_value > 0.05 and biased.low > 0.5 > fair.low
    assert biased.n_sided == fair.n_sided == 200
    assert result.overall.n_sided == 400


@pytest.mark.parametrize("seed", range(5))
def test_an_unbiased_annotator_is_rarely_flagged(seed):
    who, unit, choice, a_left = simulate(seed, {"fair": 0.0})
    assert position_bias(who, unit, choice, a_left).annotators["fair"].p_value > 0.01


def test_side_share_is_the_exact_binomial_test_with_ties_counted_apart():
    share = side_share(14, 4, n_ties=3)
    assert (share.n_left, share.n_right, share.n_ties) == (14, 4, 3)
    assert share.share_left == pytest.approx(14 / 18)
    assert share.p_value == pytest.approx(stats.binomtest(14, 18, 0.5).pvalue)
    assert share.p_value == pytest.approx(2 * stats.binom.sf(13, 18, 0.5))  # symmetric at 0.5
    assert share.low < 14 / 18 < share.high
    empty = side_share(0, 0, n_ties=5)
    assert math.isnan(empty.share_left) and math.isnan(empty.p_value) and empty.n_ties == 5
    with pytest.raises(ValueError, match="≥ 0"):
        side_share(-1, 2)


def test_left_choices_follow_the_stored_sides():
    choice = [PREFERS_A, PREFERS_A, PREFERS_B, PREFERS_B, TIE]
    a_left = [True, False, True, False, True]
    assert list(chose_left(choice, a_left)) == [1, 0, 0, 1, -1]
    with pytest.raises(ValueError, match="prefers A"):
        chose_left([2], [True])


def test_flip_rate_counts_pairs_in_opposite_orders_and_in_the_same_order():
    # unit u1: A-left answers a, a, tie; B-left answers b, a → cross pairs without a tie:
    # (a,b) flip, (a,a), (a,b) flip, (a,a) → 2 flips of 4; tie pairs 2;
    # same order: A-left {a, a} → 1 pair, 0 disagreements; B-left {b, a} → 1 pair, 1.
    # unit u2: only A-left answers (a, b): not seen in both orders; 1 same-order pair, 1.
    unit = ["u1"] * 5 + ["u2"] * 2
    choice = [PREFERS_A, PREFERS_A, TIE, PREFERS_B, PREFERS_A, PREFERS_A, PREFERS_B]
    a_left = [True, True, True, False, False, True, True]
    flips = flip_rate(unit, choice, a_left)
    assert (flips.n_units, flips.n_pairs, flips.n_flips, flips.n_tie_pairs) == (1, 4, 2, 2)
    assert (flips.n_same_order_pairs, flips.n_same_order_disagreements) == (3, 2)
    assert flips.rate == pytest.approx(0.5) and flips.same_order_rate == pytest.approx(2 / 3)
    nothing = flip_rate([], [], [])
    assert math.isnan(nothing.rate) and nothing.n_units == 0


def test_annotators_who_always_pick_the_left_side_flip_on_every_pair_in_opposite_orders():
    who, unit, choice, a_left = simulate(3, {"x": 1.0, "y": 1.0, "z": 1.0})
    flips = position_bias(who, unit, choice, a_left).flips
    assert flips.n_units > 100 and flips.rate == 1.0 and flips.same_order_rate == 0.0
    fair = flip_rate(*simulate(3, {"x": 0.0, "y": 0.0, "z": 0.0})[1:])
    assert fair.rate == 0.0  # content-only annotators agree whatever the order
