"""A numeric metric meeting a binary aspect: a threshold chosen on a declared split, and
never on the items it labels.

:func:`choose_threshold` picks, on the items of one named split (a development split,
a held-out set of documents), the cut that maximises a criterion (MCC by default;
Youden's J = TPR + TNR − 1, accuracy or the positive label's F1) among the midpoints
between consecutive distinct scores and the two open ends; ties go to the middle one of
the tied cuts. It keeps the split's name and the keys of the items it
was chosen on. :func:`apply_threshold` labels other items (score above the cut: the
positive label; ``higher_is_positive=False`` flips it) and refuses any item the
threshold was chosen on, so a statistic of the labels is never computed on the
threshold's own items. A split with one class only, or no scores, gives a NaN
threshold with its reason (and labels nothing).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

CRITERIA = ("mcc", "youden", "accuracy", "f1")


@dataclass(frozen=True)
class Threshold:
    """A cut on a metric's scores, and where it came from.

    ``split``: the declared split it was chosen on; ``chosen_on``: the keys of its items;
    ``statistic``: the criterion's value there; ``reason``: why ``value`` is NaN."""

    value: float
    split: str
    criterion: str
    higher_is_positive: bool
    chosen_on: frozenset[Hashable]
    n_positive: int
    n_negative: int
    statistic: float
    reason: str = ""

    def describe(self) -> str:
        """One line for a page or an export: the cut, the split, the criterion."""
        if math.isnan(self.value):
            return f"no threshold on {self.split!r}: {self.reason}"
        side = ">" if self.higher_is_positive else "<"
        return (
            f"positive when score {side} {self.value:.6g}, chosen on split {self.split!r} "
            f"({self.n_positive} positive, {self.n_negative} negative; "
            f"{self.criterion} {self.statistic:.3f} there)"
        )


Floats = npt.NDArray[np.float64]


def _criterion(name: str, tp: Floats, fp: Floats, tn: Floats, fn: Floats) -> Floats:
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "youden":
            out: Floats = tp / (tp + fn) + tn / (tn + fp) - 1.0
            return out
        if name == "accuracy":
            out = (tp + tn) / (tp + tn + fp + fn)
            return out
        if name == "f1":
            out = 2 * tp / (2 * tp + fp + fn)
            return np.where(2 * tp + fp + fn > 0, out, 0.0)
        denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return np.where(denominator > 0, (tp * tn - fp * fn) / denominator, 0.0)


def choose_threshold(
    keys: Sequence[Hashable],
    scores: Sequence[float],
    positive: Sequence[bool],
    *,
    split: str,
    criterion: str = "mcc",
    higher_is_positive: bool = True,
) -> Threshold:
    """The cut maximising ``criterion`` on the items of ``split`` (see the module).

    Items whose score is NaN are left out (and are not in ``chosen_on``)."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}")
    if not split.strip():
        raise ValueError("declare the split the threshold is chosen on")
    if not len(keys) == len(scores) == len(positive):
        raise ValueError("one score and one label per key")
    if len(set(keys)) != len(keys):
        raise ValueError("the keys must be distinct")
    values = np.asarray(scores, dtype=float)
    truth = np.asarray(positive, dtype=bool)
    kept = ~np.isnan(values)
    chosen = frozenset(k for k, keep in zip(keys, kept, strict=True) if keep)
    values, truth = values[kept], truth[kept]
    if not higher_is_positive:
        values = -values
    n_pos, n_neg = int(truth.sum()), int((~truth).sum())

    def nan(reason: str) -> Threshold:
        return Threshold(
            math.nan, split, criterion, higher_is_positive, chosen, n_pos, n_neg, math.nan, reason
        )

    if n_pos == 0 or n_neg == 0:
        which = "positive" if n_pos == 0 else "negative"
        return nan(f"the split has no {which} item to choose a threshold between")
    if not np.all(np.isfinite(values)):
        return nan("a score is infinite")
    distinct = np.unique(values)
    cuts = np.concatenate(
        [[distinct[0] - 1.0], (distinct[:-1] + distinct[1:]) / 2, [distinct[-1] + 1.0]]
    )
    order = np.sort(values)
    positives = np.sort(values[truth])
    # predicted positive: score > cut; counts by binary search on the sorted scores
    above = len(order) - np.searchsorted(order, cuts, side="right")
    tp = (len(positives) - np.searchsorted(positives, cuts, side="right")).astype(float)
    fp = above - tp
    fn = n_pos - tp
    tn = n_neg - fp
    found = _criterion(criterion, tp, fp, tn, fn)
    best = np.flatnonzero(found == found.max())
    pick = int(best[(len(best) - 1) // 2])
    cut = float(cuts[pick])
    return Threshold(
        cut if higher_is_positive else -cut,
        split,
        criterion,
        higher_is_positive,
        chosen,
        n_pos,
        n_neg,
        float(found[pick]),
    )


def apply_threshold(
    threshold: Threshold, keys: Sequence[Hashable], scores: Sequence[float]
) -> list[bool | None]:
    """Each item's predicted label (True: the positive one; None: no score, or a NaN
    threshold); a ValueError when an item is one the threshold was chosen on."""
    if len(keys) != len(scores):
        raise ValueError("one score per key")
    reused = [k for k in keys if k in threshold.chosen_on]
    if reused:
        raise ValueError(
            f"{len(reused)} of these items (first {reused[0]!r}) are of the split "
            f"{threshold.split!r} the threshold was chosen on: evaluate on other items"
        )
    out: list[bool | None] = []
    for value in scores:
        if math.isnan(threshold.value) or value is None or math.isnan(value):
            out.append(None)
        elif threshold.higher_is_positive:
            out.append(bool(value > threshold.value))
        else:
            out.append(bool(value < threshold.value))
    return out
