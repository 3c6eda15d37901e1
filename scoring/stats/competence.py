"""Annotator competence by MACE (Hovy, Berg-Kirkpatrick, Vaswani & Hovy 2013, "Learning
Whom to Trust with MACE").

The generative model: every item i has a latent true label T_i (uniform prior over the K
labels). For each answer of annotator j on item i, j either spams (S_ij = 1, with
probability 1 - θ_j) and then draws the answer from j's own spamming distribution ξ_j
over the labels, or does not (S_ij = 0, probability θ_j) and then answers T_i. So θ_j,
the **competence**, is the probability that j's answer is the true label "on purpose";
a spammer who always answers 3 has θ near 0 and ξ peaked on 3.

Two ways to fit it, as the MACE tool offers (:class:`Method`); both alternate an E-step,
which computes each item's posterior over labels and each answer's expected spamming
indicator, with an update of the annotators' parameters from those fractional counts:

- **Variational Bayes** (the tool's default, and the default here): θ_j has a Beta
  prior, ``beta`` pseudo-answers given knowingly against ``alpha`` spammed (0.5 and 0.5
  as in the tool; alpha > beta assumes most annotators unreliable), and ξ_j a symmetric
  Dirichlet prior of 10 per label (fixed in the tool). The update keeps Beta and
  Dirichlet posteriors, and the E-step weighs answers by exp E[log θ_j] and
  exp E[log (1 − θ_j) ξ_jl] (which sum to less than 1). The competence reported is
  exp E[log θ_j], the number the tool writes (a little below the posterior mean, the
  more so the fewer answers). Restarts are compared by the evidence lower bound
  (the tool compares them by its data term alone, without the priors' KL terms).
- **EM** (the tool's ``--em``): maximum likelihood, with ``smoothing`` pseudo-counts
  added before normalising (the tool's default, 0.01 / K); the competence is θ_j.

Either runs from several random starts (drawn from the caller's generator, so a seed
gives the same result) and keeps the start with the best objective: the log-likelihood
with the smoothing's log prior (EM) or its lower bound (VB), each of which rises at
every step, so a fit stops when its gain is negligible.

Labels are categorical: Likert scores are treated as K unordered labels (as MACE does),
so the model knows nothing of 4 being closer to 5 than to 1.

Only answers on items that someone else also answered carry information about
competence: an annotator with no such answer gets no estimate (NaN), and a data set
with fewer than two annotators, no shared item, or a single label in use gets none at
all, with the reason in :attr:`Competence.reason`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import digamma, gammaln

from scoring.stats.ranking import FloatArray, IntArray

NOT_ENOUGH_ANNOTATORS = "not enough annotators: competence needs at least two"
NOT_ENOUGH_OVERLAP = "not enough overlap: no item was answered by two annotators"
ONE_LABEL = "every answer is the same label: competence is not identifiable"
NO_ANSWERS = "no answers"
_TINY = 1e-300  # keeps logarithms finite when smoothing is 0
# The MACE tool's priors: Beta(beta, alpha) on θ, Dirichlet(10, …, 10) on ξ.
ALPHA = 0.5
BETA = 0.5
STRATEGY_PRIOR = 10.0


class Method(Enum):
    """How MACE's parameters are fitted (the MACE tool's two modes)."""

    VARIATIONAL = "vb"  # variational Bayes with priors: the tool's default
    EM = "em"  # maximum likelihood with smoothing: the tool's --em


@dataclass(frozen=True, eq=False)
class Competence:
    """MACE's estimates for one set of answers.

    ``competence[j]`` is θ of ``annotators[j]`` (NaN where not estimated; under
    variational Bayes exp E[log θ], as the MACE tool reports it), ``spamming[j]`` its
    spamming distribution over ``labels``; ``posterior[i]`` is item ``items[i]``'s
    distribution over ``labels`` (NaN rows when nothing was estimated). ``n_answers[j]``
    counts j's answers and ``n_shared[j]`` those on items answered by someone else too.
    ``objective`` is what the kept start reached of what the fit maximises: the marginal
    log-likelihood plus the smoothing's log prior (EM; the likelihood alone with no
    smoothing) or the likelihood's evidence lower bound (VB). ``reason`` is empty when
    the model was fitted, else why not.
    """

    annotators: npt.NDArray[Any]
    items: npt.NDArray[Any]
    labels: npt.NDArray[Any]
    competence: FloatArray
    spamming: FloatArray
    posterior: FloatArray
    n_answers: IntArray
    n_shared: IntArray
    objective: float
    restarts: int
    iterations: int  # iterations of the start that was kept
    method: Method = Method.VARIATIONAL
    reason: str = ""

    @property
    def fitted(self) -> bool:
        return not self.reason

    def by_annotator(self) -> dict[Any, float | None]:
        """Competence per annotator key, None where there is no estimate."""
        return {
            key: (float(value) if math.isfinite(value) else None)
            for key, value in zip(self.annotators.tolist(), self.competence, strict=True)
        }

    def predicted_labels(self) -> npt.NDArray[Any]:
        """Each item's most probable label (the first on ties); only when fitted."""
        if not self.fitted:
            raise ValueError(f"no labels to predict: {self.reason}")
        best: npt.NDArray[Any] = self.labels[np.argmax(self.posterior, axis=1)]
        return best


@dataclass(frozen=True, eq=False)
class _Coded:
    item: IntArray
    annotator: IntArray
    label: IntArray
    n_items: int
    n_annotators: int
    n_labels: int


@dataclass(frozen=True, eq=False)
class _Weights:
    """What the E-step weighs an answer by: ``know[j]``, for answering the truth on
    purpose, and ``spam[j, l]``, for spamming and answering l (EM: θ_j and
    (1 − θ_j) ξ_jl; VB: their exponentiated expected logarithms). ``competence`` and
    ``strategy`` are what is reported, ``penalty`` what the objective subtracts from
    the data's log-likelihood (VB: the priors' KL divergences; EM: 0)."""

    know: FloatArray
    spam: FloatArray
    competence: FloatArray
    strategy: FloatArray
    penalty: float = 0.0


@dataclass(frozen=True, eq=False)
class _Fit:
    weights: _Weights
    posterior: FloatArray
    objective: float
    iterations: int


# An update: (expected knowing answers per annotator, expected spammed answers per
# annotator and label) -> the next weights.
_Update = Callable[[FloatArray, FloatArray], _Weights]


def mace(
    item_key: npt.ArrayLike,
    annotator_key: npt.ArrayLike,
    label: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    rng: np.random.Generator | None = None,
    restarts: int = 10,
    iterations: int = 100,
    tolerance: float = 1e-7,
    method: Method = Method.VARIATIONAL,
    alpha: float = ALPHA,
    beta: float = BETA,
    smoothing: float | None = None,
) -> Competence:
    """Fit MACE to answers given one per row: ``(item_key[r], annotator_key[r],
    label[r])``.

    ``labels`` lists the possible labels (e.g. a Likert scale's points, so unused points
    still count); by default the distinct answers. An answer outside ``labels`` is an
    error. ``rng`` draws the random starts (default: ``default_rng(0)``). ``method``
    picks variational Bayes (the MACE tool's default), with the prior's ``alpha``
    (spammed) and ``beta`` (known) pseudo-answers, or EM, with ``smoothing`` added to the
    fractional counts (default 0.01 / K, as MACE; 0 for plain maximum likelihood). The
    fit stops when its objective gains less than ``tolerance`` (relative) or after
    ``iterations``.
    """
    items_in, annotators_in, labels_in = (np.asarray(a) for a in (item_key, annotator_key, label))
    if not items_in.ndim == annotators_in.ndim == labels_in.ndim == 1 or not (
        items_in.size == annotators_in.size == labels_in.size
    ):
        raise ValueError("item_key, annotator_key and label must be 1-D and aligned")
    if restarts < 1 or iterations < 1:
        raise ValueError("restarts and iterations must be at least 1")
    if smoothing is not None and not (math.isfinite(smoothing) and smoothing >= 0):
        raise ValueError("smoothing must be a finite number ≥ 0")
    if method is Method.VARIATIONAL and smoothing is not None:
        raise ValueError("smoothing is for EM; variational Bayes smooths by its priors alpha, beta")
    if not all(math.isfinite(p) and p > 0 for p in (alpha, beta)):
        raise ValueError("the prior's alpha and beta must be finite numbers > 0")
    item_keys, item_codes = np.unique(items_in, return_inverse=True)
    annotator_keys, annotator_codes = np.unique(annotators_in, return_inverse=True)
    label_keys = np.unique(labels_in) if labels is None else np.asarray(labels)
    if label_keys.ndim != 1 or np.unique(label_keys).size != label_keys.size:
        raise ValueError("labels must be 1-D without repeats")
    label_codes = _label_codes(labels_in, label_keys)
    pairs = item_codes.astype(np.int64) * max(annotator_keys.size, 1) + annotator_codes
    if np.unique(pairs).size != pairs.size:
        raise ValueError("an annotator answered an item twice: give one answer per item")
    coded = _Coded(
        item_codes.astype(np.intp),
        annotator_codes.astype(np.intp),
        label_codes,
        item_keys.size,
        annotator_keys.size,
        label_keys.size,
    )
    per_item = np.bincount(coded.item, minlength=coded.n_items)
    shared = per_item[coded.item] >= 2
    n_answers = np.bincount(coded.annotator, minlength=coded.n_annotators).astype(np.intp)
    n_shared = np.bincount(coded.annotator[shared], minlength=coded.n_annotators).astype(np.intp)

    def empty(reason: str) -> Competence:
        return Competence(
            annotators=annotator_keys,
            items=item_keys,
            labels=label_keys,
            competence=np.full(coded.n_annotators, np.nan),
            spamming=np.full((coded.n_annotators, coded.n_labels), np.nan),
            posterior=np.full((coded.n_items, coded.n_labels), np.nan),
            n_answers=n_answers,
            n_shared=n_shared,
            objective=math.nan,
            restarts=0,
            iterations=0,
            method=method,
            reason=reason,
        )

    if coded.item.size == 0:
        return empty(NO_ANSWERS)
    if coded.n_annotators < 2:
        return empty(NOT_ENOUGH_ANNOTATORS)
    if not shared.any():
        return empty(NOT_ENOUGH_OVERLAP)
    if np.unique(coded.label).size < 2:
        return empty(ONE_LABEL)
    generator = rng if rng is not None else np.random.default_rng(0)
    if method is Method.EM:
        update = _em_update(n_answers, 0.01 / coded.n_labels if smoothing is None else smoothing)
    else:
        update = _variational_update(alpha, beta)
    best: _Fit | None = None
    for _ in range(restarts):
        fit = _fit(coded, generator, update, iterations, tolerance)
        if best is None or fit.objective > best.objective:
            best = fit
    assert best is not None
    known = n_shared > 0
    return Competence(
        annotators=annotator_keys,
        items=item_keys,
        labels=label_keys,
        competence=np.where(known, best.weights.competence, np.nan),
        spamming=np.where(known[:, None], best.weights.strategy, np.nan),
        posterior=best.posterior,
        n_answers=n_answers,
        n_shared=n_shared,
        objective=best.objective,
        restarts=restarts,
        iterations=best.iterations,
        method=method,
    )


def _label_codes(values: npt.NDArray[Any], keys: npt.NDArray[Any]) -> IntArray:
    if values.size == 0:
        return np.zeros(0, dtype=np.intp)
    sorter = np.argsort(keys, kind="stable")
    found = np.minimum(np.searchsorted(keys, values, sorter=sorter), keys.size - 1)
    codes = sorter[found] if keys.size else found
    if keys.size == 0 or np.any(keys[codes] != values):
        unknown = values[keys[codes] != values][0] if keys.size else values[0]
        raise ValueError(f"the answer {unknown!r} is not one of the labels {keys.tolist()}")
    return np.asarray(codes, dtype=np.intp)


def _e_step(coded: _Coded, weights: _Weights) -> tuple[FloatArray, float]:
    """Items' posteriors over labels and the data's log-likelihood under ``weights``."""
    know = weights.know[coded.annotator]
    spam = np.maximum(weights.spam[coded.annotator, coded.label], _TINY)
    # log p(answer | T = t) is log(spam) for t ≠ answer, log(know + spam) for t = answer
    base = np.bincount(coded.item, weights=np.log(spam), minlength=coded.n_items)
    bonus = np.bincount(
        coded.item * coded.n_labels + coded.label,
        weights=np.log(know + spam) - np.log(spam),
        minlength=coded.n_items * coded.n_labels,
    ).reshape(coded.n_items, coded.n_labels)
    log_joint = base[:, None] + bonus - math.log(coded.n_labels)
    top = log_joint.max(axis=1, keepdims=True)
    exp = np.exp(log_joint - top)
    total = exp.sum(axis=1, keepdims=True)
    log_likelihood = float(np.sum(np.log(total) + top))
    return exp / total, log_likelihood


def _expected_counts(
    coded: _Coded, posterior: FloatArray, weights: _Weights
) -> tuple[FloatArray, FloatArray]:
    """Per annotator, the expected number of answers given knowingly, and per annotator
    and label the expected number spammed."""
    # An answer was given knowingly when the item's truth is the answer and the
    # annotator meant it rather than drew it by chance.
    know = weights.know[coded.annotator]
    spam = weights.spam[coded.annotator, coded.label]
    knows = posterior[coded.item, coded.label] * know / np.maximum(know + spam, _TINY)
    n_know = np.bincount(coded.annotator, weights=knows, minlength=coded.n_annotators)
    n_spam = np.bincount(
        coded.annotator * coded.n_labels + coded.label,
        weights=1.0 - knows,
        minlength=coded.n_annotators * coded.n_labels,
    ).reshape(coded.n_annotators, coded.n_labels)
    return np.asarray(n_know, dtype=np.float64), np.asarray(n_spam, dtype=np.float64)


def _em_update(n_answers: IntArray, smoothing: float) -> _Update:
    """EM's update: smoothed relative frequencies; the penalty is minus the smoothing's
    log prior (Beta(1 + s, 1 + s) on θ, Dirichlet(1 + s) on ξ, up to a constant)."""

    def update(n_know: FloatArray, n_spam: FloatArray) -> _Weights:
        theta = (n_know + smoothing) / (n_answers + 2 * smoothing)
        counts = n_spam + smoothing
        totals = counts.sum(axis=1, keepdims=True)
        xi = np.where(totals > 0, counts / np.where(totals > 0, totals, 1), 1 / counts.shape[1])
        # Smoothed EM maximises the likelihood times the smoothing's Dirichlet prior, so
        # that (not the likelihood alone, which may dip) is what rises at every step.
        penalty = 0.0
        if smoothing > 0:
            logs = np.log(theta).sum() + np.log1p(-theta).sum() + np.log(xi).sum()
            penalty = -smoothing * float(logs)
        return _Weights(theta, (1 - theta)[:, None] * xi, theta, xi, penalty)

    return update


def _variational_update(alpha: float, beta: float) -> _Update:
    """Variational Bayes' update: the Beta and Dirichlet posteriors of θ and ξ, weighed
    by exp E[log ·]; the penalty is their KL divergence from the priors."""

    def update(n_know: FloatArray, n_spam: FloatArray) -> _Weights:
        competence = np.stack([n_know + beta, n_spam.sum(axis=1) + alpha], axis=1)
        strategy = n_spam + STRATEGY_PRIOR
        know, spammed = _geometric_means(competence).T
        xi = _geometric_means(strategy)
        penalty = _dirichlet_kl(competence, np.array([beta, alpha])) + _dirichlet_kl(
            strategy, np.full(strategy.shape[1], STRATEGY_PRIOR)
        )
        normalised = xi / xi.sum(axis=1, keepdims=True)
        return _Weights(know, spammed[:, None] * xi, know, normalised, penalty)

    return update


def _geometric_means(concentration: FloatArray) -> FloatArray:
    """exp E[log p] for each row's Dirichlet(concentration) (rows sum to less than 1)."""
    expected_log = digamma(concentration) - digamma(concentration.sum(axis=1, keepdims=True))
    return np.asarray(np.exp(expected_log), dtype=np.float64)


def _dirichlet_kl(posterior: FloatArray, prior: FloatArray) -> float:
    """Σ over rows of KL(Dirichlet(posterior row) ‖ Dirichlet(prior))."""
    total = posterior.sum(axis=1)
    expected_log = digamma(posterior) - digamma(total)[:, None]
    kl = (
        gammaln(total)
        - gammaln(posterior).sum(axis=1)
        - gammaln(prior.sum())
        + gammaln(prior).sum()
        + ((posterior - prior) * expected_log).sum(axis=1)
    )
    return float(kl.sum())


def _fit(
    coded: _Coded, rng: np.random.Generator, update: _Update, iterations: int, tolerance: float
) -> _Fit:
    """One start: random θ and ξ, then E-steps and updates until the objective (the
    data's log-likelihood less the update's penalty) stops rising."""
    theta = rng.uniform(0.0, 1.0, coded.n_annotators)
    xi = rng.uniform(0.0, 1.0, (coded.n_annotators, coded.n_labels))
    xi /= xi.sum(axis=1, keepdims=True)
    weights = _Weights(theta, (1 - theta)[:, None] * xi, theta, xi)
    posterior, objective = _e_step(coded, weights)
    previous = -math.inf
    done = 0
    while done < iterations:
        done += 1
        weights = update(*_expected_counts(coded, posterior, weights))
        posterior, log_likelihood = _e_step(coded, weights)
        objective = log_likelihood - weights.penalty
        if objective - previous <= tolerance * abs(objective):
            break
        previous = objective
    return _Fit(weights, posterior, objective, done)
