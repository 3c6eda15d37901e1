"""Agreement of a judge with annotators: the statistics by hand and against scikit-learn
and irrCAC (``tests/data/agreement_reference.json``, written by
``tests/data/make_agreement_reference.py``; neither is a dependency) and the
``krippendorff`` package, the tables built from ratings, and the intervals' coverage on
simulated studies whose true agreement is known (``judge_simulation``)."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.stats.agreement import krippendorff_alpha
from scoring.stats.agreement_tables import (
    answer_counts,
    cohen_kappa,
    coincidences,
    gwet_ac1,
    krippendorff_alpha_from_coincidences,
    percent_agreement,
)
from scoring.stats.judge_agreement import (
    VOTES,
    Estimate,
    PairwiseAgreement,
    PointwiseAgreement,
    interval,
    judge_tables,
    pairwise_agreement,
    pointwise_agreement,
    without_ties,
)
from scoring.stats.resampling import Unit, draw_resamples
from tests.scoring.judge_simulation import (
    SCALE,
    pairwise_study,
    pairwise_truth,
    pointwise_study,
    pointwise_truth,
)

REFERENCE = json.loads(
    (Path(__file__).parent.parent / "data" / "agreement_reference.json").read_text()
)
NAN = math.nan

# Gwet's cont3x3abstractors (irrCAC's example data): two abstractors, three diagnoses.
# pa = (13 + 20 + 56) / 100 = 0.89. Cohen: pe = (13·13 + 27·24 + 60·63) / 100² = 0.4597,
# κ = (0.89 − 0.4597) / (1 − 0.4597) = 0.7964094 (irrCAC's vignette prints 0.7964094).
# AC1: π = (26, 51, 123) / 200, pe = Σ π(1 − π) / 2 = 0.269925,
# AC1 = (0.89 − 0.269925) / (1 − 0.269925) = 0.8493305.
ABSTRACTORS = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])


def test_kappa_and_ac1_of_gwets_abstractors_by_hand():
    assert cohen_kappa(ABSTRACTORS) == pytest.approx(0.4303 / 0.5403, abs=1e-15)
    assert cohen_kappa(ABSTRACTORS) == pytest.approx(0.7964094, abs=5e-8)
    assert gwet_ac1(ABSTRACTORS) == pytest.approx(0.620075 / 0.730075, abs=1e-15)
    assert percent_agreement(ABSTRACTORS) == pytest.approx(0.89)


def test_weighted_kappa_by_hand():
    # pairs (0,0) (1,1) (2,2) (0,1) (2,1): rows 2,1,2; columns 1,3,1; n = 5.
    # Disagreement observed: two pairs one step apart. Expected Σ r_c c_k w_ck / n:
    # quadratic (2·(3·1 + 1·4) + 1·(1 + 1) + 2·(1·4 + 3·1)) / 5 = 6  → κ = 1 − 2/6;
    # linear    (2·(3 + 2)     + 1·2       + 2·(2 + 3))     / 5 = 4.4 → κ = 1 − 2/4.4;
    # identity  (2·(3 + 1)     + 1·2       + 2·(1 + 3))     / 5 = 3.6 → κ = 1 − 2/3.6.
    table = np.array([[1, 1, 0], [0, 1, 0], [0, 1, 1]])
    assert cohen_kappa(table, "quadratic") == pytest.approx(2 / 3, abs=1e-15)
    assert cohen_kappa(table, "linear") == pytest.approx(6 / 11, abs=1e-15)
    assert cohen_kappa(table, "identity") == pytest.approx(4 / 9, abs=1e-15)


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda c: f"q{c['q']}-n{len(c['first'])}")
def test_kappa_and_ac1_equal_scikit_learn_and_irrcac(case):
    table = np.zeros((case["q"], case["q"]))
    np.add.at(table, (case["first"], case["second"]), 1)
    for weights, expected in case["kappa"].items():
        assert cohen_kappa(table, weights) == pytest.approx(expected, abs=1e-12)
    assert gwet_ac1(table) == pytest.approx(case["ac1"], abs=1e-12)


def test_statistics_are_vectorised_over_leading_axes_and_undefined_as_nan():
    tables = np.stack([ABSTRACTORS, ABSTRACTORS.T, np.zeros((3, 3))])
    assert cohen_kappa(tables).shape == (3,)
    assert cohen_kappa(tables)[1] == pytest.approx(cohen_kappa(ABSTRACTORS))
    assert math.isnan(cohen_kappa(tables)[2]) and math.isnan(gwet_ac1(tables)[2])
    one_category = np.array([[5.0, 0.0], [0.0, 0.0]])
    assert math.isnan(cohen_kappa(one_category))  # no chance disagreement: undefined
    assert gwet_ac1(one_category) == 1.0  # AC1's chance agreement is then 0


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_from_coincidences_equals_the_krippendorff_package(level):
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = int(rng.integers(2, 7))
        values = np.sort(rng.choice(np.arange(1, 20), q, replace=False)).astype(float)
        truth = rng.integers(0, q, 40)
        ratings = values[np.clip(truth + rng.integers(-1, 2, (4, 40)), 0, q - 1)]
        ratings[rng.random(ratings.shape) < 0.3] = np.nan
        expected = krippendorff_alpha(ratings, level, value_domain=values).value
        matrix = coincidences(answer_counts(ratings, values)).sum(axis=0)
        mine = krippendorff_alpha_from_coincidences(matrix, values, level)
        assert mine == pytest.approx(expected, abs=1e-12, nan_ok=True)


def test_answers_off_the_scale_are_refused():
    with pytest.raises(ValueError, match="off the scale"):
        answer_counts([[1.0, 2.5]], SCALE)
    with pytest.raises(ValueError, match="ascending"):
        pointwise_agreement([1.0], [[1.0]], ["d"], [3.0, 1.0])


def _pairs(judge, humans):  # type: ignore[no-untyped-def]
    """(judge, annotator) and (annotator, annotator) answer pairs, enumerated."""
    jh, hh = [], []
    for i in range(len(judge)):
        given = [h[i] for h in humans if not math.isnan(h[i])]
        if not math.isnan(judge[i]):
            jh += [(judge[i], h) for h in given]
        hh += list(combinations(given, 2))
    return jh, hh


def _table(pairs, values):  # type: ignore[no-untyped-def]
    index = {v: k for k, v in enumerate(values)}
    table = np.zeros((len(values), len(values)))
    for a, b in pairs:
        table[index[a], index[b]] += 1
    return table


def test_pointwise_agreement_pools_the_pairs_on_each_item():
    judge = [1.0, 2.0, 5.0, 4.0, NAN, 3.0]
    humans = [
        [1.0, 2.0, 4.0, 4.0, 2.0, NAN],
        [2.0, 2.0, 5.0, NAN, 3.0, NAN],
        [1.0, 3.0, NAN, 5.0, 2.0, NAN],
    ]
    result = pointwise_agreement(judge, humans, ["a", "a", "b", "b", "c", "c"], SCALE)
    jh, hh = _pairs(judge, humans)
    jh_table = _table(jh, list(SCALE))
    hh_table = _table(hh, list(SCALE))
    hh_table = hh_table + hh_table.T  # both orders
    assert result.quadratic_kappa.value == pytest.approx(float(cohen_kappa(jh_table, "quadratic")))
    assert result.gwet_ac1.value == pytest.approx(float(gwet_ac1(jh_table)))
    assert result.human_quadratic_kappa.value == pytest.approx(
        float(cohen_kappa(hh_table, "quadratic"))
    )
    assert result.human_gwet_ac1.value == pytest.approx(float(gwet_ac1(hh_table)))
    with_judge = np.vstack([humans, judge])
    assert result.krippendorff_alpha.value == pytest.approx(
        krippendorff_alpha(with_judge, "ordinal", value_domain=SCALE).value, abs=1e-12
    )
    assert result.human_krippendorff_alpha.value == pytest.approx(
        krippendorff_alpha(np.array(humans), "ordinal", value_domain=SCALE).value, abs=1e-12
    )
    assert (result.quadratic_kappa.n, result.human_gwet_ac1.n) == (len(jh), len(hh))
    assert (result.n_items, result.n_documents) == (4, 3)
    assert math.isnan(result.gwet_ac1.low)  # no generator, no interval


# Two items; votes A (1), tie (0), B (−1).
#   item 1: judge A; annotators A, A, tie     item 2: judge tie; annotators tie, A
# Judge–annotator pairs: (A,A) ✓ (A,A) ✓ (A,tie) ✗ (tie,tie) ✓ (tie,A) ✗: 3/5 with ties;
# without ties only (A,A) (A,A) remain: 2/2. κ over (B, tie, A): pa = 3/5, both
# marginals (0, 2, 3) / 5, pe = 13/25, κ = (3/5 − 13/25) / (12/25) = 1/6.
# Annotator pairs: (A,A) ✓ (A,tie) ✗ (A,tie) ✗ on item 1, (tie,A) ✗ on item 2: 1/4 with
# ties, 1/1 without.
VOTES_JUDGE = [1.0, 0.0]
VOTES_HUMANS = [[1.0, 0.0], [1.0, 1.0], [0.0, NAN]]


def test_pairwise_agreement_follows_mt_bench_by_hand():
    result = pairwise_agreement(VOTES_JUDGE, VOTES_HUMANS, ["q1", "q2"])
    assert (result.with_ties.value, result.with_ties.n) == (3 / 5, 5)
    assert (result.without_ties.value, result.without_ties.n) == (1.0, 2)
    assert result.kappa.value == pytest.approx(1 / 6, abs=1e-15)
    assert (result.human_with_ties.value, result.human_with_ties.n) == (1 / 4, 4)
    assert (result.human_without_ties.value, result.human_without_ties.n) == (1.0, 1)


def _fastchat_agreement(judge, humans, ban_ties):  # type: ignore[no-untyped-def]
    """MT-Bench's counting (FastChat's compute_agreement.py), restated over lists."""
    agree = total = 0
    for i, vote in enumerate(judge):
        votes = [h[i] for h in humans if not math.isnan(h[i])]
        if ban_ties and vote == 0:
            continue
        for v in votes:
            if ban_ties and v == 0:
                continue
            total += 1
            agree += v == vote
    return agree / total


def test_pairwise_agreement_matches_mt_bench_counting_on_random_votes():
    study = pairwise_study(np.random.default_rng(3), n_docs=15)
    result = pairwise_agreement(study.judge, study.humans, study.docs)
    for ban, estimate in ((False, result.with_ties), (True, result.without_ties)):
        expected = _fastchat_agreement(study.judge, study.humans, ban)
        assert estimate.value == pytest.approx(expected, abs=1e-15)
    table = without_ties(np.arange(9.0).reshape(3, 3))
    assert table.tolist() == [[0.0, 2.0], [6.0, 8.0]]


def test_bootstrap_is_reproducible_and_resamples_whole_documents():
    study = pointwise_study(np.random.default_rng(0), n_docs=30)
    first = pointwise_agreement(
        study.judge, study.humans, study.docs, SCALE, rng=np.random.default_rng(1), resamples=200
    )
    again = pointwise_agreement(
        study.judge, study.humans, study.docs, SCALE, rng=np.random.default_rng(1), resamples=200
    )
    assert first == again and first.resamples == 200
    for estimate in (first.quadratic_kappa, first.gwet_ac1, first.krippendorff_alpha):
        assert estimate.low <= estimate.value <= estimate.high
    # items of one document are alike: resampling items as if independent is too narrow
    items = pointwise_agreement(
        study.judge,
        study.humans,
        np.arange(study.docs.size),
        SCALE,
        rng=np.random.default_rng(1),
        resamples=200,
    )
    width = first.quadratic_kappa.high - first.quadratic_kappa.low
    assert items.quadratic_kappa.high - items.quadratic_kappa.low < width
    plan = draw_resamples(np.random.default_rng(1), np.arange(5), unit=Unit.DOCUMENTS, resamples=10)
    with pytest.raises(ValueError, match="other documents"):
        pointwise_agreement(study.judge, study.humans, study.docs, SCALE, plan=plan)


def test_the_annotators_statistics_may_come_without_intervals():
    study = pointwise_study(np.random.default_rng(2), n_docs=20)
    plan = draw_resamples(np.random.default_rng(1), study.docs, resamples=100)
    full = pointwise_agreement(study.judge, study.humans, study.docs, SCALE, plan=plan)
    half = pointwise_agreement(
        study.judge, study.humans, study.docs, SCALE, plan=plan, annotator_intervals=False
    )
    assert half.quadratic_kappa == full.quadratic_kappa and half.gwet_ac1 == full.gwet_ac1
    assert half.krippendorff_alpha == full.krippendorff_alpha
    for mine, theirs in (
        (half.human_quadratic_kappa, full.human_quadratic_kappa),
        (half.human_gwet_ac1, full.human_gwet_ac1),
        (half.human_krippendorff_alpha, full.human_krippendorff_alpha),
    ):
        assert mine.value == theirs.value and mine.n == theirs.n
        assert math.isnan(mine.low) and math.isnan(mine.high) and theirs.low <= theirs.high


@pytest.mark.parametrize("method", ["studentized", "percentile", "bca"])
def test_every_interval_method_brackets_the_estimate(method):
    study = pairwise_study(np.random.default_rng(4), n_docs=25)
    result = pairwise_agreement(
        study.judge,
        study.humans,
        study.docs,
        rng=np.random.default_rng(5),
        resamples=300,
        method=method,
    )
    for estimate in (result.with_ties, result.without_ties, result.kappa, result.human_kappa):
        assert estimate.low < estimate.value < estimate.high
    assert result.interval == method
    with pytest.raises(ValueError, match="unknown interval"):
        interval(np.ones((3, 2, 2)), percent_agreement, None, method="normal")  # type: ignore[arg-type]


def test_studentized_intervals_cover_the_true_agreement_at_their_nominal_level():
    """200 simulated studies of 40 documents × 4 items, three of six annotators per item:
    the 95% intervals of the judge's quadratic κ (pointwise) and of its MT-Bench
    agreement with ties (pairwise) each hold the population value in 93–97% of them.
    (``bench/judge_agreement_coverage.py`` runs all six statistics and three methods.)"""
    rng = np.random.default_rng(2025)
    kappa_truth = pointwise_truth(judge_bias=0.2, judge_sd=0.8, n_annotators=3).quadratic_kappa
    ties_truth = pairwise_truth(judge_sd=0.8).with_ties
    covered = np.zeros((200, 2), dtype=bool)
    for k in range(200):
        study = pointwise_study(rng)
        votes = pairwise_study(rng)
        plan = draw_resamples(rng, np.arange(40), unit=Unit.DOCUMENTS, resamples=500)
        kappa = interval(
            judge_tables(study.judge, study.humans, study.docs, SCALE).judge_human,
            lambda t: cohen_kappa(t, "quadratic"),
            plan,
        )
        ties = interval(
            judge_tables(votes.judge, votes.humans, votes.docs, VOTES).judge_human,
            percent_agreement,
            plan,
        )
        covered[k] = (kappa.low <= kappa_truth <= kappa.high, ties.low <= ties_truth <= ties.high)
    coverage = covered.mean(axis=0)
    assert np.all((coverage >= 0.93) & (coverage <= 0.97)), coverage


def test_perfect_agreement_everywhere_has_a_point_interval():
    humans = [[1.0, 0.0, -1.0, 1.0], [1.0, 0.0, -1.0, NAN]]
    result = pairwise_agreement(
        [1.0, 0.0, -1.0, 1.0], humans, ["a", "b", "c", "d"], rng=np.random.default_rng(0)
    )
    assert (result.with_ties.low, result.with_ties.value, result.with_ties.high) == (1.0, 1.0, 1.0)
    assert result.kappa.value == 1.0 and result.human_kappa.value == 1.0


# --- intervals stay within each statistic's range ----------------------------------------


def _ranges(found: PointwiseAgreement | PairwiseAgreement) -> list[tuple[Estimate, float, float]]:
    if isinstance(found, PairwiseAgreement):
        return [
            (found.with_ties, 0.0, 1.0),
            (found.without_ties, 0.0, 1.0),
            (found.kappa, -1.0, 1.0),
            (found.human_with_ties, 0.0, 1.0),
            (found.human_without_ties, 0.0, 1.0),
            (found.human_kappa, -1.0, 1.0),
        ]
    return [
        (e, -1.0, 1.0)
        for e in (
            found.quadratic_kappa,
            found.gwet_ac1,
            found.krippendorff_alpha,
            found.human_quadratic_kappa,
            found.human_gwet_ac1,
            found.human_krippendorff_alpha,
        )
    ]


def test_a_studentized_interval_past_the_range_is_cut_to_it_and_says_so():
    # eight pairs in four documents: the bootstrap-t reached below −1 for κ, the
    # agreement's below 0 (Cohen's κ of [−1.24, 4.98] on the pairs page)
    judge = [1.0, 0.0, 0.0, -1.0, -1.0, -1.0, -1.0, -1.0]
    humans = [[-1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0]]
    found = pairwise_agreement(
        judge, humans, [0, 0, 1, 1, 2, 2, 3, 3], rng=np.random.default_rng(0), resamples=200
    )
    assert found.kappa.clipped and found.kappa.low == -1.0
    assert found.with_ties.clipped and found.with_ties.low == 0.0
    plain = pairwise_agreement(
        judge,
        humans,
        [0, 0, 1, 1, 2, 2, 3, 3],
        rng=np.random.default_rng(0),
        resamples=200,
        method="percentile",
    )
    assert not plain.kappa.clipped  # percentiles of values in the range stay in it


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 12), st.integers(1, 3))
def test_every_interval_lies_within_its_statistics_range(seed, n_docs, n_annotators):
    rng = np.random.default_rng(seed)
    n = 2 * n_docs
    docs = np.arange(n) // 2
    humans = rng.integers(1, 4, size=(n_annotators, n)).astype(float)
    humans[rng.random(humans.shape) < 0.2] = np.nan
    judge = rng.integers(1, 4, size=n).astype(float)
    votes = rng.choice(VOTES, size=(n_annotators, n))
    for found in (
        pointwise_agreement(judge, humans, docs, [1, 2, 3], rng=rng, resamples=60),
        pairwise_agreement(rng.choice(VOTES, size=n), votes, docs, rng=rng, resamples=60),
    ):
        for estimate, low, high in _ranges(found):
            for bound in (estimate.value, estimate.low, estimate.high):
                assert math.isnan(bound) or low - 1e-12 <= bound <= high + 1e-12
