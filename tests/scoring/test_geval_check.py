"""The G-Eval form check: label mass, flatness and one argmax, each against its threshold."""

from __future__ import annotations

import math
import statistics

import pytest

from scoring.metrics.geval_check import (
    FLATNESS_MAX,
    LABEL_MASS_MIN,
    MIN_OUTPUTS,
    SAME_ARGMAX_MAX,
    check_distributions,
)

# Distributions and label masses that SmolLM2-135M-Instruct (the default model) stored for
# four outputs of the demo (coherence, chat template, generated steps): argmax 1 every time.
SMALL_MODEL = [
    ({"1": 0.4142, "2": 0.1609, "3": 0.2887, "4": 0.0547, "5": 0.0814}, 0.0259),
    ({"1": 0.5121, "2": 0.1454, "3": 0.2345, "4": 0.0472, "5": 0.0608}, 0.0263),
    ({"1": 0.3869, "2": 0.1506, "3": 0.3197, "4": 0.0566, "5": 0.0862}, 0.0389),
    ({"1": 0.5612, "2": 0.1379, "3": 0.1934, "4": 0.0486, "5": 0.0590}, 0.0255),
]


def _peaked(label: int, p: float = 0.8) -> dict[str, float]:
    rest = (1 - p) / 4
    return {str(v): (p if v == label else rest) for v in range(1, 6)}


def _entropy(dist: dict[str, float]) -> float:
    return -sum(p * math.log(p) for p in dist.values() if p > 0)


def test_the_default_small_model_fails_all_three_checks():
    rows = SMALL_MODEL * 3
    check = check_distributions([d for d, _ in rows], [m for _, m in rows])
    assert check is not None and check.warns and len(check.problems) == 3
    assert check.n_outputs == 12 and check.n_labels == 5
    assert check.label_mass == pytest.approx(statistics.median(m for _, m in rows))
    assert check.top_label == "1" and check.top_share == 1.0
    assert check.entropy == pytest.approx(statistics.median(_entropy(d) for d, _ in rows))
    assert check.flatness == pytest.approx(check.entropy / math.log(5))
    assert check.flatness > FLATNESS_MAX and check.label_mass < LABEL_MASS_MIN
    text = " ".join(check.problems)
    assert "warning below 50%" in text and "warning above 75%" in text
    assert "the most probable label is 1 for 100% of the 12 outputs" in text


def test_a_confident_model_that_tells_outputs_apart_passes():
    dists = [_peaked(1 + k % 5) for k in range(20)]
    check = check_distributions(dists, [0.95] * 20)
    assert check is not None and not check.warns and check.problems == ()
    assert check.top_share == pytest.approx(0.2)


def test_a_confident_model_giving_one_label_to_everything_fails_only_the_argmax_check():
    check = check_distributions([_peaked(1, 0.97)] * MIN_OUTPUTS, [0.9] * MIN_OUTPUTS)
    assert check is not None and check.flatness < 0.2
    assert len(check.problems) == 1 and "most probable label is 1" in check.problems[0]


def test_one_argmax_needs_enough_outputs_and_a_large_enough_share():
    few = check_distributions([_peaked(3)] * (MIN_OUTPUTS - 1), [0.9] * (MIN_OUTPUTS - 1))
    assert few is not None and not few.warns
    n = 20
    below = int(SAME_ARGMAX_MAX * n) - 1  # 17 of 20 = 85%
    dists = [_peaked(3)] * below + [_peaked(5)] * (n - below)
    assert not check_distributions(dists, [0.9] * n).warns
    at = int(SAME_ARGMAX_MAX * n)  # 18 of 20 = 90%
    dists = [_peaked(3)] * at + [_peaked(5)] * (n - at)
    assert check_distributions(dists, [0.9] * n).warns


@pytest.mark.parametrize(
    ("mass", "warns"), [(LABEL_MASS_MIN, False), (LABEL_MASS_MIN - 0.01, True)]
)
def test_label_mass_threshold(mass, warns):
    check = check_distributions([_peaked(2), _peaked(4)], [mass, mass])
    assert check is not None and check.warns is warns


def test_labels_are_read_in_scale_order_whatever_the_key_order():
    """PostgreSQL's jsonb keeps keys by length, then bytes: "10" before "2"."""
    flat_tie = {"10": 0.3, "2": 0.3, "1": 0.4}
    tie = {"3": 0.5, "1": 0.0, "2": 0.5}  # a tie goes to the first label of the scale
    check = check_distributions([flat_tie, tie], [None, None])
    assert check is not None and check.n_labels == 3
    assert check.label_mass is None  # not recorded (sampled runs): no mass check
    tops = check_distributions([tie], [None])
    assert tops is not None and tops.top_label == "2"


def test_nothing_to_check_and_misaligned_input():
    assert check_distributions([], []) is None
    assert check_distributions([{"1": 1.0}], [1.0]) is None  # one label: no distribution
    with pytest.raises(ValueError, match="one label mass"):
        check_distributions([_peaked(1)], [])
