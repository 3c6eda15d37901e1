"""Dawid and Skene (1979): each annotator's confusion matrix and each item's true label,
estimated together by expectation–maximisation.

Concordia treats each judge of a jury as an annotator. The steps follow the common
formulation (as crowd-kit's ``DawidSkene`` has it, whose test cases
``tests/scoring/test_dawid_skene.py`` ports):

* start from the majority vote's label shares per item;
* M-step: annotator w's error matrix ``e[w, observed, true]`` is the posterior mass of
  ``true`` over the items where w answered ``observed``, each entry w used at least
  ``EPS``, normalised over ``observed``;
* E-step: an item's posterior ∝ prior · Π over its answers ``e[w, answer, ·]``;
  the prior is the mean posterior;
* stop after ``n_iter`` rounds, or once the evidence lower bound per answer gains
  less than ``tol``.

Only the labels someone gave take part; the others get probability 0. Ties of the
posterior go to the lowest label code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import FloatArray, IntArray

EPS = 1e-10


@dataclass(frozen=True)
class DawidSkene:
    """The fit: ``probas`` items × classes, ``priors`` per class, ``errors`` annotators ×
    observed × true, ``labels`` each item's most probable class, and the ELBO per
    answer after each round."""

    probas: FloatArray
    priors: FloatArray
    errors: FloatArray
    labels: IntArray
    loss_history: list[float] = field(default_factory=list)


def _m_step(
    items: IntArray, workers: IntArray, answers: IntArray, probas: FloatArray, n_workers: int
) -> FloatArray:
    k = probas.shape[1]
    errors = np.zeros((n_workers, k, k))
    np.add.at(errors, (workers, answers), probas[items])
    used = np.zeros((n_workers, k), dtype=bool)
    used[workers, answers] = True
    errors = np.where(used[:, :, None], np.maximum(errors, EPS), 0.0)
    totals = errors.sum(axis=1, keepdims=True)
    out: FloatArray = np.divide(errors, totals, out=np.zeros_like(errors), where=totals > 0)
    return out


def _log_errors(errors: FloatArray, workers: IntArray, answers: IntArray) -> FloatArray:
    """Each answer's log error row over the true classes (answers × classes)."""
    return np.log(errors[workers, answers])


def _e_step(
    items: IntArray,
    workers: IntArray,
    answers: IntArray,
    priors: FloatArray,
    errors: FloatArray,
    n_items: int,
) -> FloatArray:
    loglik = np.tile(np.log(np.maximum(priors, EPS)), (n_items, 1))
    np.add.at(loglik, items, _log_errors(errors, workers, answers))
    scaled = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    out: FloatArray = scaled / scaled.sum(axis=1, keepdims=True)
    return out


def _lower_bound(
    items: IntArray,
    workers: IntArray,
    answers: IntArray,
    probas: FloatArray,
    priors: FloatArray,
    errors: FloatArray,
) -> float:
    # the prior term counted once per answer, as crowd-kit's evidence lower bound has it
    terms = _log_errors(errors, workers, answers) + np.log(np.maximum(priors, EPS))
    joint = float((probas[items] * terms).sum())
    clipped = np.maximum(probas, EPS)
    entropy = -float((np.log(clipped) * clipped).sum())
    return joint + entropy


def dawid_skene(
    items: npt.ArrayLike,
    workers: npt.ArrayLike,
    answers: npt.ArrayLike,
    *,
    n_classes: int | None = None,
    n_iter: int = 100,
    tol: float = 1e-5,
) -> DawidSkene:
    """Fit Dawid–Skene to answers given as three aligned integer arrays: the item, the
    annotator and the class code (0 … n_classes − 1) of each answer. Every item must
    have at least one answer (items are ``0 … max(items)``)."""
    item = np.asarray(items, dtype=np.intp)
    worker = np.asarray(workers, dtype=np.intp)
    answer = np.asarray(answers, dtype=np.intp)
    if not item.size:
        raise ValueError("no answers")
    if not (item.shape == worker.shape == answer.shape):
        raise ValueError("items, workers and answers must be aligned")
    if min(item.min(), worker.min(), answer.min()) < 0:
        raise ValueError("codes must be non-negative")
    k = int(answer.max()) + 1 if n_classes is None else n_classes
    if answer.max() >= k:
        raise ValueError("an answer's code is not below n_classes")
    n_items, n_workers = int(item.max()) + 1, int(worker.max()) + 1
    if np.bincount(item, minlength=n_items).min() == 0:
        raise ValueError("every item needs at least one answer")
    present = np.flatnonzero(np.bincount(answer, minlength=k))
    code = np.full(k, -1, dtype=np.intp)
    code[present] = np.arange(present.size)
    local = code[answer]
    probas = np.zeros((n_items, present.size))
    np.add.at(probas, (item, local), 1.0)
    probas /= probas.sum(axis=1, keepdims=True)
    priors = probas.mean(axis=0)
    errors = _m_step(item, worker, local, probas, n_workers)
    loss, history = -np.inf, []
    for _ in range(n_iter):
        probas = _e_step(item, worker, local, priors, errors, n_items)
        priors = probas.mean(axis=0)
        errors = _m_step(item, worker, local, probas, n_workers)
        new_loss = _lower_bound(item, worker, local, probas, priors, errors) / item.size
        history.append(new_loss)
        if new_loss - loss < tol:
            break
        loss = new_loss
    full = np.zeros((n_items, k))
    full[:, present] = probas
    full_priors = np.zeros(k)
    full_priors[present] = priors
    full_errors = np.zeros((n_workers, k, k))
    full_errors[np.ix_(np.arange(n_workers), present, present)] = errors
    return DawidSkene(
        probas=full,
        priors=full_priors,
        errors=full_errors,
        labels=full.argmax(axis=1).astype(np.intp),
        loss_history=history,
    )
