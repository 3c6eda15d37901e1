"""A pairwise judge's two orders by hand: verdicts, preferences, votes, position
consistency and the first-position preference with its binomial test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoring.stats.pairwise_judge import (
    first_position,
    frame_verdicts,
    pair_scores,
    position_consistency,
    preferences,
    verdicts,
    votes,
)
from scoring.stats.position import PREFERS_A, PREFERS_B, TIE

# four pairs, ties allowed: [p(A), p(B), p(tie)] per order
AB = [[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.4, 0.4, 0.2]]
BA = [[0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.1, 0.3, 0.6], [0.1, 0.8, 0.1]]


def test_an_orders_verdict_is_its_single_most_probable_answer_else_a_tie():
    assert verdicts([[0.6, 0.4], [0.5, 0.5], [0.3, 0.7]]).tolist() == [0, 2, 1]
    assert verdicts([[0.2, 0.3, 0.5], [0.1, 0.8, 0.1], [0.4, 0.4, 0.2]]).tolist() == [2, 1, 2]


def test_verdicts_in_the_pairs_frame_swap_the_second_order():
    one, two = frame_verdicts(AB, BA)
    assert one.tolist() == [PREFERS_A, PREFERS_A, TIE, TIE]
    # ba shows the first output as B: B on top names the first output
    assert two.tolist() == [PREFERS_A, PREFERS_B, TIE, PREFERS_A]


def test_the_preference_averages_both_orders_in_the_pairs_frame():
    pref = preferences(AB, BA)
    assert pref[0] == pytest.approx([0.7, 0.2, 0.1])  # (0.7 + 0.7) / 2, (0.2 + 0.2) / 2
    assert pref[1] == pytest.approx([0.45, 0.45, 0.1])  # pure position: no preference
    assert pref[3] == pytest.approx([0.6, 0.25, 0.15])
    # pair 3: first (0.2 + 0.3) / 2 = 0.25, tie 0.6 → 0.25 + 0.3
    assert pair_scores(AB, BA) == pytest.approx([0.75, 0.5, 0.55, 0.675])
    # without ties the third column is absent and counts as zero
    assert pair_scores([[0.8, 0.2]], [[0.4, 0.6]]) == pytest.approx([0.7])


def test_votes_by_the_averaged_preference_or_by_mt_benchs_swap_rule():
    assert votes(AB, BA).tolist() == [PREFERS_A, TIE, TIE, PREFERS_A]
    assert votes(AB, BA, "consistent").tolist() == [PREFERS_A, TIE, TIE, TIE]
    assert votes([[0.8, 0.2]], [[0.8, 0.2]]).tolist() == [TIE]  # first and second equal
    with pytest.raises(ValueError, match="unknown vote rule"):
        votes(AB, BA, "majority")  # type: ignore[arg-type]


def test_position_consistency_counts_the_pairs_whose_verdict_survives_the_swap():
    found = position_consistency(AB, BA)
    assert (found.n, found.n_consistent) == (4, 2)  # pairs 1 and 3 agree in both orders
    assert found.share == 0.5
    assert math.isnan(position_consistency(np.zeros((0, 2)), np.zeros((0, 2))).share)


def test_the_first_position_preference_counts_verdicts_for_a_and_tests_them():
    # the eight orders: A on top in ab 1, ab 2 and ba 2; B in ba 1 and ba 4; a tie in
    # ab 3 (the tie answer), ab 4 (A and B share the top) and ba 3
    found = first_position(AB, BA)
    share = found.share
    assert (share.n_left, share.n_right, share.n_ties) == (3, 2, 3)
    assert share.share_left == 0.6 and share.p_value == pytest.approx(1.0)
    # always A: 6 of 6 sided verdicts, two-sided p = 2 / 2**6
    biased = first_position([[0.9, 0.1]] * 3, [[0.8, 0.2]] * 3)
    assert biased.share.n_left == 6 and biased.share.p_value == pytest.approx(2 / 64)
    assert biased.mean_first == pytest.approx((0.9 * 3 + 0.8 * 3) / 6)


def test_orders_must_be_aligned_rows_of_two_or_three_probabilities():
    with pytest.raises(ValueError, match="one row per pair"):
        preferences([[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="pairs × 2"):
        preferences([[1.0]], [[1.0]])
