"""Diagnostics of a metric beside the humans: the human ceiling (leave one annotator
out), length bias (correlation with output length, and the metric–human correlation
with length partialled out), and where a metric disagrees most (per system).

Pure numpy; the callers choose the correlation (the matrix's own, for the ceiling).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from scoring.stats.correlation import correlate
from scoring.stats.group_correlations import group_correlations
from scoring.stats.ranking import FloatArray, Groups, IntArray
from scoring.stats.settings import Coefficient, Level

# Coefficients a partial correlation exists for here: Pearson on the values, or on ranks.
PARTIAL_COEFFICIENTS = (Coefficient.PEARSON, Coefficient.SPEARMAN)
# A partial correlation with one control spends a degree of freedom: fewer than 4
# complete triples leave it at ±1 or undefined.
MIN_PARTIAL = 4


def whitespace_tokens(texts: list[str]) -> IntArray:
    """Each text's length in whitespace-separated tokens."""
    return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))


# --- the human ceiling ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LeaveOneOut:
    """Each annotator's correlation with the mean of the others (``values[a]``, NaN
    where it has fewer than 2 outputs judged by someone else too; ``n_outputs[a]``
    those outputs), and their mean over the annotators with a value."""

    values: FloatArray
    n_outputs: IntArray

    @property
    def mean(self) -> float:
        finite = self.values[np.isfinite(self.values)]
        return float(finite.mean()) if finite.size else float("nan")

    @property
    def n_annotators(self) -> int:
        """Annotators with a value (those who share outputs with someone else)."""
        return int(np.isfinite(self.values).sum())


def leave_one_out(
    rows: npt.ArrayLike,
    annotators: npt.ArrayLike,
    values: npt.ArrayLike,
    n_rows: int,
    n_annotators: int,
    correlate_rows: Callable[[IntArray, FloatArray, FloatArray], float],
) -> LeaveOneOut:
    """Leave-one-annotator-out agreement from judgments given as triples: judgment k
    is annotator ``annotators[k]`` (a code below ``n_annotators``) scoring output row
    ``rows[k]`` (below ``n_rows``) with ``values[k]`` (NaN: none). An annotator judges
    an output at most once.

    For each annotator a, over the outputs a judged that someone else judged too,
    ``correlate_rows(outputs, a's scores, the others' mean scores)`` (aligned with the
    output rows, so the caller can correlate at any level with its own groups)."""
    row = np.asarray(rows, dtype=np.int64)
    who = np.asarray(annotators, dtype=np.int64)
    value = np.asarray(values, dtype=np.float64)
    if not row.shape == who.shape == value.shape or row.ndim != 1:
        raise ValueError("rows, annotators and values must be 1-D and aligned")
    keep = np.isfinite(value)
    row, who, value = row[keep], who[keep], value[keep]
    if row.size and (
        row.min() < 0 or row.max() >= n_rows or who.min() < 0 or who.max() >= n_annotators
    ):
        raise ValueError("a row or annotator code is out of range")
    pairs = row * n_annotators + who
    repeated = (
        np.bincount(pairs).max(initial=0) > 1
        if n_rows * n_annotators < (1 << 26)  # counting beats sorting up to ~67 M cells
        else np.unique(pairs).size != row.size
    )
    if repeated:
        raise ValueError("an annotator judged an output twice")
    total = np.bincount(row, weights=value, minlength=n_rows)
    count = np.bincount(row, minlength=n_rows)
    out = np.full(n_annotators, np.nan)
    n_out = np.zeros(n_annotators, dtype=np.int64)
    for a in range(n_annotators):
        mine = who == a
        shared = mine & (count[row] >= 2)
        outputs = row[shared]
        n_out[a] = outputs.size
        if outputs.size < 2:
            continue
        own = value[shared]
        others = (total[outputs] - own) / (count[outputs] - 1)
        out[a] = correlate_rows(outputs, own, others)
    return LeaveOneOut(values=out, n_outputs=n_out)


# --- length bias ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PartialResult:
    """A partial correlation of x and y given z: its value (the mean over documents at
    sample level), the outputs with all three scores, and the correlation groups used
    (documents at sample level; 1 or 0 otherwise)."""

    value: float
    n_outputs: int
    n_groups: int
    per_group: FloatArray | None = None


def _partial_from(rxy: FloatArray, rxz: FloatArray, ryz: FloatArray) -> FloatArray:
    """The closed form (r_xy − r_xz·r_yz) / √((1 − r_xz²)(1 − r_yz²)); NaN where z
    explains x or y entirely."""
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = np.sqrt((1 - rxz**2) * (1 - ryz**2))
        value = (rxy - rxz * ryz) / denominator
    return np.where(denominator > 1e-12, np.clip(value, -1.0, 1.0), np.nan)


def _check(coefficient: Coefficient) -> None:
    if coefficient not in PARTIAL_COEFFICIENTS:
        raise ValueError("a partial correlation is Pearson's, or Spearman's (on ranks)")


def partial_correlation(
    x: npt.ArrayLike, y: npt.ArrayLike, z: npt.ArrayLike, coefficient: Coefficient
) -> float:
    """The correlation of x and y with z partialled out, over the complete triples:
    Pearson's, or Spearman's (Pearson's on the ranks). NaN with fewer than
    :data:`MIN_PARTIAL` triples or when z explains x or y entirely."""
    _check(coefficient)
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (x, y, z))
    valid = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    if valid.sum() < MIN_PARTIAL:
        return float("nan")
    a, b, c = a[valid], b[valid], c[valid]
    if coefficient is Coefficient.SPEARMAN:
        a, b, c = rankdata(a), rankdata(b), rankdata(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.atleast_2d(np.corrcoef(np.vstack([a, b, c])))
    if not np.all(np.isfinite(r)):
        return float("nan")
    return float(_partial_from(r[0, 1], r[0, 2], r[1, 2]))


def partial_correlate(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    z: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    docs: Groups | None = None,
    systems: Groups | None = None,
) -> PartialResult:
    """:func:`partial_correlation` at a level, as :func:`correlate` places the matrix's
    cells: within each document then averaged over the documents with a value
    (sample), all outputs pooled (dataset), or on per-system means (system)."""
    _check(coefficient)
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (x, y, z))
    valid = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    n = int(valid.sum())
    if level is Level.DATASET:
        value = partial_correlation(a[valid], b[valid], c[valid], coefficient)
        return PartialResult(value, n, int(np.isfinite(value)))
    if level is Level.SYSTEM:
        if systems is None:
            raise ValueError("system level needs system keys (systems=...)")
        codes = systems.codes[valid]
        count = np.bincount(codes, minlength=systems.n_groups)
        present = count > 0
        means = [
            np.bincount(codes, weights=v[valid], minlength=systems.n_groups)[present]
            / count[present]
            for v in (a, b, c)
        ]
        value = partial_correlation(means[0], means[1], means[2], coefficient)
        return PartialResult(value, n, int(np.isfinite(value)))
    if docs is None:
        raise ValueError("sample level needs document keys (docs=...)")
    groups = docs.subset(valid)
    xs, ys, zs = a[valid], b[valid], c[valid]
    rxy, rxz, ryz = (
        group_correlations(p, q, groups, coefficient).r for p, q in ((xs, ys), (xs, zs), (ys, zs))
    )
    per_doc = np.where(groups.sizes >= MIN_PARTIAL, _partial_from(rxy, rxz, ryz), np.nan)
    finite = np.isfinite(per_doc)
    value = float(per_doc[finite].mean()) if finite.any() else float("nan")
    return PartialResult(value, int(groups.sizes[finite].sum()), int(finite.sum()), per_doc)


# --- where a metric disagrees ---------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SystemRanks:
    """Per system (aligned with the system codes): its mean metric and human score on
    the outputs with both, its rank by each (1 = highest; ties share the average rank;
    NaN for a system without such outputs), and ``gap`` = metric rank − human rank
    (positive: the metric ranks it lower than the humans do)."""

    metric_mean: FloatArray
    human_mean: FloatArray
    metric_rank: FloatArray
    human_rank: FloatArray
    n_outputs: IntArray

    @property
    def gap(self) -> FloatArray:
        return self.metric_rank - self.human_rank


def system_ranks(metric: npt.ArrayLike, human: npt.ArrayLike, systems: Groups) -> SystemRanks:
    """Rank the systems by their mean metric score and by their mean human score."""
    x, y = np.asarray(metric, dtype=np.float64), np.asarray(human, dtype=np.float64)
    valid = np.isfinite(x) & np.isfinite(y)
    codes = systems.codes[valid]
    count = np.bincount(codes, minlength=systems.n_groups)
    present = count > 0
    ranks = []
    means = []
    for v in (x, y):
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(codes, weights=v[valid], minlength=systems.n_groups) / count
        mean = np.where(present, mean, np.nan)
        rank = np.full(systems.n_groups, np.nan)
        rank[present] = rankdata(-mean[present])
        means.append(mean)
        ranks.append(rank)
    return SystemRanks(means[0], means[1], ranks[0], ranks[1], count.astype(np.int64))


def per_document(
    metric: npt.ArrayLike, human: npt.ArrayLike, docs: Groups, coefficient: Coefficient
) -> FloatArray:
    """Each document's correlation of metric and human across its outputs (NaN where it
    has fewer than 2 scored outputs or either side is constant)."""
    return correlate(
        metric, human, level=Level.SAMPLE, coefficient=coefficient, docs=docs
    ).per_group  # type: ignore[return-value]
