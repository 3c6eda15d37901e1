"""The statistics WMT reports equal mt-metrics-eval's: on its own test cases (ported,
with its expected numbers) and on random ragged data with ties and missing judgments
(``tests/data/mtme_reference.json``, written by ``tests/data/make_mtme_reference.py``
from a checkout of mt-metrics-eval, which is not a dependency)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scoring.stats import (
    Alternative,
    Average,
    Coefficient,
    DegeneratePolicy,
    Level,
    Options,
    assign_ranks,
    average_ranks,
    calibrate_ties,
    correlate,
    williams_test,
)

ROOT = Path(__file__).parent.parent.parent
REFERENCE = json.loads((ROOT / "tests" / "data" / "mtme_reference.json").read_text())


def packed(num_sys: int, gold: list[Any], metric: list[Any]) -> dict[str, Any]:
    """mt-metrics-eval's layout (systems × documents, packed by system, None for a
    missing judgment) as Concordia's aligned arrays."""
    human = np.array([np.nan if g is None else g for g in gold], dtype=float)
    n_items = human.size // num_sys
    return {
        "metric": np.asarray(metric, dtype=float),
        "human": human,
        "docs": np.tile(np.arange(n_items), num_sys),
        "systems": np.repeat(np.arange(num_sys), n_items),
    }


def value(data: dict[str, Any], level: Level, coefficient: Coefficient, **kwargs: Any) -> float:
    return correlate(
        data["metric"],
        data["human"],
        level=level,
        coefficient=coefficient,
        docs=data["docs"],
        systems=data["systems"],
        **kwargs,
    ).value


# --- mt-metrics-eval's own cases (stats_test.py, tau_optimization_test.py, data_test.py)


def test_kendall_variants_of_its_stats_test():
    data = packed(1, [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3])
    assert value(data, Level.DATASET, Coefficient.KENDALL_B) == pytest.approx(0.316227766)
    assert value(data, Level.DATASET, Coefficient.KENDALL_C) == pytest.approx(0.32)
    assert value(data, Level.DATASET, Coefficient.KENDALL_23) == pytest.approx(0.2)
    assert value(data, Level.DATASET, Coefficient.ACC23) == pytest.approx(0.6)
    eps2 = Options(epsilon=2.0)
    assert value(data, Level.DATASET, Coefficient.ACC23, options=eps2) == pytest.approx(0.4)


def test_kendall_23_counts_of_its_stats_test_with_and_without_epsilon():
    # x = human, y = metric in its test: 21 pairs, 14 - 7 = 7 net at ε = 0 and 0.1.
    data = packed(1, [1, 1, 1, 2, 2, 3, 4], [1, 1, 2, 2, 4, 3, 3])
    for eps in (0.0, 0.1):
        got = value(data, Level.DATASET, Coefficient.KENDALL_23, options=Options(epsilon=eps))
        assert got == pytest.approx(7 / 21)
    # ε = 1 ties more metric pairs: 3 ties in both, 0 in humans only, 10 in metric only,
    # 1 discordant, so 7 concordant: (7 + 3 - 1 - 0 - 10) / 21.
    got = value(data, Level.DATASET, Coefficient.KENDALL_23, options=Options(epsilon=1.0))
    assert got == pytest.approx((7 + 3 - 1 - 0 - 10) / 21)


def test_tie_calibration_of_its_stats_test():
    data = packed(1, [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3])
    result = calibrate_ties(data["metric"], data["human"], level=Level.DATASET)
    assert result.value == pytest.approx(0.7)
    again = value(data, Level.DATASET, Coefficient.ACC23, options=Options(epsilon=result.epsilon))
    assert again == pytest.approx(result.value)


@pytest.mark.parametrize(
    ("metric", "human", "thresholds", "values", "best"),
    [
        # test_zero_threshold_is_best: every pair concordant.
        ([0, 2, 6, 8], [1, 2, 3, 4], [0, 2, 4, 6, 8], [6 / 6, 4 / 6, 3 / 6, 1 / 6, 0], 0),
        # test_nonzero_threshold_is_best: three human ties to win.
        ([0, 2, 6, 8], [1, 1, 1, 4], [0, 2, 4, 6, 8], [3 / 6, 3 / 6, 4 / 6, 4 / 6, 3 / 6], 4),
    ],
)
def test_tie_calibration_curves_of_its_tau_optimization_test(
    metric, human, thresholds, values, best
):
    result = calibrate_ties(
        np.array(metric, float), np.array(human, float), level=Level.DATASET, curve=True
    )
    np.testing.assert_allclose(result.thresholds, thresholds)
    np.testing.assert_allclose(result.values, values, atol=1e-12)
    assert result.epsilon == best


def test_tie_calibration_regression_example_of_its_tau_optimization_test():
    nan = np.nan
    metric = [[0, 5, 2, 3, 2], [nan, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1], [nan] * 5]
    human = [[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, nan, 3, 2], [nan] * 5]
    docs = np.repeat(np.arange(5), 5)
    result = calibrate_ties(
        np.ravel(metric), np.ravel(human), level=Level.SAMPLE, docs=docs, curve=True
    )
    expected = [
        0.4666666666666667,
        0.4916666666666668,
        0.38333333333333347,
        0.29166666666666674,
        0.2666666666666667,
        0.2,
        0.15833333333333335,
        0.15833333333333335,
        0.1166666666666667,
    ]
    # Its curve lists every pair's difference; ours only those where the value changes
    # (here 7 is a discordant pair's: nothing changes). As step functions they agree.
    thresholds = np.arange(9.0)
    ours = result.values[np.searchsorted(result.thresholds, thresholds, side="right") - 1]
    np.testing.assert_allclose(ours, expected, atol=1e-12)
    assert set(result.thresholds) <= set(thresholds)
    assert (result.epsilon, result.value) == (1.0, pytest.approx(0.4916666666666668))


def test_kendall_like_of_its_stats_test():
    # One system: 'none' pools the four outputs; a None judgment drops its pairs.
    data = packed(1, [10, None, 100, 150], [2, 1, 4, 3])
    assert (
        value(data, Level.DATASET, Coefficient.KENDALL_LIKE, options=Options(threshold=1)) == 1 / 3
    )
    # Two systems, item grouping (WMT's, size-weighted by the counted pairs).
    for gold in ([10, 11, 100, 150], [10, None, 100, 150]):
        data = packed(2, gold, [2, 1, 4, 3])
        got = value(
            data,
            Level.SAMPLE,
            Coefficient.KENDALL_LIKE,
            average=Average.MICRO,
            options=Options(threshold=1),
        )
        assert got == 1
    # CorrelationFunctionsTest: (C - D) / (C + D) = 3/5 at 25, 2/6 at 1.
    data = packed(1, [10, 11, 100, 150], [2, 1, 4, 3])
    assert value(data, Level.DATASET, Coefficient.KENDALL_LIKE) == pytest.approx(3 / 5)
    assert value(data, Level.DATASET, Coefficient.KENDALL_LIKE, options=Options(threshold=1)) == (
        pytest.approx(2 / 6)
    )


def test_pairwise_difference_pearson_of_its_stats_test():
    data = packed(2, [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 3, 7])
    assert value(data, Level.SAMPLE, Coefficient.PDP) == pytest.approx(0.926, abs=5e-4)
    assert value(data, Level.DATASET, Coefficient.PDP) == pytest.approx(0.776, abs=5e-4)
    assert value(data, Level.SAMPLE, Coefficient.PEARSON) == pytest.approx(1.0)
    with_nones = packed(2, [1, 5, None, 10, 2, 12], [3, 15, 1, 20, 4, 24])
    assert value(with_nones, Level.SAMPLE, Coefficient.PDP) == pytest.approx(0.968, abs=5e-4)
    assert value(with_nones, Level.DATASET, Coefficient.PDP) == pytest.approx(0.975, abs=5e-4)


def test_soft_pairwise_accuracy_of_its_stats_test():
    data = packed(2, [1, 2, 3, 2, 3, 4], [2, 2, 4, 1, 3, 5])
    assert value(data, Level.SYSTEM, Coefficient.SPA) == pytest.approx(0.872, abs=5e-4)


def test_micro_averaging_of_its_average_correlation_test():
    # Per system in its test; per document here (the same arithmetic): weights 2 and 3.
    data = packed(2, [1, None, 3, 4, 5, 6], [2, 1, 8, 3, 5, 6])
    data["docs"], data["systems"] = data["systems"], data["docs"]
    p1, p2 = np.corrcoef([1, 3], [2, 8])[0, 1], np.corrcoef([4, 5, 6], [3, 5, 6])[0, 1]
    got = value(data, Level.SAMPLE, Coefficient.PEARSON, average=Average.MICRO)
    assert got == pytest.approx((2 * p1 + 3 * p2) / 5)


def test_williams_test_of_its_stats_test_is_unsigned_and_ours_signed():
    gold = [1, 2, 3, 4, 5]
    m1, m2 = [1.1, 2, 3.1, 4, 5.1], [1.5, 2, 3.1, 4, 5.5]
    r = np.corrcoef([gold, m1, m2])
    unsigned = williams_test(r[0, 1], r[0, 2], r[1, 2], 5, Alternative.UNSIGNED)
    assert unsigned == pytest.approx(0.019, abs=5e-4)
    # The same test asked the other way round is just as "significant" unsigned...
    assert williams_test(r[0, 2], r[0, 1], r[1, 2], 5, Alternative.UNSIGNED) == unsigned
    # ...while the signed test says metric 2 is not better than metric 1.
    assert williams_test(r[0, 1], r[0, 2], r[1, 2], 5, Alternative.GREATER) == unsigned
    assert williams_test(r[0, 2], r[0, 1], r[1, 2], 5, Alternative.GREATER) == pytest.approx(
        1 - unsigned
    )


def test_assign_ranks_of_its_data_test():
    sig = np.array([0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0], float).reshape(4, 4)
    assert assign_ranks(sig, 0.5) == [1, 1, 1, 1]
    assert assign_ranks(sig, 1.0) == [1, 2, 3, 4]
    sig = np.array([0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0], float).reshape(4, 4)
    assert assign_ranks(sig, 0.5) == [1, 1, 2, 2]
    sig = np.array([0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], float).reshape(4, 4)
    assert assign_ranks(sig, 0.5) == [1, 2, 2, 3]


# --- random ragged data: the stored outputs of mt-metrics-eval --------------------------

CASES = REFERENCE["cases"]
SEGMENT = {"item": Level.SAMPLE, "none": Level.DATASET}


def _ours(data: dict[str, Any], key: str) -> float | tuple[float, float]:
    """Concordia's value for a reference key such as ``acc23_item_eps0.2``."""
    name, grouping, *rest = key.split("_")
    if name in ("pearson", "kendall"):
        coefficient = Coefficient.PEARSON if name == "pearson" else Coefficient.KENDALL_B
        return value(data, Level.SAMPLE, coefficient, average=Average.MICRO)
    if name == "pdp":
        return value(data, SEGMENT[grouping], Coefficient.PDP)
    if name == "like":
        threshold = float(rest[-1][1:])
        settings: dict[str, Any] = {"options": Options(threshold=threshold)}
        if grouping == "item":
            # Its item average weighs by counted pairs (micro); its macro average
            # counts a document without such pairs as 0: our ZERO policy.
            micro = rest[0] == "micro"
            settings["average"] = Average.MICRO if micro else Average.MACRO
            settings["policy"] = DegeneratePolicy.SKIP if micro else DegeneratePolicy.ZERO
        return value(data, SEGMENT[grouping], Coefficient.KENDALL_LIKE, **settings)
    coefficient = Coefficient.ACC23 if name == "acc23" else Coefficient.KENDALL_23
    if rest and rest[0] == "opt":
        grouping = rest[1] if grouping == "opt" else grouping
    if grouping == "opt":
        level = SEGMENT[rest[0]]
        result = calibrate_ties(
            data["metric"], data["human"], level=level, coefficient=coefficient, docs=data["docs"]
        )
        at_epsilon = value(data, level, coefficient, options=Options(epsilon=result.epsilon))
        assert at_epsilon == pytest.approx(result.value, abs=1e-12)
        return result.value, result.epsilon
    if rest == ["micro"]:
        return value(data, Level.SAMPLE, coefficient, average=Average.MICRO)
    epsilon = float(rest[0][3:])
    return value(data, SEGMENT[grouping], coefficient, options=Options(epsilon=epsilon))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_statistic_equals_mt_metrics_eval_on_random_ragged_data(case):
    reference = CASES[case]
    data = packed(reference["num_sys"], reference["gold"], reference["metric"])
    for key, expected in reference["expected"].items():
        got = _ours(data, key)
        if isinstance(expected, list):  # (value, ε) of tie calibration
            assert got[0] == pytest.approx(expected[0], abs=1e-9), key
            # Where several ε reach the maximum (a plateau), its ε must reach it too: its
            # running sums drift by an ulp and may pick a later point than our smallest.
            coefficient = Coefficient.ACC23 if key.startswith("acc23") else Coefficient.KENDALL_23
            level = SEGMENT[key.rsplit("_", 1)[1]]
            at_its_epsilon = value(data, level, coefficient, options=Options(epsilon=expected[1]))
            assert at_its_epsilon == pytest.approx(got[0], abs=1e-9), key
            continue
        assert got == pytest.approx(expected, abs=1e-9), key


def test_tie_calibration_picks_the_same_epsilon_as_mt_metrics_eval():
    differences = []
    for reference in CASES:
        data = packed(reference["num_sys"], reference["gold"], reference["metric"])
        for key in ("acc23_opt_item", "acc23_opt_none"):
            _, epsilon = _ours(data, key)  # type: ignore[misc]
            differences.append(abs(epsilon - reference["expected"][key][1]))
    assert max(differences) < 1e-12


@pytest.mark.parametrize("case", range(len(REFERENCE["spa"])))
def test_soft_pairwise_accuracy_equals_mt_metrics_eval_on_complete_data(case):
    reference = REFERENCE["spa"][case]
    data = packed(reference["num_sys"], reference["gold"], reference["metric"])
    assert value(data, Level.SYSTEM, Coefficient.SPA) == pytest.approx(
        reference["expected"], abs=1e-9
    )


def test_williams_p_values_equal_mt_metrics_eval():
    for case in REFERENCE["williams"]:
        args = (case["r12"], case["r13"], case["r23"], case["n"])
        assert williams_test(*args, Alternative.UNSIGNED) == pytest.approx(
            case["one_sided"], rel=1e-9
        )
        assert williams_test(*args) == pytest.approx(case["two_sided"], rel=1e-9)


def test_assign_ranks_equal_mt_metrics_eval():
    for case in REFERENCE["assign_ranks"]:
        assert assign_ranks(np.array(case["sig"]), case["pval"]) == case["ranks"]


def like(data: dict[str, Any], threshold: float, **settings: Any) -> Any:
    """Concordia's sample-level Kendall-like result on packed data."""
    options = Options(threshold=threshold)
    return correlate(
        data["metric"],
        data["human"],
        level=Level.SAMPLE,
        coefficient=Coefficient.KENDALL_LIKE,
        docs=data["docs"],
        systems=data["systems"],
        options=options,
        **settings,
    )


@pytest.mark.parametrize("case", range(len(CASES)))
def test_kendall_like_equals_mt_metrics_eval_micro_or_with_zero_but_not_at_macro_skip(case):
    reference = CASES[case]
    data = packed(reference["num_sys"], reference["gold"], reference["metric"])
    for threshold in (1.0, 2.0):
        micro = reference["expected"][
            f"like_item_micro_t{threshold}"
        ]  # its Correlation.KendallLike
        macro = reference["expected"][f"like_item_macro_t{threshold}"]  # its macro average
        # Micro weighs a document by its counted pairs, so one without any weighs 0
        # whatever the policy.
        for policy in DegeneratePolicy:
            got = like(data, threshold, average=Average.MICRO, policy=policy).value
            assert got == pytest.approx(micro, abs=1e-12)
        zero = like(data, threshold, average=Average.MACRO, policy=DegeneratePolicy.ZERO)
        assert zero.value == pytest.approx(macro, abs=1e-12)
        # The default, macro + SKIP, leaves out the documents without a counted pair
        # where it counts them as 0: the same sum over fewer documents.
        skip = like(data, threshold)
        assert skip.policy is DegeneratePolicy.SKIP and skip.average is Average.MACRO
        used = np.count_nonzero(skip.weights)
        assert skip.value * used == pytest.approx(macro * (used + skip.n_constant), abs=1e-9)
        if skip.n_constant and macro != 0:
            assert abs(skip.value - macro) > 1e-3


def test_kendall_like_at_macro_skip_differs_from_mt_metrics_eval_on_the_reference_cases():
    differences = []
    for reference in CASES:
        data = packed(reference["num_sys"], reference["gold"], reference["metric"])
        skip = like(data, 2.0)
        differences.append(abs(skip.value - reference["expected"]["like_item_macro_t2.0"]))
    assert sum(d > 1e-3 for d in differences) >= 3, differences


SPA_ROUNDING = REFERENCE["spa_rounding"]


@pytest.mark.parametrize("case", [c for c in SPA_ROUNDING if "gold" in c], ids=str)
def test_soft_pairwise_accuracy_counts_the_ties_mt_metrics_eval_rounds_away_in_float32(case):
    # Its SPA on one-decimal scores sums in float32 and may miss a permuted sum equal to
    # the observed one; on the same scores × 10 (integers: its sums are exact) it counts
    # them. Ours gives that exact value on the one-decimal scores themselves.
    data = packed(case["num_sys"], case["gold"], case["metric"])
    ours = value(data, Level.SYSTEM, Coefficient.SPA)
    assert ours == pytest.approx(case["exact"], abs=1e-12)
    assert abs(ours - case["float32"]) == pytest.approx(case["difference"], abs=1e-12)


def test_soft_pairwise_accuracy_does_not_change_with_the_scores_scale():
    rng = np.random.default_rng(5)
    for num_sys, num_items in [(2, 2), (3, 5), (4, 10), (6, 25)] * 5:
        tenths = rng.integers(0, 101, size=(2, num_sys * num_items))
        decimal = packed(num_sys, *(tenths / 10).tolist())
        integer = packed(num_sys, *tenths.tolist())
        assert value(decimal, Level.SYSTEM, Coefficient.SPA) == value(
            integer, Level.SYSTEM, Coefficient.SPA
        )


def test_the_docs_state_the_float32_rounding_measured_for_each_shape():
    readme = " ".join((ROOT / "docs" / "correlations.md").read_text().replace(",", "").split())
    stated = {
        (int(s), int(d)): float(bound)
        for bound, s, d in re.findall(r"([0-9.]+) \(([0-9]+) systems? × ([0-9]+) documents", readme)
    }
    measured = {(c["num_sys"], c["num_items"]): c["difference"] for c in SPA_ROUNDING}
    assert set(measured) <= set(stated), stated
    for shape, difference in measured.items():
        assert stated[shape] == pytest.approx(difference, rel=0.05), shape


@pytest.mark.parametrize("case", range(len(REFERENCE["average_ranks"])))
def test_average_ranks_equal_mt_metrics_eval_for_weights_summing_to_one(case):
    reference = REFERENCE["average_ranks"][case]
    weights = reference["weights"]
    ours = average_ranks(reference["tables"], weights)
    total = 1.0 if weights is None else sum(weights)
    # Ours is a weighted mean; its AverageRanks sums rank × weight as given.
    expected = {m: v / total for m, v in reference["expected"].items()}
    assert ours == pytest.approx(expected, abs=1e-12)
    assert sorted(ours.values()) == list(ours.values())
    if weights is None or math.isclose(total, 1.0):
        assert ours == pytest.approx(reference["expected"], abs=1e-12)
    else:
        assert ours != pytest.approx(reference["expected"], abs=1e-3)


def test_reference_cases_exercise_missing_judgments_ties_and_the_pooled_sorting_path():
    largest = max(len(c["gold"]) for c in CASES)
    assert largest > 256  # pooled: counted by sorting, not by listing pairs
    gold = [g for c in CASES for g in c["gold"]]
    assert any(g is None for g in gold) and len(set(gold)) < 8
    values = [v for c in CASES for e in c["expected"].values() for v in np.ravel(e)]
    assert not any(math.isnan(v) for v in values)
