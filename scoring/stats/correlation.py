"""Correlation of metric scores with human judgments at sample, dataset or system level.

Every result names its coefficient (Kendall's variant included) and level, and says
how many outputs, documents and systems it used and how many groups it skipped, as
mt-metrics-eval does. Degenerate groups follow a named :class:`DegeneratePolicy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import numpy.typing as npt
import scipy.stats

from scoring.stats.ranking import (
    BoolArray,
    FloatArray,
    Groups,
    IntArray,
    count_descents,
    rank_rows,
    tie_runs,
)


class Level(Enum):
    """Where the correlation is taken."""

    SAMPLE = "sample"  # within each document across its outputs, then averaged
    DATASET = "dataset"  # all outputs pooled
    SYSTEM = "system"  # per-system means, then correlated


class Coefficient(Enum):
    """The correlation coefficient; the value names Kendall's variant."""

    PEARSON = "pearson"
    SPEARMAN = "spearman"
    KENDALL_B = "kendall_tau_b"
    KENDALL_C = "kendall_tau_c"


class DegeneratePolicy(Enum):
    """What a group whose human or metric scores are all equal contributes.

    Groups with fewer than two scored pairs are skipped under either policy, and
    missing scores (NaN) always drop their pair.
    """

    SKIP = "skip"  # leave the group out of the average (UniEval, G-Eval)
    ZERO = "zero"  # count the group as a correlation of 0


# Kendall's pairwise comparisons cost width² per row; wider rows use scipy's
# O(n log n) algorithm instead.
KENDALL_PAIRWISE_MAX = 256


@dataclass(frozen=True, eq=False)
class CorrelationResult:
    """One correlation and what went into it.

    ``n_skipped`` and ``n_constant`` count correlation groups: documents at sample
    level, the single pooled set (0 or 1) at dataset and system level. A constant
    group is skipped under ``SKIP`` and counted as 0 under ``ZERO``. ``n_missing``
    counts pairs dropped because a score was NaN. ``n_documents`` is the documents
    averaged at sample level, else the documents with a scored pair (0 when no
    document keys were given); ``n_systems`` likewise counts systems with a scored
    pair (0 when no system keys were given). ``per_group`` holds each document's
    correlation at sample level, aligned with the document keys (NaN where skipped).
    """

    value: float
    coefficient: Coefficient
    level: Level
    policy: DegeneratePolicy
    n_outputs: int
    n_documents: int
    n_systems: int
    n_skipped: int
    n_constant: int
    n_missing: int
    per_group: FloatArray | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class GroupCorrelations:
    """Raw per-group coefficients: NaN where a group has < 2 pairs or is constant."""

    r: FloatArray
    n: IntArray
    constant: BoolArray

    def values(self, policy: DegeneratePolicy) -> FloatArray:
        """Each group's contribution under ``policy``; NaN marks a skipped group."""
        if policy is DegeneratePolicy.ZERO:
            return np.where(self.constant & (self.n >= 2), 0.0, self.r)
        return self.r


def as_scores(values: npt.ArrayLike, name: str) -> FloatArray:
    """A 1-D float64 view of ``values`` (no copy when it already is one)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    return array


def as_groups(keys: Groups | npt.ArrayLike, n_items: int, name: str) -> Groups:
    """A :class:`Groups` index, built from keys unless one is passed (reuse one)."""
    groups = keys if isinstance(keys, Groups) else Groups.from_keys(keys)
    if groups.n_items != n_items:
        raise ValueError(f"{name} has {groups.n_items} items, the scores have {n_items}")
    return groups


def row_correlations(x: FloatArray, y: FloatArray, coefficient: Coefficient) -> GroupCorrelations:
    """The coefficient of each row of two equally shaped 2-D arrays; NaN marks padding."""
    mask = ~(np.isnan(x) | np.isnan(y))
    n = mask.sum(axis=1).astype(np.intp)
    x = np.where(mask, x, np.nan)
    y = np.where(mask, y, np.nan)
    # Constant means every value equals the row's maximum (not a zero variance: a
    # computed variance can be a rounding error away from zero).
    constant = _constant(x) | _constant(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        if coefficient is Coefficient.PEARSON:
            r = _pearson_rows(x, y, mask, n)
        elif coefficient is Coefficient.SPEARMAN:
            r = _pearson_rows(rank_rows(x), rank_rows(y), mask, n)
        else:
            r = _kendall_rows(x, y, n, coefficient)
    r = np.where(constant | (n < 2), np.nan, r)
    return GroupCorrelations(r=r, n=n, constant=constant & (n >= 2))


def _constant(x: FloatArray) -> BoolArray:
    top = np.where(np.isnan(x), -np.inf, x).max(axis=1, initial=-np.inf)
    return np.asarray(np.all(np.isnan(x) | (x == top[:, None]), axis=1), dtype=bool)


def _pearson_rows(x: FloatArray, y: FloatArray, mask: BoolArray, n: IntArray) -> FloatArray:
    # Centre first (as scipy does): raw sums of squares lose precision.
    dx = np.where(mask, x - np.where(mask, x, 0.0).sum(axis=1, keepdims=True) / n[:, None], 0.0)
    dy = np.where(mask, y - np.where(mask, y, 0.0).sum(axis=1, keepdims=True) / n[:, None], 0.0)
    r = np.einsum("ij,ij->i", dx, dy) / np.sqrt(
        np.einsum("ij,ij->i", dx, dx) * np.einsum("ij,ij->i", dy, dy)
    )
    return np.asarray(np.clip(r, -1.0, 1.0), dtype=np.float64)


def _kendall_rows(
    x: FloatArray, y: FloatArray, n: IntArray, coefficient: Coefficient
) -> FloatArray:
    rows, width = x.shape
    variant = "b" if coefficient is Coefficient.KENDALL_B else "c"
    if width > KENDALL_PAIRWISE_MAX:
        out = np.full(rows, np.nan)
        for row in range(rows):
            keep = ~np.isnan(x[row])
            # Constant rows are NaN anyway; skipping them avoids scipy's warning.
            if keep.sum() >= 2 and np.ptp(x[row, keep]) > 0 and np.ptp(y[row, keep]) > 0:
                out[row] = scipy.stats.kendalltau(
                    x[row, keep], y[row, keep], variant=variant
                ).statistic
        return out
    # Sort each row by x, then y (padding last). A pair i < j is then discordant
    # exactly when y falls, because pairs tied in x are in ascending y. The tie counts
    # give the rest: S = C - D = pairs - ties_x - ties_y + ties_xy - 2 D.
    order = np.lexsort((y, x), axis=1)
    xs = np.take_along_axis(x, order, axis=1)
    ys = np.take_along_axis(y, order, axis=1)
    tied_x, classes_x = tie_runs(xs)
    tied_y, classes_y = tie_runs(np.sort(y, axis=1))
    tied_xy, _ = tie_runs(xs, ys)
    count = n.astype(np.float64)
    pairs = count * (count - 1) / 2
    s = pairs - tied_x - tied_y + tied_xy - 2 * count_descents(ys)
    if variant == "b":
        return np.asarray(s / np.sqrt((pairs - tied_x) * (pairs - tied_y)), dtype=np.float64)
    classes = np.minimum(classes_x, classes_y).astype(np.float64)
    return np.asarray(2 * s / (count**2 * (classes - 1) / classes), dtype=np.float64)


def group_correlations(
    x: FloatArray, y: FloatArray, groups: Groups, coefficient: Coefficient
) -> GroupCorrelations:
    """The coefficient within each group, all groups at once (no NaN in x or y)."""
    r = np.full(groups.n_groups, np.nan)
    constant = np.zeros(groups.n_groups, dtype=bool)
    for block in groups.blocks:
        part = row_correlations(block.gather(x), block.gather(y), coefficient)
        r[block.rows] = part.r
        constant[block.rows] = part.constant
    return GroupCorrelations(r=r, n=groups.sizes, constant=constant)


def system_means(
    x: FloatArray, y: FloatArray, systems: Groups, valid: BoolArray
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Per-system means of the valid pairs, and which systems have any."""
    codes = systems.codes[valid]
    count = np.bincount(codes, minlength=systems.n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.bincount(codes, weights=x[valid], minlength=systems.n_groups) / count
        my = np.bincount(codes, weights=y[valid], minlength=systems.n_groups) / count
    return mx, my, count > 0


def correlate(
    metric: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    docs: Groups | npt.ArrayLike | None = None,
    systems: Groups | npt.ArrayLike | None = None,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
) -> CorrelationResult:
    """Correlate metric scores with human judgments, aligned by output.

    ``docs`` (document keys or a prebuilt :class:`Groups`, reused across calls for
    speed) is required at sample level; ``systems`` at system level. Pairs with a NaN
    on either side are dropped and counted in ``n_missing``. At sample level the
    result is the unweighted mean of the per-document coefficients.
    """
    x = as_scores(metric, "metric")
    y = as_scores(human, "human")
    if x.shape != y.shape:
        raise ValueError(f"metric has {x.size} scores, human has {y.size}")
    doc_groups = None if docs is None else as_groups(docs, x.size, "docs")
    sys_groups = None if systems is None else as_groups(systems, x.size, "systems")
    valid = np.isfinite(x) & np.isfinite(y)
    all_valid = bool(valid.all())
    n_missing = int(x.size - valid.sum())
    n_documents = 0 if doc_groups is None else _count_present(doc_groups, valid)
    n_systems = 0 if sys_groups is None else _count_present(sys_groups, valid)

    if level is Level.SAMPLE:
        if doc_groups is None:
            raise ValueError("sample level needs document keys (docs=...)")
        groups = doc_groups if all_valid else doc_groups.subset(valid)
        xs, ys = (x, y) if all_valid else (x[valid], y[valid])
        per_doc = group_correlations(xs, ys, groups, coefficient)
        values = per_doc.values(policy)
        used = ~np.isnan(values)
        n_used = int(used.sum())
        return CorrelationResult(
            value=float(values[used].mean()) if n_used else float("nan"),
            coefficient=coefficient,
            level=level,
            policy=policy,
            n_outputs=int(per_doc.n[used].sum()),
            n_documents=n_used,
            n_systems=n_systems,
            n_skipped=doc_groups.n_groups - n_used,
            n_constant=int(per_doc.constant.sum()),
            n_missing=n_missing,
            per_group=values,
        )
    if level is Level.DATASET:
        row_x, row_y = x[valid][None, :], y[valid][None, :]
    elif level is Level.SYSTEM:
        if sys_groups is None:
            raise ValueError("system level needs system keys (systems=...)")
        mx, my, present = system_means(x, y, sys_groups, valid)
        row_x, row_y = mx[present][None, :], my[present][None, :]
    else:  # pragma: no cover - exhaustive over Level
        raise ValueError(f"unknown level {level!r}")
    pooled = row_correlations(row_x, row_y, coefficient)
    value = float(pooled.values(policy)[0])
    return CorrelationResult(
        value=value,
        coefficient=coefficient,
        level=level,
        policy=policy,
        n_outputs=int(valid.sum()),
        n_documents=n_documents,
        n_systems=n_systems,
        n_skipped=int(np.isnan(value)),
        n_constant=int(pooled.constant[0]),
        n_missing=n_missing,
    )


def _count_present(groups: Groups, valid: BoolArray) -> int:
    return int(np.count_nonzero(np.bincount(groups.codes[valid], minlength=groups.n_groups)))


def intercorrelation(
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    docs: Groups | npt.ArrayLike | None = None,
    systems: Groups | npt.ArrayLike | None = None,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
) -> FloatArray:
    """Aspects × aspects correlation matrix of human judgments.

    ``human`` has one row per aspect, one column per output. Entry (i, j) is
    :func:`correlate` of aspect i with aspect j at ``level``; the matrix is symmetric.
    The diagonal is computed too: 1, or less under ``ZERO`` where constant documents
    count as 0, and NaN where an aspect has no usable group.
    """
    scores = np.asarray(human, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(f"human must be aspects × outputs, got shape {scores.shape}")
    n_aspects, n_outputs = scores.shape
    doc_groups = None if docs is None else as_groups(docs, n_outputs, "docs")
    sys_groups = None if systems is None else as_groups(systems, n_outputs, "systems")
    matrix = np.full((n_aspects, n_aspects), np.nan)
    for i in range(n_aspects):
        for j in range(i, n_aspects):
            result = correlate(
                scores[i],
                scores[j],
                level=level,
                coefficient=coefficient,
                docs=doc_groups,
                systems=sys_groups,
                policy=policy,
            )
            matrix[i, j] = matrix[j, i] = result.value
    return matrix
