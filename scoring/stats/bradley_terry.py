"""Systems ranked from pairwise preferences: win rates and Bradley–Terry strengths with
bootstrap intervals over documents.

Each judged pair of outputs (of one document, from systems i and j) carries the
probability that i's output is better, ties counted as half a win each way
(``score = P(i better) + ½·P(tie)``); j's share is ``1 − score``. These fractional wins
are summed into a wins matrix ``W`` (``W[i, j]``: i's wins over j) per document.

* **Win rate** of a system: its mean score over the pairs it is in.
* **Bradley–Terry** (Bradley & Terry 1952): P(i beats j) = γᵢ / (γᵢ + γⱼ). The maximum-
  likelihood strengths are found by the MM (Zermelo) iteration of Hunter (2004),
  γᵢ ← Wᵢ / Σⱼ Nᵢⱼ / (γᵢ + γⱼ), with Wᵢ i's total wins and Nᵢⱼ = Wᵢⱼ + Wⱼᵢ the
  comparisons of i and j; it increases the likelihood at every step and converges to
  the maximum whenever one exists. The strengths are identified by centring the
  log-strengths θ = log γ at mean 0. The maximum exists exactly when the directed graph
  of wins (an arc i → j when Wᵢⱼ > 0) is strongly connected (Ford 1957): a system
  that never loses, or a group that never loses to the rest, has no finite strength,
  and the fit is then undefined (NaN).
* **Intervals**: documents are resampled with replacement (the caller's seeded
  generator, :func:`scoring.stats.resampling.draw_resamples`); each resample's wins are
  the drawn documents' matrices summed (a product of draw counts and matrices), and all
  resamples are fitted at once. Percentile intervals; a resample with no finite fit
  (a system drawn out, or never losing) is left out and counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import FloatArray, Groups, IntArray
from scoring.stats.resampling import Resamples, Unit, draw_resamples

TOLERANCE = 1e-10  # largest change of a log-strength between iterations at convergence
MAX_ITERATIONS = 100_000


def wins_by_document(
    docs: Groups | npt.ArrayLike,
    first: npt.ArrayLike,
    second: npt.ArrayLike,
    score: npt.ArrayLike,
    n_systems: int,
) -> tuple[Groups, FloatArray]:
    """Per document (documents × systems × systems), the fractional wins: pair k adds
    ``score[k]`` to ``W[first[k], second[k]]`` and ``1 − score[k]`` to the reverse."""
    i = np.asarray(first, dtype=np.intp).reshape(-1)
    j = np.asarray(second, dtype=np.intp).reshape(-1)
    s = np.asarray(score, dtype=np.float64).reshape(-1)
    groups = docs if isinstance(docs, Groups) else Groups.from_keys(docs)
    if not (i.size == j.size == s.size == groups.n_items):
        raise ValueError("docs, first, second and score must have one entry per pair")
    if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n_systems):
        raise ValueError("systems must be coded 0..n_systems-1")
    if np.any(i == j):
        raise ValueError("a pair joins two different systems")
    if np.any(~np.isfinite(s)) or np.any((s < 0) | (s > 1)):
        raise ValueError("scores must lie in [0, 1]")
    wins = np.zeros((groups.n_groups, n_systems, n_systems))
    np.add.at(wins, (groups.codes, i, j), s)
    np.add.at(wins, (groups.codes, j, i), 1.0 - s)
    return groups, wins


def win_rates(
    first: npt.ArrayLike, second: npt.ArrayLike, score: npt.ArrayLike, n_systems: int
) -> tuple[FloatArray, IntArray]:
    """Each system's mean score over its pairs (NaN for a system in none) and its number
    of pairs."""
    i = np.asarray(first, dtype=np.intp).reshape(-1)
    j = np.asarray(second, dtype=np.intp).reshape(-1)
    s = np.asarray(score, dtype=np.float64).reshape(-1)
    total = np.bincount(i, s, n_systems) + np.bincount(j, 1.0 - s, n_systems)
    count = np.bincount(i, minlength=n_systems) + np.bincount(j, minlength=n_systems)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return np.asarray(rates, dtype=np.float64), count.astype(np.intp)


def strongly_connected(wins: FloatArray) -> npt.NDArray[np.bool_]:
    """Per matrix of ``wins`` (… × S × S): whether every system reaches every other by
    arcs i → j where i has wins over j (the condition for a finite maximum)."""
    w = np.asarray(wins, dtype=np.float64)
    size = w.shape[-1]
    reach = ((w > 0) | np.eye(size, dtype=bool)).astype(np.float64)
    for _ in range(max(1, math.ceil(math.log2(max(size, 2))))):
        reach = np.minimum(reach @ reach, 1.0)
    return np.asarray(np.all(reach > 0, axis=(-2, -1)), dtype=np.bool_)


def bradley_terry(
    wins: npt.ArrayLike, *, tolerance: float = TOLERANCE, max_iterations: int = MAX_ITERATIONS
) -> FloatArray:
    """Centred log-strengths θ (mean 0) maximising the Bradley–Terry likelihood of the
    fractional ``wins`` (S × S, or a stack … × S × S fitted at once); NaN for a matrix
    whose win graph is not strongly connected (no finite maximum)."""
    w = np.asarray(wins, dtype=np.float64)
    if w.ndim < 2 or w.shape[-1] != w.shape[-2] or w.shape[-1] < 2:
        raise ValueError("wins must be S × S (or stacked), with S ≥ 2")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("wins must be finite and ≥ 0")
    flat = w.reshape(-1, w.shape[-1], w.shape[-1]) * (1.0 - np.eye(w.shape[-1]))
    ok = strongly_connected(flat)
    theta = np.full(flat.shape[:2], np.nan)
    if ok.any():
        theta[ok] = _mm(flat[ok], tolerance, max_iterations)
    return np.asarray(theta.reshape(w.shape[:-1]), dtype=np.float64)


def _mm(wins: FloatArray, tolerance: float, max_iterations: int) -> FloatArray:
    """Hunter's MM iteration on strongly connected matrices (batch × S × S)."""
    total = wins.sum(axis=2)  # Wᵢ
    games = wins + np.swapaxes(wins, 1, 2)  # Nᵢⱼ
    theta = np.zeros(total.shape)
    for _ in range(max_iterations):
        gamma = np.exp(theta)
        denominator = np.sum(games / (gamma[:, :, None] + gamma[:, None, :]), axis=2)
        updated = np.log(total) - np.log(denominator)
        updated -= updated.mean(axis=1, keepdims=True)
        change = float(np.max(np.abs(updated - theta)))
        theta = updated
        if change < tolerance:
            break
    return theta


def log_likelihood(theta: npt.ArrayLike, wins: npt.ArrayLike) -> float:
    """Σᵢⱼ Wᵢⱼ · log(γᵢ / (γᵢ + γⱼ)) at log-strengths ``theta`` (for checks)."""
    t = np.asarray(theta, dtype=np.float64)
    w = np.asarray(wins, dtype=np.float64) * (1.0 - np.eye(t.size))
    return float(np.sum(w * (t[:, None] - np.logaddexp(t[:, None], t[None, :]))))


@dataclass(frozen=True)
class SystemRanking:
    """Per system (``systems``, in the order of their codes): win rate and pairs, the
    Bradley–Terry log-strength with its percentile interval over resampled documents
    (NaN without resamples or when undefined). ``n_undefined`` resamples had no finite
    fit and were left out."""

    systems: tuple[Any, ...]
    win_rate: FloatArray
    n_pairs: IntArray
    strength: FloatArray
    low: FloatArray
    high: FloatArray
    n_documents: int
    resamples: int
    n_undefined: int
    confidence: float


def rank_systems(
    docs: npt.ArrayLike,
    first: npt.ArrayLike,
    second: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    systems: tuple[Any, ...] | None = None,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
    plan: Resamples | None = None,
    confidence: float = 0.95,
) -> SystemRanking:
    """Win rates and Bradley–Terry strengths of the systems coded in ``first`` and
    ``second`` (0..S−1; ``systems`` names them) from each pair's ``score`` (the first
    system's P(win) + ½·P(tie)), with intervals over documents from ``plan`` or, given
    ``rng``, from ``resamples`` fresh draws."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie in (0, 1)")
    i = np.asarray(first, dtype=np.intp).reshape(-1)
    j = np.asarray(second, dtype=np.intp).reshape(-1)
    n = len(systems) if systems is not None else int(max(i.max(initial=-1), j.max(initial=-1)) + 1)
    names = systems if systems is not None else tuple(range(n))
    groups, wins = wins_by_document(docs, i, j, score, n)
    rates, counts = win_rates(i, j, score, n)
    strength = bradley_terry(wins.sum(axis=0)) if n >= 2 else np.full(n, np.nan)
    if plan is None and rng is not None and groups.n_groups:
        plan = draw_resamples(rng, groups, unit=Unit.DOCUMENTS, resamples=resamples)
    low = high = np.full(n, np.nan)
    undefined = 0
    if plan is not None and plan.doc_counts is not None and n >= 2:
        if plan.doc_counts.shape[1] != groups.n_groups:
            raise ValueError("the resamples were drawn over other documents")
        fits = bradley_terry(np.einsum("bd,dij->bij", plan.doc_counts, wins))
        finite = np.all(np.isfinite(fits), axis=1)
        undefined = int(np.count_nonzero(~finite))
        if finite.any():
            tail = (1.0 - confidence) / 2.0
            low, high = np.quantile(fits[finite], [tail, 1.0 - tail], axis=0)
    return SystemRanking(
        systems=tuple(names),
        win_rate=rates,
        n_pairs=counts,
        strength=strength,
        low=np.asarray(low, dtype=np.float64),
        high=np.asarray(high, dtype=np.float64),
        n_documents=groups.n_groups,
        resamples=0 if plan is None else plan.size,
        n_undefined=undefined,
        confidence=confidence,
    )
