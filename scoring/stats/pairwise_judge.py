"""A pairwise judge's two orders: its verdicts, how often they survive the swap, and
whether it favours the output shown first.

Each pair (a first and a second output) was judged in two orders, ``ab`` (the first
output shown as A) and ``ba`` (shown as B). Each order gives a distribution over the
answers in its own frame, rows ``[p(A), p(B)]`` or ``[p(A), p(B), p(tie)]``.

* An order's **verdict** is its most probable answer; a tie answer, or two answers
  sharing the top probability, is a tie. In the pair's frame, ``ab``'s A is the first
  output, ``ba``'s A the second.
* **Position consistency**: the share of pairs whose two verdicts name the same output
  in the pair's frame (a tie in both orders is consistent too).
* **First-position preference**: over every order of every pair, the verdicts choosing
  the output shown first (A) against those choosing the second (B), ties apart, with
  the exact binomial test against 0.5 of :func:`scoring.stats.position.side_share`
  (a verdict is "left" when it chose position A). ``mean_first`` is the mean of
  p(A) / (p(A) + p(B)) over the orders: the soft version of the same share.
* A pair's **vote** (``PREFERS_A`` = the first output, ``TIE``, ``PREFERS_B``, as
  :mod:`scoring.stats.judge_agreement` takes them): ``"average"``, the most probable
  answer of the preference averaged over the orders (first and second equally
  probable: a tie); ``"consistent"``, MT-Bench's swap rule (Zheng et al. 2023): a win
  only when both orders' verdicts name it, a tie otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from scoring.stats.position import PREFERS_A, PREFERS_B, TIE, SideShare, side_share
from scoring.stats.ranking import FloatArray, IntArray

VoteRule = Literal["average", "consistent"]
VOTE_RULES: tuple[VoteRule, ...] = ("average", "consistent")


def _orders(ab: npt.ArrayLike, ba: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Both orders as pairs × 3 (p(tie) = 0 where the run allowed no ties)."""
    out = []
    for name, probs in (("ab", ab), ("ba", ba)):
        p = np.asarray(probs, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] not in (2, 3):
            raise ValueError(f"{name} must be pairs × 2 or pairs × 3 probabilities")
        if p.shape[1] == 2:
            p = np.hstack([p, np.zeros((p.shape[0], 1))])
        out.append(p)
    if out[0].shape != out[1].shape:
        raise ValueError("ab and ba must have one row per pair")
    return out[0], out[1]


def verdicts(probs: npt.ArrayLike) -> IntArray:
    """Per row of an order's distribution (× 2 or × 3): 0 when A is the single most
    probable answer, 1 when B is, 2 for a tie (the tie answer on top, or a shared top)."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] not in (2, 3):
        raise ValueError("probabilities must be rows × 2 or rows × 3")
    top = p.max(axis=1, keepdims=True)
    at_top = p == top
    single = at_top.sum(axis=1) == 1
    return np.where(single, np.argmax(p, axis=1), 2).astype(np.intp)


def frame_verdicts(ab: npt.ArrayLike, ba: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """Both orders' verdicts in the pair's frame, coded ``PREFERS_A`` (the first
    output), ``TIE`` or ``PREFERS_B`` (the second)."""
    a, b = _orders(ab, ba)
    in_ab = np.array([PREFERS_A, PREFERS_B, TIE])[verdicts(a)]
    in_ba = np.array([PREFERS_B, PREFERS_A, TIE])[verdicts(b)]
    return in_ab.astype(np.intp), in_ba.astype(np.intp)


def preferences(ab: npt.ArrayLike, ba: npt.ArrayLike) -> FloatArray:
    """Per pair, (p(first better), p(second better), p(tie)) averaged over the orders."""
    a, b = _orders(ab, ba)
    return np.stack([(a[:, 0] + b[:, 1]) / 2, (a[:, 1] + b[:, 0]) / 2, (a[:, 2] + b[:, 2]) / 2], 1)


def pair_scores(ab: npt.ArrayLike, ba: npt.ArrayLike) -> FloatArray:
    """Per pair, the first output's P(win) + ½·P(tie) averaged over the orders."""
    pref = preferences(ab, ba)
    return np.asarray(pref[:, 0] + pref[:, 2] / 2.0, dtype=np.float64)


def votes(ab: npt.ArrayLike, ba: npt.ArrayLike, rule: VoteRule = "average") -> IntArray:
    """Each pair's vote in its frame (see the module's docstring for the rules)."""
    if rule == "average":
        codes = np.array([PREFERS_A, PREFERS_B, TIE])[verdicts(preferences(ab, ba))]
        return codes.astype(np.intp)
    if rule == "consistent":
        one, two = frame_verdicts(ab, ba)
        return np.where(one == two, one, TIE).astype(np.intp)
    raise ValueError(f"unknown vote rule {rule!r}: use one of {', '.join(VOTE_RULES)}")


@dataclass(frozen=True)
class Consistency:
    """Pairs whose verdict survives the swap, of ``n`` pairs (NaN share without pairs)."""

    n: int
    n_consistent: int

    @property
    def share(self) -> float:
        return self.n_consistent / self.n if self.n else math.nan


def position_consistency(ab: npt.ArrayLike, ba: npt.ArrayLike) -> Consistency:
    """How many pairs' two verdicts name the same output (or both a tie)."""
    one, two = frame_verdicts(ab, ba)
    return Consistency(int(one.size), int(np.count_nonzero(one == two)))


@dataclass(frozen=True)
class FirstPosition:
    """The verdicts choosing position A against position B (``share``: the test of
    :func:`~scoring.stats.position.side_share`, "left" being A) and the mean soft share
    p(A) / (p(A) + p(B)) over the orders."""

    share: SideShare
    mean_first: float


def first_position(ab: npt.ArrayLike, ba: npt.ArrayLike, confidence: float = 0.95) -> FirstPosition:
    """The judge's first-position preference over both orders of every pair."""
    a, b = _orders(ab, ba)
    both = np.vstack([a, b])
    found = verdicts(both)
    counts = [int(np.count_nonzero(found == v)) for v in (0, 1, 2)]
    sided = both[:, 0] + both[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        soft = both[:, 0] / sided
    soft = soft[np.isfinite(soft)]
    return FirstPosition(
        side_share(counts[0], counts[1], counts[2], confidence),
        float(soft.mean()) if soft.size else math.nan,
    )
