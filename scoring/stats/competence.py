"""Annotator competence by MACE (Hovy, Berg-Kirkpatrick, Vaswani & Hovy 2013, "Learning
Whom to Trust with MACE").

The generative model: every item i has a latent true label T_i (uniform prior over the K
labels). For each answer of annotator j on item i, j either spams (S_ij = 1, with
probability 1 - θ_j) and then draws the answer from j's own spamming distribution ξ_j
over the labels, or does not (S_ij = 0, probability θ_j) and then answers T_i. So θ_j,
the **competence**, is the probability that j's answer is the true label "on purpose";
a spammer who always answers 3 has θ near 0 and ξ peaked on 3.

EM as in the MACE tool: the E-step computes each item's posterior over labels and each
answer's expected spamming indicator; the M-step re-estimates θ_j and ξ_j from those
fractional counts, with ``smoothing`` pseudo-counts added before normalising (MACE's
default, 0.01 / K). EM runs from several random starts (drawn from the caller's
generator, so a seed gives the same result) and keeps the start with the best
log-likelihood.

Labels are categorical: Likert scores are treated as K unordered labels (as MACE does),
so the model knows nothing of 4 being closer to 5 than to 1.

Only answers on items that someone else also answered carry information about
competence: an annotator with no such answer gets no estimate (NaN), and a data set
with fewer than two annotators, no shared item, or a single label in use gets none at
all, with the reason in :attr:`Competence.reason`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import FloatArray, IntArray

NOT_ENOUGH_ANNOTATORS = "not enough annotators: competence needs at least two"
NOT_ENOUGH_OVERLAP = "not enough overlap: no item was answered by two annotators"
ONE_LABEL = "every answer is the same label: competence is not identifiable"
NO_ANSWERS = "no answers"
_TINY = 1e-300  # keeps logarithms finite when smoothing is 0


@dataclass(frozen=True, eq=False)
class Competence:
    """MACE's estimates for one set of answers.

    ``competence[j]`` is θ of ``annotators[j]`` (NaN where not estimated),
    ``spamming[j]`` its spamming distribution over ``labels``; ``posterior[i]`` is item
    ``items[i]``'s distribution over ``labels`` (NaN rows when nothing was estimated).
    ``n_answers[j]`` counts j's answers and ``n_shared[j]`` those on items answered by
    someone else too. ``reason`` is empty when the model was fitted, else why not.
    """

    annotators: npt.NDArray[Any]
    items: npt.NDArray[Any]
    labels: npt.NDArray[Any]
    competence: FloatArray
    spamming: FloatArray
    posterior: FloatArray
    n_answers: IntArray
    n_shared: IntArray
    log_likelihood: float
    restarts: int
    iterations: int  # EM iterations of the start that was kept
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
class _Fit:
    theta: FloatArray
    xi: FloatArray
    posterior: FloatArray
    log_likelihood: float
    iterations: int


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
    smoothing: float | None = None,
) -> Competence:
    """Fit MACE to answers given one per row: ``(item_key[r], annotator_key[r],
    label[r])``.

    ``labels`` lists the possible labels (e.g. a Likert scale's points, so unused points
    still count); by default the distinct answers. An answer outside ``labels`` is an
    error. ``rng`` draws the random starts (default: ``default_rng(0)``); ``smoothing``
    is the pseudo-count added to the fractional counts (default 0.01 / K, as MACE; 0
    for plain maximum likelihood). EM stops when the log-likelihood gains less than
    ``tolerance`` (relative) or after ``iterations``.
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
    item_keys, item_codes = np.unique(items_in, return_inverse=True)
    annotator_keys, annotator_codes = np.unique(annotators_in, return_inverse=True)
    label_keys = np.unique(labels_in) if labels is None else np.asarray(labels)
    if label_keys.ndim != 1 or np.unique(label_keys).size != label_keys.size:
        raise ValueError("labels must be 1-D without repeats")
    label_codes = _label_codes(labels_in, label_keys)
    pairs = item_codes.astype(np.int64) * max(annotator_keys.size, 1) + annotator_codes
    if np.unique(pairs).size != pairs.size:
        raise ValueError("an annotator answered an item twice: give one answer per item")
    coded = _Coded(item_codes.astype(np.intp), annotator_codes.astype(np.intp),
                   label_codes, item_keys.size, annotator_keys.size, label_keys.size)  # fmt: skip
    per_item = np.bincount(coded.item, minlength=coded.n_items)
    shared = per_item[coded.item] >= 2
    n_answers = np.bincount(coded.annotator, minlength=coded.n_annotators).astype(np.intp)
    n_shared = np.bincount(coded.annotator[shared], minlength=coded.n_annotators).astype(np.intp)

    def empty(reason: str) -> Competence:
        return Competence(
            annotators=annotator_keys, items=item_keys, labels=label_keys,
            competence=np.full(coded.n_annotators, np.nan),
            spamming=np.full((coded.n_annotators, coded.n_labels), np.nan),
            posterior=np.full((coded.n_items, coded.n_labels), np.nan),
            n_answers=n_answers, n_shared=n_shared, log_likelihood=math.nan,
            restarts=0, iterations=0, reason=reason,
        )  # fmt: skip

    if coded.item.size == 0:
        return empty(NO_ANSWERS)
    if coded.n_annotators < 2:
        return empty(NOT_ENOUGH_ANNOTATORS)
    if not shared.any():
        return empty(NOT_ENOUGH_OVERLAP)
    if np.unique(coded.label).size < 2:
        return empty(ONE_LABEL)
    generator = rng if rng is not None else np.random.default_rng(0)
    s = 0.01 / coded.n_labels if smoothing is None else smoothing
    best: _Fit | None = None
    for _ in range(restarts):
        fit = _em(coded, generator, s, iterations, tolerance)
        if best is None or fit.log_likelihood > best.log_likelihood:
            best = fit
    assert best is not None
    return Competence(
        annotators=annotator_keys, items=item_keys, labels=label_keys,
        competence=np.where(n_shared > 0, best.theta, np.nan),
        spamming=np.where((n_shared > 0)[:, None], best.xi, np.nan),
        posterior=best.posterior, n_answers=n_answers, n_shared=n_shared,
        log_likelihood=best.log_likelihood, restarts=restarts, iterations=best.iterations,
    )  # fmt: skip


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


def _e_step(coded: _Coded, theta: FloatArray, xi: FloatArray) -> tuple[FloatArray, float]:
    """Items' posteriors over labels and the marginal log-likelihood."""
    th = theta[coded.annotator]
    spam = np.maximum((1 - th) * xi[coded.annotator, coded.label], _TINY)
    # log p(answer | T = t) is log(spam) for t ≠ answer, log(θ + spam) for t = answer
    base = np.bincount(coded.item, weights=np.log(spam), minlength=coded.n_items)
    bonus = np.bincount(
        coded.item * coded.n_labels + coded.label,
        weights=np.log(th + spam) - np.log(spam),
        minlength=coded.n_items * coded.n_labels,
    ).reshape(coded.n_items, coded.n_labels)
    log_joint = base[:, None] + bonus - math.log(coded.n_labels)
    top = log_joint.max(axis=1, keepdims=True)
    weights = np.exp(log_joint - top)
    total = weights.sum(axis=1, keepdims=True)
    log_likelihood = float(np.sum(np.log(total) + top))
    return weights / total, log_likelihood


def _em(coded: _Coded, rng: np.random.Generator, smoothing: float, iterations: int,
        tolerance: float) -> _Fit:  # fmt: skip
    theta = rng.uniform(0.0, 1.0, coded.n_annotators)
    xi = rng.uniform(0.0, 1.0, (coded.n_annotators, coded.n_labels))
    xi /= xi.sum(axis=1, keepdims=True)
    previous = -math.inf
    posterior, log_likelihood = _e_step(coded, theta, xi)
    done = 0
    while done < iterations:
        done += 1
        # expected "not spamming" of each answer: the item's truth is the answer, and
        # the annotator meant it (θ) rather than drew it by chance ((1 - θ) ξ)
        th = theta[coded.annotator]
        spam = (1 - th) * xi[coded.annotator, coded.label]
        knows = posterior[coded.item, coded.label] * th / np.maximum(th + spam, _TINY)
        spammed = 1.0 - knows
        n = np.bincount(coded.annotator, minlength=coded.n_annotators)
        theta = (np.bincount(coded.annotator, weights=knows, minlength=coded.n_annotators)
                 + smoothing) / (n + 2 * smoothing)  # fmt: skip
        counts = (
            np.bincount(
                coded.annotator * coded.n_labels + coded.label,
                weights=spammed,
                minlength=coded.n_annotators * coded.n_labels,
            ).reshape(coded.n_annotators, coded.n_labels)
            + smoothing
        )
        totals = counts.sum(axis=1, keepdims=True)
        xi = np.where(totals > 0, counts / np.where(totals > 0, totals, 1), 1 / coded.n_labels)
        posterior, log_likelihood = _e_step(coded, theta, xi)
        if log_likelihood - previous <= tolerance * abs(log_likelihood):
            break
        previous = log_likelihood
    return _Fit(theta, xi, posterior, log_likelihood, done)
