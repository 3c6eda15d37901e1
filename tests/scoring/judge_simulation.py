"""Simulated studies with known agreement, for the judge statistics' tests and bench.

Documents carry a shared effect, so items of one document are alike (what a bootstrap
over documents must account for). An item's true quality is ``t = doc + item`` (normal,
variance ``DOC_SD² + ITEM_SD²``).

* Pointwise: each annotator answers ``round(3 + t + noise)`` on 1..5 (clipped); the
  judge the same with its own bias and noise.
* Pairwise: an item is a pair of outputs whose true difference is ``t``; a vote is A
  when ``t + noise > THRESHOLD``, B when below ``-THRESHOLD``, a tie otherwise.

The population values (what the intervals must cover) come from the joint law of a
judge's and an annotator's answers on one item, integrated over ``t`` on a fine grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from scoring.stats.agreement_tables import (
    cohen_kappa,
    gwet_ac1,
    krippendorff_alpha_from_coincidences,
    percent_agreement,
)
from scoring.stats.judge_agreement import without_ties

SCALE = np.arange(1.0, 6.0)
DOC_SD, ITEM_SD = 0.7, 0.7
HUMAN_SD = 0.6
THRESHOLD = 0.4
_GRID = np.linspace(-9.0, 9.0, 20001)


def _edges(centre: float) -> np.ndarray:
    """Rounding thresholds of the 1..5 scale for an answer ``centre + t + noise``."""
    inner = np.arange(1.5, 5.0) - centre
    return np.concatenate([[-np.inf], inner, [np.inf]])


def _answer_law(edges: np.ndarray, sd: float) -> np.ndarray:
    """Grid × categories: P(answer = category | t) for each t of the grid."""
    upper = special.ndtr((edges[1:][None, :] - _GRID[:, None]) / sd)
    lower = special.ndtr((edges[:-1][None, :] - _GRID[:, None]) / sd)
    return np.asarray(upper - lower)


def _joint(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    sd = float(np.hypot(DOC_SD, ITEM_SD))
    density = np.exp(-0.5 * (_GRID / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    step = _GRID[1] - _GRID[0]
    return np.asarray(np.einsum("g,gc,gk->ck", density * step, first, second))


@dataclass(frozen=True)
class Truth:
    """Population values of the statistics for one simulated design."""

    quadratic_kappa: float
    gwet_ac1: float
    krippendorff_alpha: float
    with_ties: float
    without_ties: float
    kappa: float


def pointwise_truth(judge_bias: float, judge_sd: float, n_annotators: int) -> Truth:
    """κ_w and AC1 of (judge, annotator) pairs and α of the annotators with the judge, in
    the population (every item answered by ``n_annotators`` annotators and the judge)."""
    human = _answer_law(_edges(3.0), HUMAN_SD)
    judge = _answer_law(_edges(3.0 + judge_bias), judge_sd)
    jh, hh = _joint(judge, human), _joint(human, human)
    m = n_annotators
    coincidence = m * (m - 1) * hh + m * (jh + jh.T)
    scaled = coincidence / coincidence.sum() * 1e15  # α's limit as n → ∞
    alpha = float(krippendorff_alpha_from_coincidences(scaled, SCALE, "ordinal"))
    nan = float("nan")
    kappa_w = float(cohen_kappa(jh, "quadratic"))
    return Truth(kappa_w, float(gwet_ac1(jh)), alpha, nan, nan, nan)


def pairwise_truth(judge_sd: float) -> Truth:
    """MT-Bench agreement with and without ties and κ of (judge, annotator) votes."""
    edges = np.array([-np.inf, -THRESHOLD, THRESHOLD, np.inf])
    jh = _joint(_answer_law(edges, judge_sd), _answer_law(edges, HUMAN_SD))
    nan = float("nan")
    return Truth(
        nan,
        nan,
        nan,
        float(percent_agreement(jh)),
        float(percent_agreement(without_ties(jh))),
        float(cohen_kappa(jh)),
    )


@dataclass(frozen=True)
class Study:
    """One simulated study: annotators × items (NaN = not asked), the judge, documents."""

    humans: np.ndarray
    judge: np.ndarray
    docs: np.ndarray
    quality: np.ndarray


def _latent(rng: np.random.Generator, n_docs: int, per_doc: int) -> tuple[np.ndarray, np.ndarray]:
    docs = np.repeat(np.arange(n_docs), per_doc)
    quality = rng.normal(0, DOC_SD, n_docs)[docs] + rng.normal(0, ITEM_SD, docs.size)
    return docs, quality


def _assign(rng: np.random.Generator, answers: np.ndarray, pool: int) -> np.ndarray:
    """Spread each item's answers over ``pool`` annotators (rows), NaN elsewhere."""
    n_answers, n_items = answers.shape
    matrix = np.full((pool, n_items), np.nan)
    who = np.argsort(rng.random((pool, n_items)), axis=0)[:n_answers]
    matrix[who, np.arange(n_items)[None, :]] = answers
    return matrix


def pointwise_study(
    rng: np.random.Generator,
    *,
    n_docs: int = 40,
    per_doc: int = 4,
    n_annotators: int = 3,
    pool: int = 6,
    judge_bias: float = 0.2,
    judge_sd: float = 0.8,
) -> Study:
    """Likert answers (1..5) of ``n_annotators`` per item out of ``pool`` annotators."""
    docs, quality = _latent(rng, n_docs, per_doc)
    noise = rng.normal(0, HUMAN_SD, (n_annotators, docs.size))
    answers = np.clip(np.round(3.0 + quality[None, :] + noise), 1, 5)
    judge = np.clip(np.round(3.0 + judge_bias + quality + rng.normal(0, judge_sd, docs.size)), 1, 5)
    return Study(_assign(rng, answers, pool), judge, docs, quality)


def pairwise_study(
    rng: np.random.Generator,
    *,
    n_docs: int = 40,
    per_doc: int = 4,
    n_annotators: int = 3,
    pool: int = 6,
    judge_sd: float = 0.8,
) -> Study:
    """Votes (1 = A, 0 = tie, −1 = B) of ``n_annotators`` per item and of the judge."""
    docs, quality = _latent(rng, n_docs, per_doc)

    def vote(latent: np.ndarray) -> np.ndarray:
        return np.asarray(
            np.where(latent > THRESHOLD, 1.0, np.where(latent < -THRESHOLD, -1.0, 0.0))
        )

    answers = vote(quality[None, :] + rng.normal(0, HUMAN_SD, (n_annotators, docs.size)))
    judge = vote(quality + rng.normal(0, judge_sd, docs.size))
    return Study(_assign(rng, answers, pool), judge, docs, quality)
