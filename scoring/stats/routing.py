"""Informative-first routing: which document to judge next so that the interval of one
comparison (run A against run B: the difference of their sample-level Spearman
correlations with the humans on one aspect) narrows fastest, and that interval.

Why this design (``bench/routing.py`` measures it on SummEval):

* On one document, with z the standardised within-document ranks,
  ``ρ(A,H) − ρ(B,H) = b · u`` where ``b = sd(z_A − z_B) = sqrt(2 (1 − ρ(A,B)))`` comes
  from the metrics alone and ``u = corr(z_A − z_B, z_H)`` in [−1, 1] needs the humans.
  A document on which the runs rank the outputs alike (small b) can hardly move the
  comparison whatever the judges say; one on which they disagree can move it a lot.
* So the documents are cut into bands (strata) of equal size by b, and the comparison
  is estimated per band and weighted by the band's share of the documents: a stratified
  mean, unbiased however unevenly the bands are judged. Its variance is
  ``Σ W_h² S_h² / n_h``; judging one more document of band h lowers it by
  ``W_h² S_h² / (n_h (n_h + 1))``, the routing score. Taking the best score each time
  is the Neyman allocation: more judgments where the differences spread most.
* S_h², the spread of band h's differences, starts as a prior from the metrics (σ_u²
  times the band's mean b²); the judged documents' differences update it (the prior
  counts as ``PRIOR_WEIGHT`` documents), and σ_u² itself is pooled from every judged
  document.
* A band needs two judged documents before its spread can be estimated, so every band
  is first filled to two, the most disagreeing first. Within a band the documents tie
  and a seeded random key decides: each band's judged documents are a random sample of
  it, which keeps the band means unbiased. A document already started (some outputs
  judged) comes before fresh ones, so work is finished before more is begun.

Ranking documents by disagreement and averaging the judged ones, as a plain bootstrap
over them would, does not estimate the question: that sample over-represents the
documents the routing preferred. (Taking the *agreeing* documents first narrows the plain
interval fastest, and misses the truth; the bench shows both.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.stats

from scoring.stats.group_correlations import as_groups, as_scores, group_correlations
from scoring.stats.ranking import BoolArray, FloatArray, Groups, IntArray
from scoring.stats.settings import Coefficient

MAX_BANDS = 5
DOCS_PER_BAND = 10  # fewer documents, fewer bands: one band below 20 documents
PRIOR_WEIGHT = 2.0  # how many judged documents the prior spread of a band is worth
FIRST_PER_BAND = 2  # judged documents a band needs before its spread is estimated


@dataclass(frozen=True)
class Question:
    """The comparison's names, for the reasons: run A, run B and the aspect."""

    run_a: str = "A"
    run_b: str = "B"
    aspect: str = "the aspect"


@dataclass(frozen=True, eq=False)
class Routing:
    """Per document (aligned with ``keys``, the sorted document keys) and per band.

    ``agreement`` is the Spearman ρ between the two runs on the document (NaN where it is
    undefined: a run gives all of the document's outputs one score); ``band`` runs from 0
    (the runs agree most) to ``n_bands - 1``, -1 where the agreement is undefined.
    ``difference`` is ρ(A,H) − ρ(B,H) on judged documents (NaN elsewhere, and where the
    humans gave every output one score), and 0 on ``settled`` ones: the runs rank their
    outputs alike, so no judgment can change that. ``started`` documents have some of
    their outputs judged. ``gain`` is the drop in the variance of the estimate if the
    document is judged next; for a judged document, its share of that variance (what a
    further judgment of it could change). ``first`` marks documents of bands still short
    of ``FIRST_PER_BAND`` judged documents. ``order`` lists the documents, the next to
    judge first. Per band: ``weights`` (share of documents), ``spread`` (S², the
    variance of its differences), ``n_judged`` (documents with a known difference,
    settled ones included).
    """

    keys: npt.NDArray[Any]
    agreement: FloatArray
    band: IntArray
    judged: BoolArray
    started: BoolArray
    settled: BoolArray
    difference: FloatArray
    gain: FloatArray
    first: BoolArray
    order: IntArray
    weights: FloatArray
    spread: FloatArray
    n_judged: IntArray
    question: Question

    @property
    def n_bands(self) -> int:
        return int(self.weights.size)

    @cached_property
    def reasons(self) -> tuple[str, ...]:
        """One line per document: why it stands where it does in the order."""
        return tuple(self.reason(k) for k in range(self.keys.size))

    def reason(self, k: int) -> str:
        """Why document ``k`` (a position in ``keys``) stands where it does."""
        q, h = self.question, int(self.band[k])
        if h < 0:
            return f"{q.run_a} or {q.run_b} gives all its outputs one score: it cannot tell them apart here"
        where = (
            f"ρ({q.run_a}, {q.run_b}) = {self.agreement[k]:.2f} here, "
            f"disagreement band {h + 1} of {self.n_bands}"
        )
        lead = "started, so finished first: " if self.started[k] else ""
        if self.settled[k]:
            return (
                f"{lead}ρ({q.run_a}, {q.run_b}) = 1.00 here: the runs rank its outputs alike, "
                f"so {q.run_a} − {q.run_b} is 0 here whatever the judges say"
            )
        if self.judged[k]:
            if not np.isfinite(self.difference[k]):
                return "judged; the humans gave every output one score, so it does not count"
            return (
                f"judged: {q.run_a} − {q.run_b} = {self.difference[k]:+.2f} here ({where}); "
                f"its share of the variance {self.gain[k]:.1e}"
            )
        if self.first[k]:
            missing = FIRST_PER_BAND - int(self.n_judged[h])
            plural = "s" if missing > 1 else ""
            return f"{lead}{where}; the band needs {missing} more judged document{plural} to size its spread"
        return (
            f"{lead}{where}; differences there spread ±{math.sqrt(self.spread[h]):.2f}; judging "
            f"it narrows {q.run_a} − {q.run_b} on {q.aspect} by variance {self.gain[k]:.1e}"
        )


@dataclass(frozen=True)
class Estimate:
    """The stratified estimate of ρ(A,H) − ρ(B,H) and its ``1 - alpha`` interval
    (Student's t with Satterthwaite's degrees of freedom)."""

    value: float
    low: float
    high: float
    alpha: float
    n_judged: int
    n_bands: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def band_count(n_documents: int) -> int:
    """How many bands ``n_documents`` documents make (1 to ``MAX_BANDS``)."""
    return max(1, min(MAX_BANDS, n_documents // DOCS_PER_BAND))


def route(
    metric_a: npt.ArrayLike,
    metric_b: npt.ArrayLike,
    human: npt.ArrayLike,
    docs: Groups | npt.ArrayLike,
    rng: np.random.Generator,
    *,
    question: Question | None = None,
    n_bands: int | None = None,
) -> Routing:
    """Score every document for informative-first routing (see the module docstring).

    One entry per output in ``metric_a``, ``metric_b``, ``human`` and ``docs``
    (document keys or a :class:`Groups`). ``human`` is NaN where the output has no
    judgment yet; a document counts as judged when all its outputs have one. NaN metric
    scores drop their output. The tie-breaking keys are the first draw from ``rng``, so
    a generator seeded alike gives the same order. ``n_bands`` defaults to
    :func:`band_count` of the documents with a defined agreement.
    """
    a = as_scores(metric_a, "metric_a")
    b = as_scores(metric_b, "metric_b")
    y = as_scores(human, "human")
    if not a.size == b.size == y.size:
        raise ValueError("metric_a, metric_b and human must have one entry per output")
    if n_bands is not None and n_bands < 1:
        raise ValueError("n_bands must be at least 1")
    groups = as_groups(docs, a.size, "docs")
    n_docs = groups.n_groups
    tie = rng.random(n_docs)

    scored = np.isfinite(a) & np.isfinite(b)
    agreement = _per_document(a, b, scored, groups)
    spread_b = np.sqrt(np.clip(2.0 * (1.0 - agreement), 0.0, None))  # NaN stays NaN
    known = np.bincount(groups.codes, weights=np.isfinite(y), minlength=n_docs)
    judged = known == groups.sizes
    started = (known > 0) & ~judged
    usable = scored & np.isfinite(y)
    difference = np.where(
        judged,
        _per_document(a, y, usable, groups) - _per_document(b, y, usable, groups),
        np.nan,
    )

    valid = np.isfinite(agreement)
    # Runs that rank a document's outputs alike differ by 0 on it whatever the judges say
    # (unless they give every output one score): its difference is known already.
    settled = valid & (agreement >= 1.0 - 1e-12) & ~judged
    difference[settled] = 0.0
    n_valid = int(valid.sum())
    bands = min(n_bands or band_count(n_valid), max(1, n_valid))
    band = np.full(n_docs, -1, dtype=np.intp)
    ranked = np.flatnonzero(valid)[np.lexsort((tie[valid], spread_b[valid]))]
    band[ranked] = np.arange(ranked.size) * bands // max(1, ranked.size)

    sizes = groups.sizes[valid]
    outputs = float(sizes.mean()) if sizes.size else 2.0
    weights, spread, n_judged = _bands(band, bands, spread_b, difference, outputs)
    gain, first = _gains(band, judged | settled, difference, weights, spread, n_judged)
    # Started documents first, then fresh ones (bands short of judged documents first),
    # then settled ones, then judged ones; an undefined agreement goes last in its group.
    # Then the best gain, then the seeded tie-break.
    group = np.select([started, judged, settled], [0, 3, 2], default=1)
    order = np.lexsort((tie, -gain, ~first, ~valid, group)).astype(np.intp)
    return Routing(
        keys=groups.keys,
        agreement=agreement,
        band=band,
        judged=judged,
        started=started,
        settled=settled,
        difference=difference,
        gain=gain,
        first=first,
        order=order,
        weights=weights,
        spread=spread,
        n_judged=n_judged,
        question=question or Question(),
    )


def estimate(routing: Routing, alpha: float = 0.05) -> Estimate | None:
    """The stratified estimate of the comparison with its interval; None until every
    band has ``FIRST_PER_BAND`` judged documents.

    The band variances are the spreads the routing uses (observed, pulled towards the
    metrics' prior by ``PRIOR_WEIGHT`` documents), which also adds that many degrees of
    freedom per band. The band weights are taken as fixed (their sampling adds a term of
    the order of the between-band variance / documents, negligible beside the rest).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie in (0, 1)")
    n = routing.n_judged
    if (n < FIRST_PER_BAND).any() or not (routing.band >= 0).any():
        return None
    seen = np.isfinite(routing.difference) & (routing.band >= 0)
    sums = np.bincount(routing.band[seen], weights=routing.difference[seen], minlength=n.size)
    value = float(routing.weights @ (sums / n))
    terms = routing.weights**2 * routing.spread / n
    variance = float(terms.sum())
    half = 0.0
    if variance > 0:
        df = variance**2 / float(np.sum(terms**2 / (n - 1 + PRIOR_WEIGHT)))
        half = float(scipy.stats.t.ppf(1 - alpha / 2, df)) * math.sqrt(variance)
    return Estimate(
        value=value,
        low=value - half,
        high=value + half,
        alpha=alpha,
        n_judged=int(n.sum()),
        n_bands=routing.n_bands,
    )


def _per_document(x: FloatArray, y: FloatArray, keep: BoolArray, groups: Groups) -> FloatArray:
    """Spearman ρ of x and y within each document, over the outputs kept."""
    subset = groups if keep.all() else groups.subset(keep)
    return group_correlations(x[keep], y[keep], subset, Coefficient.SPEARMAN).r


def _bands(
    band: IntArray, bands: int, spread_b: FloatArray, difference: FloatArray, outputs: float
) -> tuple[FloatArray, FloatArray, IntArray]:
    """Per band: share of the documents, spread S² of the differences, judged documents."""
    inside = band >= 0
    counts = np.bincount(band[inside], minlength=bands).astype(np.float64)
    weights = counts / max(1.0, counts.sum())
    seen = inside & np.isfinite(difference)
    n_judged = np.bincount(band[seen], minlength=bands).astype(np.intp)
    # u = difference / b: its variance, pooled over every judged document, scales the
    # prior; before any, that of a correlation with random ranks, 1 / (outputs - 1).
    ratio = seen & (spread_b > 0)
    var_u = _pulled(1.0 / max(1.0, outputs - 1.0), difference[ratio] / spread_b[ratio])
    mean_b2 = np.bincount(band[inside], weights=spread_b[inside] ** 2, minlength=bands)
    prior = var_u * mean_b2 / np.maximum(counts, 1.0)
    spread = np.array([_pulled(prior[h], difference[seen & (band == h)]) for h in range(bands)])
    return weights, spread.astype(np.float64), n_judged


def _pulled(prior: float, values: FloatArray) -> float:
    """The sample variance of ``values`` pulled towards ``prior`` (worth PRIOR_WEIGHT values)."""
    if values.size < 2:
        return float(prior)
    squares = float(np.sum((values - values.mean()) ** 2))
    return (PRIOR_WEIGHT * float(prior) + squares) / (PRIOR_WEIGHT + values.size - 1)


def _gains(
    band: IntArray,
    judged: BoolArray,
    difference: FloatArray,
    weights: FloatArray,
    spread: FloatArray,
    n_judged: IntArray,
) -> tuple[FloatArray, BoolArray]:
    """The drop in variance if each document is judged next (for a judged one, its share
    of the variance), and whether its band is still short of judged documents."""
    inside = band >= 0
    h = np.where(inside, band, 0)
    n = n_judged[h].astype(np.float64)
    term = np.where(inside, weights[h] ** 2 * spread[h], 0.0)
    fresh = inside & ~judged
    gain = np.where(fresh, term / np.where(n >= 1, n * (n + 1), 1.0), 0.0)
    first = fresh & (n < FIRST_PER_BAND) & (term > 0)
    seen = inside & judged & np.isfinite(difference) & (n >= 2)
    if seen.any():
        sums = np.bincount(band[seen], weights=difference[seen], minlength=weights.size)
        deviation = difference[seen] - (sums / np.maximum(n_judged, 1))[band[seen]]
        gain[seen] = weights[h[seen]] ** 2 * deviation**2 / (n[seen] * (n[seen] - 1))
    return gain, first
