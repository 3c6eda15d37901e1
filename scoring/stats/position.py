"""Position bias in pairwise judgments: do annotators prefer the output shown on the left?

Each answer is coded in the pair's own frame, ``PREFERS_A`` (1), ``TIE`` (0) or
``PREFERS_B`` (-1), together with the side output A was shown on (``left_is_a``). The
answer chose the **left** side when it preferred A shown on the left, or B shown on the
left. Sides are drawn at random per answer, so without a position bias the share of
left choices among the non-tie answers is 0.5 whatever the outputs' quality:

* :func:`side_share` tests that share against 0.5 with an exact two-sided binomial test
  (``scipy.stats.binomtest``), ties left out of the test and counted;
* :func:`flip_rate` looks at the units (an item on an aspect) answered in both orders
  (A on the left in one answer, B on the left in another) and counts, over every pair of
  such answers in opposite orders, how often the preferred output differs (a "flip").
  Beside it, the same count over pairs of answers given in the same order: annotators
  who judge content alone flip as often across orders as they disagree within one,
  annotators who favour a side flip more.

The pairs of answers may come from one annotator who saw the unit twice or from two
annotators; the caller says which (in a Concordia campaign an annotator sees an item
once, so they are always two annotators and a flip mixes position bias with ordinary
disagreement: compare it with the same-order rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from scoring.stats.ranking import BoolArray, IntArray

PREFERS_A, TIE, PREFERS_B = 1, 0, -1


@dataclass(frozen=True)
class SideShare:
    """Left and right choices (ties apart), the share of left choices with its exact
    (Clopper-Pearson) interval, and the two-sided binomial test's p against 0.5; NaN
    when there was no non-tie answer."""

    n_left: int
    n_right: int
    n_ties: int
    share_left: float
    low: float
    high: float
    p_value: float

    @property
    def n_sided(self) -> int:
        return self.n_left + self.n_right


@dataclass(frozen=True)
class FlipRate:
    """Flips across orders and disagreements within an order, over pairs of answers on
    the same unit; ``n_units`` units were answered in both orders. Pairs holding a tie
    are left out and counted in ``n_tie_pairs``. Rates are NaN without pairs."""

    n_units: int
    n_pairs: int
    n_flips: int
    n_tie_pairs: int
    n_same_order_pairs: int
    n_same_order_disagreements: int

    @property
    def rate(self) -> float:
        return self.n_flips / self.n_pairs if self.n_pairs else math.nan

    @property
    def same_order_rate(self) -> float:
        n = self.n_same_order_pairs
        return self.n_same_order_disagreements / n if n else math.nan


@dataclass(frozen=True)
class PositionBias:
    """The whole set's side share, each annotator's (keys sorted) and the flip rate."""

    overall: SideShare
    annotators: dict[Any, SideShare]
    flips: FlipRate


def side_share(n_left: int, n_right: int, n_ties: int = 0, confidence: float = 0.95) -> SideShare:
    """The share of left choices among ``n_left + n_right`` and its test against 0.5."""
    if min(n_left, n_right, n_ties) < 0:
        raise ValueError("counts must be ≥ 0")
    n = n_left + n_right
    if n == 0:
        return SideShare(n_left, n_right, n_ties, math.nan, math.nan, math.nan, math.nan)
    test = stats.binomtest(n_left, n, 0.5, alternative="two-sided")
    interval = test.proportion_ci(confidence_level=confidence, method="exact")
    return SideShare(
        n_left,
        n_right,
        n_ties,
        n_left / n,
        float(interval.low),
        float(interval.high),
        float(test.pvalue),
    )


def chose_left(choice: npt.ArrayLike, left_is_a: npt.ArrayLike) -> IntArray:
    """Per answer: 1 if it chose the left side, 0 the right side, -1 a tie."""
    codes, a_left = _check(choice, left_is_a)
    left = ((codes == PREFERS_A) & a_left) | ((codes == PREFERS_B) & ~a_left)
    return np.where(codes == TIE, -1, left.astype(np.intp)).astype(np.intp)


def position_bias(
    annotator_key: npt.ArrayLike,
    unit_key: npt.ArrayLike,
    choice: npt.ArrayLike,
    left_is_a: npt.ArrayLike,
    confidence: float = 0.95,
) -> PositionBias:
    """Side shares overall and per annotator, and the flip rate over ``unit_key``s."""
    annotators = np.asarray(annotator_key)
    sides = chose_left(choice, left_is_a)
    if annotators.shape != sides.shape:
        raise ValueError("annotator_key, unit_key, choice and left_is_a must be aligned")

    def share(mask: BoolArray) -> SideShare:
        chosen = sides[mask]
        return side_share(
            int(np.count_nonzero(chosen == 1)),
            int(np.count_nonzero(chosen == 0)),
            int(np.count_nonzero(chosen == -1)),
            confidence,
        )

    return PositionBias(
        overall=share(np.ones(sides.size, dtype=bool)),
        annotators={key: share(annotators == key) for key in np.unique(annotators).tolist()},
        flips=flip_rate(unit_key, choice, left_is_a),
    )


def flip_rate(unit_key: npt.ArrayLike, choice: npt.ArrayLike, left_is_a: npt.ArrayLike) -> FlipRate:
    """Flips between answers on the same unit given in opposite orders, and
    disagreements between answers given in the same order (see the module)."""
    codes, a_left = _check(choice, left_is_a)
    units = np.asarray(unit_key)
    if units.shape != codes.shape:
        raise ValueError("unit_key, choice and left_is_a must be aligned")
    if codes.size == 0:
        return FlipRate(0, 0, 0, 0, 0, 0)
    _, unit = np.unique(units, return_inverse=True)
    n_units = int(unit.max()) + 1
    # per unit and order: answers preferring A, preferring B, ties
    counts = np.zeros((n_units, 2, 3), dtype=np.int64)
    np.add.at(counts, (unit, (~a_left).astype(np.intp), 1 - codes), 1)
    a, ties, b = counts[..., 0], counts[..., 1], counts[..., 2]
    total = a + b + ties
    both = (total[:, 0] > 0) & (total[:, 1] > 0)
    sided = a + b
    cross_pairs = total[:, 0] * total[:, 1]
    cross_sided = sided[:, 0] * sided[:, 1]
    flips = a[:, 0] * b[:, 1] + b[:, 0] * a[:, 1]
    same_pairs = sided * (sided - 1) // 2
    return FlipRate(
        n_units=int(np.count_nonzero(both)),
        n_pairs=int(cross_sided.sum()),
        n_flips=int(flips.sum()),
        n_tie_pairs=int((cross_pairs - cross_sided).sum()),
        n_same_order_pairs=int(same_pairs.sum()),
        n_same_order_disagreements=int((a * b).sum()),
    )


def _check(choice: npt.ArrayLike, left_is_a: npt.ArrayLike) -> tuple[IntArray, BoolArray]:
    codes = np.asarray(choice)
    a_left = np.asarray(left_is_a, dtype=bool)
    if codes.ndim != 1 or codes.shape != a_left.shape:
        raise ValueError("choice and left_is_a must be 1-D and aligned")
    if codes.size and not np.isin(codes, (PREFERS_A, TIE, PREFERS_B)).all():
        raise ValueError("choice must be 1 (prefers A), 0 (tie) or -1 (prefers B)")
    return codes.astype(np.intp), a_left
