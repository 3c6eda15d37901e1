"""A threshold chosen on a declared split: the best cut equals a brute force with
scikit-learn's statistics, it is never applied to its own items, and a one-class split
gives NaN with its reason."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef, roc_curve

from scoring.stats.threshold import apply_threshold, choose_threshold

REFERENCE = {
    "mcc": matthews_corrcoef,
    "accuracy": accuracy_score,
    "f1": lambda y, p: f1_score(y, p, zero_division=0.0),
}


@pytest.mark.parametrize("criterion", ["mcc", "accuracy", "f1", "youden"])
def test_the_chosen_cut_is_the_best_one_a_brute_force_finds(criterion: str) -> None:
    rng = np.random.default_rng(7)
    for case in range(60):
        n = int(rng.integers(4, 40))
        truth = rng.random(n) < rng.uniform(0.2, 0.8)
        if truth.all() or not truth.any():
            truth[0] = not truth[0]
        scores = np.round(rng.normal(truth * rng.uniform(0, 2), 1.0), int(rng.integers(0, 3)))
        keys = list(range(n))
        found = choose_threshold(
            keys, scores.tolist(), truth.tolist(), split="dev", criterion=criterion
        )
        predicted = scores > found.value
        if criterion == "youden":
            fpr, tpr, _ = roc_curve(truth, scores)
            best = float(np.max(tpr - fpr))
            got = predicted[truth].mean() + (~predicted[~truth]).mean() - 1
        else:
            cuts = np.concatenate([[-np.inf], np.unique(scores)])
            best = max(float(REFERENCE[criterion](truth, scores > c)) for c in cuts)
            got = float(REFERENCE[criterion](truth, predicted))
        assert found.statistic == pytest.approx(best, abs=1e-12), case
        assert got == pytest.approx(best, abs=1e-12), case
        assert found.split == "dev" and found.chosen_on == frozenset(keys)


def test_it_labels_only_other_items_and_says_which_split() -> None:
    dev = choose_threshold(["a", "b", "c", "d"], [0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], split="dev")
    assert dev.value == pytest.approx(0.5) and dev.statistic == 1.0
    assert apply_threshold(dev, ["x", "y", "z"], [0.4, 0.6, math.nan]) == [False, True, None]
    with pytest.raises(ValueError, match="of the split 'dev' the threshold was chosen on"):
        apply_threshold(dev, ["x", "c"], [0.4, 0.9])
    assert "chosen on split 'dev' (2 positive, 2 negative; mcc 1.000 there)" in dev.describe()
    lower = choose_threshold(
        ["a", "b", "c", "d"],
        [0.1, 0.2, 0.8, 0.9],
        [1, 1, 0, 0],
        split="dev",
        higher_is_positive=False,
    )
    assert lower.value == pytest.approx(0.5)
    assert apply_threshold(lower, ["x", "y"], [0.4, 0.6]) == [True, False]


def test_a_one_class_split_gives_nan_with_its_reason() -> None:
    one = choose_threshold(["a", "b"], [0.1, 0.7], [True, True], split="dev")
    assert math.isnan(one.value) and "no negative item" in one.reason
    assert apply_threshold(one, ["x"], [0.3]) == [None]
    assert "no threshold on 'dev'" in one.describe()
    with pytest.raises(ValueError, match="declare the split"):
        choose_threshold(["a"], [0.1], [True], split=" ")
