"""Systems ranked from pairwise preferences: win rates and Bradley–Terry strengths with
bootstrap intervals over documents.

Each judged pair of outputs (of one document, from systems i and j) carries the
probability that i's output is better, ties counted as half a win each way
(``score = P(i better) + ½·P(tie)``); j's share is ``1 − score``. These fractional wins
are summed into a wins matrix ``W`` (``W[i, j]``: i's wins over j) per document.

* **Win rate** of a system: its mean score over the pairs it is in.
* **Bradley–Terry** (Bradley & Terry 1952): P(i beats j) = γᵢ / (γᵢ + γⱼ). The maximum-
  likelihood strengths are found by Newton's method on the log-strengths θ = log γ
  (the log-likelihood Σ Wᵢⱼ log σ(θᵢ − θⱼ) is concave; steps halved until it grows),
  with Wᵢ i's total wins and Nᵢⱼ = Wᵢⱼ + Wⱼᵢ the comparisons of i and j; it converges
  to the maximum whenever one exists (Hunter's 2004 MM iteration finds the same one,
  in thousands of steps where Newton takes tens). The strengths are identified by
  centring the log-strengths at mean 0. The maximum exists exactly when the directed graph
  of wins (an arc i → j when Wᵢⱼ > 0) is strongly connected (Ford 1957): a system
  that never loses, or a group that never loses to the rest, has no finite strength,
  and the fit is then undefined (NaN).
* **Intervals**: documents are resampled with replacement (the caller's seeded
  generator, :func:`scoring.stats.resampling.draw_resamples`); each resample's wins are
  the drawn documents' matrices summed (a product of draw counts and matrices), and all
  resamples are fitted at once. Percentile intervals; a resample with no finite fit
  (a system drawn out, or never losing) is left out and counted.
* **Too few comparisons** say so (:attr:`SystemRanking.problem`) rather than show NaN or
  zero-width intervals: no strengths when the win graph is not strongly connected
  (naming the systems that never lost or never won), no intervals with fewer than
  :data:`MIN_DOCUMENTS` documents or when fewer than :data:`MIN_FINITE_SHARE` of the
  resamples have a finite fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from scoring.stats.ranking import FloatArray, Groups, IntArray
from scoring.stats.resampling import Resamples, Unit, draw_resamples

TOLERANCE = 1e-10  # largest change of a log-strength between iterations at convergence
MAX_ITERATIONS = 500
# Intervals need this many documents to resample (with fewer, every resample repeats a
# handful of them and the percentiles are zero-width or nearly so) and a finite fit on at
# least this share of the resamples (else the interval describes the few that fit).
MIN_DOCUMENTS = 10
MIN_FINITE_SHARE = 0.5


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
        theta[ok] = _newton(flat[ok], tolerance, max_iterations)
    return np.asarray(theta.reshape(w.shape[:-1]), dtype=np.float64)


def _newton(wins: FloatArray, tolerance: float, max_iterations: int) -> FloatArray:
    """Newton's method on strongly connected matrices (batch × S × S), every matrix at
    once. The log-likelihood is concave in θ; its Hessian is minus the Laplacian of the
    comparisons weighted by p(1 − p), singular only along θ + c (the centring), so each
    step solves (Laplacian + 11ᵀ) δ = gradient. A step that would lower the likelihood
    is halved until it does not (from θ = 0 a full step can overshoot when one system
    wins nearly every comparison). Converges in tens of steps where Hunter's MM
    iteration (the same maximum) needed thousands near separation."""
    batch, size = wins.shape[0], wins.shape[1]
    total = wins.sum(axis=2)  # Wᵢ
    games = wins + np.swapaxes(wins, 1, 2)  # Nᵢⱼ
    ones = np.ones((size, size))
    theta = np.zeros((batch, size))
    active = np.ones(batch, dtype=bool)
    current = _likelihoods(theta, wins)
    for _ in range(max_iterations):
        if not active.any():
            break
        t, w, g = theta[active], wins[active], games[active]
        p = special.expit(t[:, :, None] - t[:, None, :])  # p[i, j] = P(i beats j)
        gradient = total[active] - np.sum(g * p, axis=2)
        weight = g * p * (1.0 - p)
        laplacian = -weight
        laplacian[:, np.arange(size), np.arange(size)] += weight.sum(axis=2)
        step = np.linalg.solve(laplacian + ones, gradient[:, :, None])[:, :, 0]
        start = current[active]
        scale = np.ones(t.shape[0])
        for _ in range(60):
            tried = t + scale[:, None] * step
            found = _likelihoods(tried, w)
            worse = found < start - 1e-12 * np.maximum(1.0, np.abs(start))
            if not worse.any():
                break
            scale[worse] /= 2.0
        tried -= tried.mean(axis=1, keepdims=True)
        change = np.max(np.abs(tried - t), axis=1)
        theta[active], current[active] = tried, found
        done = np.flatnonzero(active)[change < tolerance]
        active[done] = False
    return theta


def _likelihoods(theta: FloatArray, wins: FloatArray) -> FloatArray:
    """The log-likelihood of each of a batch of strengths (batch × S) on its wins."""
    gap = theta[:, :, None] - theta[:, None, :]
    return np.asarray(np.sum(wins * -np.logaddexp(0.0, -gap), axis=(1, 2)), dtype=np.float64)


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
    fit and were left out. ``problem`` says why strengths or intervals are missing
    (empty when neither is)."""

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
    problem: str = ""


def unranked(wins: FloatArray, systems: tuple[Any, ...]) -> str:
    """Why the summed ``wins`` (S × S) give no finite strengths: the systems that never
    lost or never won a comparison (or a group that never loses to the rest)."""
    w = np.asarray(wins, dtype=np.float64) * (1.0 - np.eye(len(systems)))
    played = (w + w.T).sum(axis=1) > 0
    never_lost = [str(systems[k]) for k in np.flatnonzero(played & (w.sum(axis=0) == 0))]
    never_won = [str(systems[k]) for k in np.flatnonzero(played & (w.sum(axis=1) == 0))]
    alone = [str(systems[k]) for k in np.flatnonzero(~played)]
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("never lost", never_lost),
            ("never won", never_won),
            ("in no comparison", alone),
        )
        if names
    ]
    found = "; ".join(parts) if parts else "a group of systems never loses to the others"
    return (
        f"Too few comparisons for Bradley–Terry strengths ({found}): each system must both "
        "win and lose against the rest; the win rates still rank them."
    )


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
    min_documents: int = MIN_DOCUMENTS,
) -> SystemRanking:
    """Win rates and Bradley–Terry strengths of the systems coded in ``first`` and
    ``second`` (0..S−1; ``systems`` names them) from each pair's ``score`` (the first
    system's P(win) + ½·P(tie)), with intervals over documents from ``plan`` or, given
    ``rng``, from ``resamples`` fresh draws (none with fewer than ``min_documents``
    documents: see the module's docstring)."""
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
    problems = []
    if n >= 2 and not np.all(np.isfinite(strength)):
        problems.append(unranked(wins.sum(axis=0), tuple(names)))
    if plan is not None and plan.doc_counts is not None and n >= 2:
        if plan.doc_counts.shape[1] != groups.n_groups:
            raise ValueError("the resamples were drawn over other documents")
        fits = bradley_terry(np.einsum("bd,dij->bij", plan.doc_counts, wins))
        finite = np.all(np.isfinite(fits), axis=1)
        undefined = int(np.count_nonzero(~finite))
        if groups.n_groups < min_documents:
            problems.append(
                f"{groups.n_groups} document{'s' if groups.n_groups != 1 else ''}: too few "
                f"to resample for intervals (at least {min_documents})."
            )
        elif np.count_nonzero(finite) < MIN_FINITE_SHARE * finite.size:
            problems.append(
                f"Only {np.count_nonzero(finite)} of {finite.size} resamples of the documents "
                "have finite strengths: too few comparisons for intervals."
            )
        elif np.all(np.isfinite(strength)):
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
        problem=" ".join(problems),
    )
