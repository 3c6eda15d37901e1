"""The alternative-annotator test: by hand, against the authors' reference implementation
(``tests/data/alttest_reference.json``, written by ``tests/data/make_alttest_reference.py``
from a checkout of github.com/nitaytech/AltTest, which is not a dependency), and on
simulated annotators and judges of known quality."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from scoring.stats.alttest import (
    NO_ITEMS,
    TOO_FEW_ITEMS,
    accuracy,
    alt_test,
    alt_test_labels,
    at_least,
    benjamini_yekutieli,
    neg_rmse,
    neg_rmse_plain,
    one_sided_p_value,
)
from scoring.stats.label_tables import LabelSet

REFERENCE = json.loads(
    (Path(__file__).parent.parent / "data" / "alttest_reference.json").read_text()
)


def _case_id(case: dict[str, object]) -> str:
    return f"{case['dataset']}-{case['judge']}-eps{case['epsilon']}-min{case['min_annotators_per_item']}"


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=_case_id)
def test_alt_test_equals_the_reference_implementation(case):
    data = REFERENCE["datasets"][case["dataset"]]
    expected = case["expected"]
    result = alt_test(
        data["judges"][case["judge"]],
        data["annotations"],
        epsilon=case["epsilon"],
        alpha=case["alpha"],
        metric=case["metric"],
        min_annotators_per_item=case["min_annotators_per_item"],
        min_items=case["min_items"],
    )
    assert result.winning_rate == expected["winning_rate"]
    assert result.advantage_probability == pytest.approx(
        expected["advantage_probability"], abs=1e-12
    )
    assert [t.annotator for t in result.per_annotator] == expected["annotators"]
    assert [t.n_items for t in result.per_annotator] == expected["n_items"]
    assert [t.judge_wins for t in result.per_annotator] == expected["judge_wins"]
    assert dict(result.skipped) == expected["skipped"]
    for test, p, rho in zip(
        result.per_annotator, expected["p_values"], expected["rho_judge"], strict=True
    ):
        assert test.p_value == pytest.approx(p, abs=1e-12, rel=1e-12)
        assert test.rho_judge == pytest.approx(rho, abs=1e-12)
    assert result.passed is (expected["winning_rate"] >= 0.5)


def test_reference_cases_cover_wins_losses_skips_and_both_scores():
    cases = REFERENCE["cases"]
    rates = {c["expected"]["winning_rate"] for c in cases}
    assert 0.0 in rates and any(0 < r < 1 for r in rates) and max(rates) >= 0.5
    assert any(c["expected"]["skipped"] for c in cases)
    assert {c["metric"] for c in cases} == {"accuracy", "neg_rmse"}
    assert len(REFERENCE["reference"]["revision"]) == 40


# Three annotators and a judge on four items (x, y are the labels):
#   item  A  B  C  judge
#   1     x  x  x  x
#   2     x  y  x  x
#   3     y  y  x  y
#   4     x  y  y  y
# Leaving A out, the others (B, C) say xx, yx, yx, yy: A's accuracies 1, .5, .5, 0 and the
# judge's 1, .5, .5, 1, so the differences (A at least as good minus the judge at least as
# good) are 0, 0, 0, −1. B and C likewise each lose one item to the judge and tie the rest.
# Mean −0.25, standard deviation 0.5, so with ε = 0.2: t = (−0.25 − 0.2) / (0.5 / 2) = −1.8
# on 3 degrees of freedom, for each annotator.
HAND = {
    "A": {1: "x", 2: "x", 3: "y", 4: "x"},
    "B": {1: "x", 2: "y", 3: "y", 4: "y"},
    "C": {1: "x", 2: "x", 3: "x", 4: "y"},
}
HAND_JUDGE = {1: "x", 2: "x", 3: "y", 4: "y"}


def test_alt_test_by_hand():
    p = stats.t.cdf(-1.8, df=3)
    # three equal p-values: BY at level q rejects all when p ≤ q / H_3, H_3 = 11/6
    strict = alt_test(HAND_JUDGE, HAND, epsilon=0.2, alpha=0.05, min_items=2)
    loose = alt_test(HAND_JUDGE, HAND, epsilon=0.2, alpha=0.5, min_items=2)
    for result in (strict, loose):
        assert [t.annotator for t in result.per_annotator] == ["A", "B", "C"]
        for test in result.per_annotator:
            assert test.p_value == pytest.approx(p, rel=1e-12)
            assert test.adjusted_p_value == pytest.approx(min(1.0, p * 11 / 6), rel=1e-12)
            assert (test.rho_judge, test.rho_human, test.n_items) == (1.0, 0.75, 4)
        assert result.advantage_probability == 1.0
        assert result.n_items == result.n_items_with_three == 4
    assert p > 0.05 * 6 / 11 and p < 0.5 * 6 / 11
    assert (strict.winning_rate, strict.passed) == (0.0, False)
    assert (loose.winning_rate, loose.passed) == (1.0, True)


def test_benjamini_yekutieli_by_hand():
    # m = 4, H_4 = 25/12; thresholds k/4 · 0.05 / H_4 = 0.006, 0.012, 0.018, 0.024.
    # Sorted: 0.001 ≤ 0.006, 0.011 ≤ 0.012, 0.02 > 0.018, 0.5 > 0.024: the two smallest.
    p = [0.02, 0.001, 0.5, 0.011]
    rejected, adjusted = benjamini_yekutieli(p, 0.05)
    assert rejected == [False, True, False, True]
    scale = 4 * 25 / 12
    expected = [0.02 * scale / 3, 0.001 * scale, 1.0, 0.011 * scale / 2]
    assert adjusted == pytest.approx(expected, rel=1e-12)
    assert adjusted == pytest.approx(stats.false_discovery_control(p, method="by"), rel=1e-12)
    assert benjamini_yekutieli([], 0.05) == ([], [])
    rejected, adjusted = benjamini_yekutieli([0.0001, math.nan], 0.05)
    assert rejected == [True, False] and math.isnan(adjusted[1])


def test_one_sided_p_value_handles_constant_and_short_differences():
    assert one_sided_p_value([0, 0, 0], 0.1) == 0.0  # exactly 0 < ε: certain
    assert one_sided_p_value([1, 1, 1], 0.1) == 1.0
    assert one_sided_p_value([0, 0], 0.0) == 1.0  # exactly ε: never below it
    assert math.isnan(one_sided_p_value([1], 0.1))
    d = [1, 0, -1, -1, 0, 0, -1]
    assert one_sided_p_value(d, 0.1) == pytest.approx(
        stats.ttest_1samp(d, 0.1, alternative="less").pvalue, rel=1e-14
    )


def test_alignment_scores():
    assert accuracy("a", ["a", "b", "a", "c"]) == 0.5
    assert neg_rmse(3, [1, 5]) == -2.0
    assert neg_rmse(2.5, [2.5]) == 0.0


def test_too_few_items_says_what_is_missing():
    data = REFERENCE["datasets"]["mtbench"]  # 120 items, only 6 of them with three annotators
    result = alt_test(data["judges"]["gpt-4o"], data["annotations"], epsilon=0.2)
    assert result.problem == TOO_FEW_ITEMS and not result.passed
    assert math.isnan(result.winning_rate) and math.isnan(result.advantage_probability)
    assert result.n_items == result.n_items_with_three == 6
    assert [n for _, n in result.skipped] == [6, 6, 6]
    assert "6 items" in result.message and "30" in result.message
    # with two annotators per item (the reference's default) every annotator is tested
    assert (
        alt_test(
            data["judges"]["gpt-4o"], data["annotations"], epsilon=0.2, min_annotators_per_item=2
        ).problem
        is None
    )


def test_no_item_with_enough_annotators_is_a_problem_not_an_error():
    annotations = {"a": {1: 1, 2: 2}, "b": {1: 1}, "c": {2: 2, 3: None}}
    result = alt_test({1: 1, 2: 2, 3: 3}, annotations, epsilon=0.1, metric="neg_rmse")
    assert result.problem == NO_ITEMS and result.n_items_with_three == 0
    assert "three" in result.message or "3" in result.message
    with pytest.raises(ValueError, match="unknown alignment score"):
        alt_test({}, annotations, epsilon=0.1, metric="f1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one other"):
        alt_test({}, annotations, epsilon=0.1, min_annotators_per_item=1)


def test_a_custom_alignment_score_is_used_as_given():
    def close(answer: float, others: list[float]) -> float:
        return float(np.mean([abs(answer - o) <= 1 for o in others]))

    data = REFERENCE["datasets"]["cebab_stars"]
    judge = data["judges"]["gpt-4o"]
    result = alt_test(judge, data["annotations"], epsilon=0.1, metric=close)
    assert len(result.per_annotator) == 10 and 0.0 <= result.winning_rate <= 1.0


def _likert_study(seed: int, judge_noise: float | None, n_items: int = 100):  # type: ignore[no-untyped-def]
    """Six annotators (true quality + noise of sd 0.8, rounded to 1..5), four per item.
    The judge is the mean of five other annotators of the same quality (``judge_noise``
    None), or the truth plus noise of sd ``judge_noise``."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0, 1, n_items)
    answers = np.clip(np.round(3 + truth + rng.normal(0, 0.8, (6, n_items))), 1, 5)
    asked = np.argsort(rng.random((6, n_items)), axis=0) < 4
    if judge_noise is None:
        noise = rng.normal(0, 0.8, (5, n_items)).mean(axis=0)
    else:
        noise = rng.normal(0, judge_noise, n_items)
    judge = np.clip(np.round(3 + truth + noise), 1, 5)
    annotations = {
        f"a{k}": {i: float(answers[k, i]) for i in range(n_items) if asked[k, i]} for k in range(6)
    }
    return {i: float(judge[i]) for i in range(n_items)}, annotations


def test_a_judge_better_than_one_annotator_passes_and_a_noisy_one_fails():
    good = [alt_test(*_likert_study(s, None), epsilon=0.15, metric="neg_rmse") for s in range(20)]
    noisy = [alt_test(*_likert_study(s, 2.0), epsilon=0.15, metric="neg_rmse") for s in range(20)]
    assert all(r.passed for r in good)
    assert not any(r.passed for r in noisy)
    assert min(r.advantage_probability for r in good) > max(r.advantage_probability for r in noisy)
    assert all(r.n_items_with_three == 100 and r.problem is None for r in good + noisy)


def test_the_plain_python_rmse_gives_the_same_verdicts_as_numpys():
    rng = np.random.default_rng(3)
    for _ in range(50):
        answer, others = rng.integers(1, 6), rng.integers(1, 6, size=int(rng.integers(1, 5)))
        assert neg_rmse_plain(answer, list(others)) == pytest.approx(neg_rmse(answer, others))
    for seed in range(5):
        for noise in (None, 2.0):
            judge, annotations = _likert_study(seed, noise)
            fast = alt_test(judge, annotations, epsilon=0.15, metric=neg_rmse_plain)
            slow = alt_test(judge, annotations, epsilon=0.15, metric="neg_rmse")
            assert fast.winning_rate == slow.winning_rate
            assert fast.per_annotator == slow.per_annotator


def _as_codes(judge, annotations):
    """A reference dataset's answers as label codes: annotators × items, one judge row."""
    items = sorted({i for given in annotations.values() for i in given} | set(judge))
    values = sorted(
        {v for given in annotations.values() for v in given.values()} | set(judge.values())
    )
    labels = LabelSet(tuple(values))
    humans = labels.codes([[given.get(i) for i in items] for given in annotations.values()])
    return labels.codes([judge.get(i) for i in items]), humans, list(annotations)


ACCURACY_CASES = [c for c in REFERENCE["cases"] if c["metric"] == "accuracy"]


@pytest.mark.parametrize("case", ACCURACY_CASES, ids=_case_id)
def test_alt_test_on_label_codes_equals_the_reference_implementation(case):
    data = REFERENCE["datasets"][case["dataset"]]
    judge, humans, names = _as_codes(data["judges"][case["judge"]], data["annotations"])
    result = alt_test_labels(
        judge,
        humans,
        names,
        epsilon=case["epsilon"],
        alpha=case["alpha"],
        min_annotators_per_item=case["min_annotators_per_item"],
        min_items=case["min_items"],
    )
    expected = case["expected"]
    assert result.winning_rate == expected["winning_rate"]
    assert [t.annotator for t in result.per_annotator] == expected["annotators"]
    assert [t.judge_wins for t in result.per_annotator] == expected["judge_wins"]
    assert dict(result.skipped) == expected["skipped"]
    for test, p, rho in zip(
        result.per_annotator, expected["p_values"], expected["rho_judge"], strict=True
    ):
        assert test.p_value == pytest.approx(p, abs=1e-12, rel=1e-12)
        assert test.rho_judge == pytest.approx(rho, abs=1e-12)


def test_alt_test_on_label_codes_equals_the_accuracy_alt_test_on_random_campaigns():
    rng = np.random.default_rng(25)
    for _ in range(40):
        raters, n, q = int(rng.integers(3, 7)), int(rng.integers(10, 90)), int(rng.integers(2, 5))
        truth = rng.integers(0, q, n)
        humans = np.where(rng.random((raters, n)) < 0.7, truth, rng.integers(0, q, (raters, n)))
        humans = np.where(rng.random((raters, n)) < 0.3, np.nan, humans.astype(float))
        judge = np.where(rng.random(n) < 0.6, truth, rng.integers(0, q, n)).astype(float)
        judge[rng.random(n) < 0.1] = np.nan
        names = [f"rater{k}" for k in range(raters)]
        found = alt_test_labels(judge, humans, names, epsilon=0.15, min_items=10)
        expected = alt_test(
            {i: int(v) for i, v in enumerate(judge) if np.isfinite(v)},
            {
                name: {i: int(v) for i, v in enumerate(row) if np.isfinite(v)}
                for name, row in zip(names, humans, strict=True)
            },
            epsilon=0.15,
            metric="accuracy",
            min_items=10,
        )
        assert found.per_annotator == expected.per_annotator
        assert found.skipped == expected.skipped and found.problem == expected.problem
        assert (found.n_items, found.n_items_with_three) == (
            expected.n_items,
            expected.n_items_with_three,
        )


def test_alt_test_on_label_codes_refuses_codes_that_are_not_labels():
    with pytest.raises(ValueError, match="whole numbers"):
        alt_test_labels([0.5], [[0.0], [1.0], [1.0]], ["a", "b", "c"], epsilon=0.1)


@pytest.mark.parametrize("metric", [neg_rmse_plain, "neg_rmse"])
def test_a_tie_of_one_decimal_answers_is_a_tie_however_the_rmse_is_summed(metric):
    # left-out annotator h answers 4.2, the judge 1.8, the others 4.5, 1.5 and 3: the
    # squared differences are the same numbers (0.09, 7.29, 1.44 against 7.29, 0.09,
    # 1.44), but summed in this order the plain RMSE of one came out a bit apart
    items = [f"i{k}" for k in range(30)]
    others = {"a": 4.5, "b": 1.5, "c": 3.0}
    answers = {name: dict.fromkeys(items, value) for name, value in others.items()}
    answers["h"] = dict.fromkeys(items, 4.2)
    found = alt_test(dict.fromkeys(items, 1.8), answers, epsilon=0.1, metric=metric)
    tested = {t.annotator: t for t in found.per_annotator}
    assert tested["h"].rho_judge == tested["h"].rho_human == 1.0
    assert at_least(-1.2, -1.2 - 1e-15) and not at_least(-1.2, -1.19)
