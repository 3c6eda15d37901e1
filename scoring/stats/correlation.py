"""Correlation of metric scores with human judgments at sample, dataset or system level.

Every result names its coefficient (Kendall's variant included) and level, and says
how many outputs, documents and systems it used and how many groups it skipped, as
mt-metrics-eval does. Degenerate groups follow a named :class:`DegeneratePolicy`.

Besides the classic coefficients, the statistics WMT now reports (see
:mod:`scoring.stats.pairwise` and :mod:`scoring.stats.spa`): pairwise accuracy acc23
and Kendall's τ23 with ties (segment level: per document, or all pairs pooled), WMT20's
Kendall-like τ (segment level), the pairwise difference Pearson, and soft pairwise
accuracy (system level only). :func:`unsupported` says which combinations exist.

The settings (coefficients, levels, options, :func:`unsupported`) are
:mod:`scoring.stats.settings`; the per-group kernels under every level
:mod:`scoring.stats.group_correlations`. Both are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from scoring.stats.group_correlations import (
    KENDALL_PAIRWISE_MAX,
    DocRanks,
    GroupCorrelations,
    as_groups,
    as_scores,
    group_correlations,
    row_correlations,
)
from scoring.stats.kendall import ColumnOrder, kendall_from_orders
from scoring.stats.kendall_within import DocCodes
from scoring.stats.pairwise import (
    CALIBRATION_MAX_PAIRS,
    RightPairs,
    TieCalibration,
    calibrate_groups,
    pdp_from_sums,
    pdp_sums,
)
from scoring.stats.ranking import BoolArray, FloatArray, Groups, IntArray
from scoring.stats.settings import (
    DEFAULT_OPTIONS,
    LEVELS_OF,
    SEGMENT_LEVELS,
    TIE_COEFFICIENTS,
    Average,
    Coefficient,
    DegeneratePolicy,
    Level,
    Options,
    Settings,
    Unsupported,
    unsupported,
)
from scoring.stats.spa import SpaResult, soft_pairwise_accuracy

T = TypeVar("T")

__all__ = [
    "DEFAULT_OPTIONS",
    "KENDALL_PAIRWISE_MAX",
    "LEVELS_OF",
    "SEGMENT_LEVELS",
    "TIE_COEFFICIENTS",
    "Average",
    "Coefficient",
    "CorrelationResult",
    "DegeneratePolicy",
    "GroupCorrelations",
    "Level",
    "Options",
    "SampleLevel",
    "Settings",
    "Unsupported",
    "as_groups",
    "as_scores",
    "calibrate_ties",
    "correlate",
    "group_correlations",
    "intercorrelation",
    "row_correlations",
    "sample_level",
    "system_means",
    "system_sums",
    "system_totals",
    "unsupported",
]


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
    correlation at sample level, aligned with the document keys (NaN where skipped),
    and ``weights`` each document's weight in the average (0 where skipped). PDP pools
    every document's pairs into one value: its ``per_group`` are the documents' own
    values (their Pearson r) and its ``weights`` None; its skipped documents are those
    with fewer than two scored outputs. ``spa`` holds SPA's p-values.
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
    weights: FloatArray | None = field(default=None, repr=False)
    average: Average = Average.MACRO
    options: Options = DEFAULT_OPTIONS
    spa: SpaResult | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class SampleLevel:
    """A sample-level value and its parts (see :func:`sample_level`)."""

    value: float
    per_doc: GroupCorrelations
    values: FloatArray
    weights: FloatArray | None


def sample_level(
    x: FloatArray,
    y: FloatArray,
    groups: Groups,
    coefficient: Coefficient,
    policy: DegeneratePolicy,
    average: Average,
    options: Options = DEFAULT_OPTIONS,
    right: FloatArray | None = None,
    ranks: tuple[DocRanks, DocRanks] | None = None,
    codes: tuple[DocCodes, DocCodes] | None = None,
) -> SampleLevel:
    """The per-document values and their weighted mean (scored outputs only); for PDP
    the pooled pairs of every document instead of a mean. ``right``: acc23's or τ23's
    pairs right per document at ``options.epsilon``, already counted; ``ranks``: x's and
    y's ranks within the documents, already computed (Spearman); ``codes``: their
    dense ranks within the documents, already computed (Kendall's τ-b, τ-c)."""
    if right is None:
        per_doc = group_correlations(x, y, groups, coefficient, options, ranks, codes)
    else:
        per_doc = _tie_counts_to_rows(right, groups.sizes, coefficient)
    values = per_doc.values(policy)
    if coefficient is Coefficient.PDP:
        totals = pdp_sums(x, y, groups)[groups.sizes >= 2].sum(axis=0)
        return SampleLevel(float(pdp_from_sums(totals)), per_doc, values, None)
    weights = per_doc.weights(policy, average)
    total = float(weights.sum())
    value = float(np.sum(weights * np.nan_to_num(values)) / total) if total > 0 else float("nan")
    return SampleLevel(value, per_doc, values, weights)


def _calibrated_counts(
    calibration: TieCalibration | None,
    coefficient: Coefficient,
    options: Options,
    groups: Groups,
) -> FloatArray | None:
    """The per-document right pairs a tie calibration counted, when they apply."""
    if (
        calibration is None
        or calibration.group_right is None
        or coefficient not in TIE_COEFFICIENTS
        or calibration.epsilon != options.epsilon
        or calibration.group_right.size != groups.n_groups
    ):
        return None
    return calibration.group_right


def _tie_counts_to_rows(
    right: FloatArray, sizes: IntArray, coefficient: Coefficient
) -> GroupCorrelations:
    """acc23 or τ23 per group from its right pairs, as :func:`_pairwise_rows` gives it."""
    n = sizes.astype(np.intp)
    count = n.astype(np.float64)
    counts = RightPairs(right, count * (count - 1) / 2)
    r = counts.acc23() if coefficient is Coefficient.ACC23 else counts.tau23()
    return GroupCorrelations(
        r=np.where(n >= 2, r, np.nan),
        n=n,
        constant=np.zeros(n.size, dtype=bool),
        size=count,
    )


def system_means(
    x: FloatArray,
    y: FloatArray,
    systems: Groups,
    valid: BoolArray,
    totals: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Per-system means of the valid pairs, and which systems have any. ``totals``:
    x's and y's :func:`system_totals`, used when every pair is valid (the same sums)."""
    sx, sy, count = system_sums(x, y, systems, valid, totals)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sx / count, sy / count, count > 0


def system_sums(
    x: FloatArray,
    y: FloatArray,
    systems: Groups,
    valid: BoolArray,
    totals: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per-system sums of x and y over the valid pairs, and their counts; ``totals``
    (both sides' :func:`system_totals`) stand for the sums when every pair is valid."""
    every = bool(valid.all())  # then no copies: the same sums, in the same order
    codes = systems.codes if every else systems.codes[valid]
    count = np.bincount(codes, minlength=systems.n_groups).astype(np.float64)
    if every and totals is not None:
        return totals[0], totals[1], count
    xs, ys = (x, y) if every else (x[valid], y[valid])
    n = systems.n_groups
    return system_totals(xs, codes, n), system_totals(ys, codes, n), count


def system_totals(values: FloatArray, codes: IntArray, n_systems: int) -> FloatArray:
    """Each system's sum of ``values`` (``codes``: each value's system): what a system-level
    matrix computes once per column for every cell that shares it."""
    return np.asarray(np.bincount(codes, weights=values, minlength=n_systems), dtype=np.float64)


def correlate(
    metric: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    docs: Groups | npt.ArrayLike | None = None,
    systems: Groups | npt.ArrayLike | None = None,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
    average: Average = Average.MACRO,
    options: Options = DEFAULT_OPTIONS,
    calibration: TieCalibration | None = None,
    ranks: tuple[DocRanks, DocRanks] | None = None,
    orders: tuple[ColumnOrder, ColumnOrder] | None = None,
    totals: tuple[FloatArray, FloatArray] | None = None,
    codes: tuple[DocCodes, DocCodes] | None = None,
) -> CorrelationResult:
    """Correlate metric scores with human judgments, aligned by output.

    ``docs`` (document keys or a prebuilt :class:`Groups`, reused across calls for
    speed) is required at sample level and for SPA; ``systems`` at system level. Pairs
    with a NaN on either side are dropped and counted in ``n_missing``. At sample level
    the result is the mean of the per-document values, unweighted (``MACRO``) or
    weighted by size (``MICRO``; mt-metrics-eval's ``macro=False``); PDP pools the pairs
    of all documents instead. A combination :func:`unsupported` names is refused.

    ``calibration``, the :func:`calibrate_ties` result of these same scores and
    documents whose ε is ``options.epsilon``, saves recounting acc23's and τ23's pairs
    per document at sample level (it counted them at ε).

    ``ranks``, the metric's and the humans' :func:`~scoring.stats.group_correlations.doc_ranks`
    within the documents ``docs`` (a matrix ranks each column once, not once per cell),
    saves ranking them again for a sample-level Spearman where every output is valid
    (else the valid outputs are ranked here, as without them); the value is the same.
    ``orders``, both sides' :func:`~scoring.stats.kendall.column_order`, does the same
    for a dataset-level τ-b or τ-c (:func:`~scoring.stats.kendall.kendall_from_orders`),
    ``codes``, both sides' :func:`~scoring.stats.kendall_within.doc_codes`, for a
    sample-level τ-b or τ-c, and ``totals``, both sides' :func:`system_totals`, for the
    system level.
    """
    x, y = _aligned(metric, human, coefficient, level, average)
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
        counted = _calibrated_counts(calibration, coefficient, options, groups)
        given = ranks if all_valid else None
        coded = codes if all_valid else None
        sample = sample_level(
            xs, ys, groups, coefficient, policy, average, options, counted, given, coded
        )
        per_doc = sample.per_doc
        used = per_doc.n >= 2 if sample.weights is None else ~np.isnan(sample.values)
        n_used = int(used.sum())
        return CorrelationResult(
            value=sample.value,
            coefficient=coefficient,
            level=level,
            policy=policy,
            n_outputs=int(per_doc.n[used].sum()),
            n_documents=n_used,
            n_systems=n_systems,
            n_skipped=doc_groups.n_groups - n_used,
            n_constant=int(per_doc.constant.sum()),
            n_missing=n_missing,
            per_group=sample.values,
            weights=sample.weights,
            average=average,
            options=options,
        )
    if level is Level.DATASET:
        # scipy's counts, as row_correlations takes them past KENDALL_PAIRWISE_MAX
        sorted_already = all_valid and x.size > KENDALL_PAIRWISE_MAX
        pooled = _kendall_from_orders(orders, coefficient) if sorted_already else None
        if pooled is not None:
            counts = (x.size, n_documents, n_systems, 0)
            return _pooled_result(pooled, coefficient, level, policy, counts, options)
        row_x, row_y = x[valid][None, :], y[valid][None, :]
    elif level is Level.SYSTEM:
        if sys_groups is None:
            raise ValueError("system level needs system keys (systems=...)")
        if coefficient is Coefficient.SPA:
            return _spa(x, y, doc_groups, sys_groups, valid, policy, options, n_missing)
        mx, my, present = system_means(x, y, sys_groups, valid, totals)
        row_x, row_y = mx[present][None, :], my[present][None, :]
    else:  # pragma: no cover - exhaustive over Level
        raise ValueError(f"unknown level {level!r}")
    pooled = row_correlations(row_x, row_y, coefficient, options)
    counts = (int(valid.sum()), n_documents, n_systems, n_missing)
    return _pooled_result(pooled, coefficient, level, policy, counts, options)


def _pooled_result(
    pooled: GroupCorrelations,
    coefficient: Coefficient,
    level: Level,
    policy: DegeneratePolicy,
    counts: tuple[int, int, int, int],
    options: Options,
) -> CorrelationResult:
    """A dataset- or system-level result from its one row's correlation; ``counts``:
    valid outputs, documents, systems and missing pairs."""
    n_outputs, n_documents, n_systems, n_missing = counts
    value = float(pooled.values(policy)[0])
    return CorrelationResult(
        value=value,
        coefficient=coefficient,
        level=level,
        policy=policy,
        n_outputs=n_outputs,
        n_documents=n_documents,
        n_systems=n_systems,
        n_skipped=int(np.isnan(value)),
        n_constant=int(pooled.constant[0]),
        n_missing=n_missing,
        options=options,
    )


def _kendall_from_orders(
    orders: tuple[ColumnOrder, ColumnOrder] | None, coefficient: Coefficient
) -> GroupCorrelations | None:
    """The dataset's one row from the columns' sort orders (τ-b, τ-c), if they can give it."""
    variants = {Coefficient.KENDALL_B: "b", Coefficient.KENDALL_C: "c"}
    if orders is None or coefficient not in variants:
        return None
    tau = kendall_from_orders(*orders, variant=variants[coefficient])
    if tau is None:
        return None
    n = orders[0].size
    constant = n >= 2 and min(orders[0].n_classes, orders[1].n_classes) == 1
    return GroupCorrelations(
        r=np.array([tau if n >= 2 and not constant else np.nan]),
        n=np.array([n], dtype=np.intp),
        constant=np.array([constant]),
        size=np.array([float(n)]),
    )


def _spa(
    x: FloatArray,
    y: FloatArray,
    docs: Groups | None,
    systems: Groups,
    valid: BoolArray,
    policy: DegeneratePolicy,
    options: Options,
    n_missing: int,
) -> CorrelationResult:
    if docs is None:
        raise ValueError("spa compares systems document by document: it needs docs=...")
    spa = soft_pairwise_accuracy(
        x, y, docs=docs, systems=systems, seed=options.seed, permutations=options.permutations
    )
    return CorrelationResult(
        value=spa.value,
        coefficient=Coefficient.SPA,
        level=Level.SYSTEM,
        policy=policy,
        n_outputs=int(valid.sum()),
        n_documents=_count_present(docs, valid),
        n_systems=_count_present(systems, valid),
        n_skipped=int(np.isnan(spa.value)),
        n_constant=0,
        n_missing=n_missing,
        options=options,
        spa=spa,
    )


def calibrate_ties(
    metric: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient = Coefficient.ACC23,
    docs: Groups | npt.ArrayLike | None = None,
    average: Average = Average.MACRO,
    max_pairs: int = CALIBRATION_MAX_PAIRS,
    rng: np.random.Generator | None = None,
    curve: bool = False,
) -> TieCalibration:
    """Tie calibration (Deutsch et al. 2023): the ε under which metric differences count
    as ties that maximises acc23 (or τ23, the same ε), per document at sample level
    (the documents' mean, weighted as ``average`` says) or over all pairs pooled at
    dataset level. Outputs with a NaN on either side take no part. The returned
    ``value`` and ``values`` are in the coefficient's own terms; pass
    ``Options(epsilon=result.epsilon)`` to :func:`correlate` for the value with its
    counts. More than ``max_pairs`` pairs: the search runs on a sample drawn by ``rng``.
    ``curve`` also returns the statistic at every threshold where it changes.
    """
    if coefficient not in TIE_COEFFICIENTS:
        raise ValueError("tie calibration applies to acc23 and kendall_23 only")
    x, y = _aligned(metric, human, coefficient, level, average)
    valid = np.isfinite(x) & np.isfinite(y)
    if level is Level.SAMPLE:
        if docs is None:
            raise ValueError("sample level needs document keys (docs=...)")
        groups = as_groups(docs, x.size, "docs").subset(valid)
    else:
        groups = Groups.single(int(valid.sum()))
    weights = groups.sizes.astype(np.float64) if average is Average.MICRO else None
    result = calibrate_groups(
        x[valid], y[valid], groups, group_weights=weights, max_pairs=max_pairs, rng=rng, curve=curve
    )
    if coefficient is Coefficient.KENDALL_23:
        values = None if result.values is None else 2 * result.values - 1
        result = replace(result, value=2 * result.value - 1, values=values)
    return result


def _aligned(
    metric: npt.ArrayLike,
    human: npt.ArrayLike,
    coefficient: Coefficient,
    level: Level,
    average: Average,
) -> tuple[FloatArray, FloatArray]:
    """The scores as 1-D float arrays of one length, once the statistic is known to
    exist with these settings."""
    refusal = unsupported(coefficient, level, average=average)
    if refusal is not None:
        raise ValueError(refusal.message)
    x = as_scores(metric, "metric")
    y = as_scores(human, "human")
    if x.shape != y.shape:
        raise ValueError(f"metric has {x.size} scores, human has {y.size}")
    return x, y


def _both(first: T | None, second: T | None) -> tuple[T, T] | None:
    return (first, second) if first is not None and second is not None else None


def _count_present(groups: Groups, valid: BoolArray) -> int:
    if valid.all():  # every group with an item is present
        return int(np.count_nonzero(groups.sizes))
    return int(np.count_nonzero(np.bincount(groups.codes[valid], minlength=groups.n_groups)))


def intercorrelation(
    human: npt.ArrayLike,
    *,
    level: Level,
    coefficient: Coefficient,
    docs: Groups | npt.ArrayLike | None = None,
    systems: Groups | npt.ArrayLike | None = None,
    policy: DegeneratePolicy = DegeneratePolicy.SKIP,
    options: Options = DEFAULT_OPTIONS,
    ranks: Sequence[DocRanks | None] | None = None,
    orders: Sequence[ColumnOrder | None] | None = None,
    codes: Sequence[DocCodes | None] | None = None,
) -> FloatArray:
    """Aspects × aspects correlation matrix of human judgments.

    ``human`` has one row per aspect, one column per output. Entry (i, j) is
    :func:`correlate` of aspect i with aspect j at ``level``; the matrix is symmetric
    (for a statistic that is not, Kendall-like or acc23 with ε > 0, entry (i, j) with
    i ≤ j takes aspect j as the human side).
    The diagonal is computed too: 1, or less under ``ZERO`` where constant documents
    count as 0, and NaN where an aspect has no usable group. ``ranks``: each aspect's
    ranks within ``docs`` where known, ``orders`` its sort order, ``codes`` its dense
    ranks within ``docs`` (see :func:`correlate`).
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
            pair = None if ranks is None else _both(ranks[i], ranks[j])
            sort = None if orders is None else _both(orders[i], orders[j])
            coded = None if codes is None else _both(codes[i], codes[j])
            result = correlate(
                scores[i],
                scores[j],
                level=level,
                coefficient=coefficient,
                docs=doc_groups,
                systems=sys_groups,
                policy=policy,
                options=options,
                ranks=pair,
                orders=sort,
                codes=coded,
            )
            matrix[i, j] = matrix[j, i] = result.value
    return matrix
