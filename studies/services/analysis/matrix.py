"""The correlation matrix: every run against every aspect, with bootstrap intervals, each
aspect's runs ranked into significance clusters (as WMT ranks metrics)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

import numpy as np

from scoring.stats import (
    Alternative,
    Coefficient,
    ColumnOrder,
    CorrelationResult,
    DegeneratePolicy,
    DocCodes,
    DocRanks,
    Groups,
    Level,
    Options,
    Resamples,
    Unit,
    average_ranks,
    bootstrap_distribution,
    calibrate_ties,
    cluster,
    column_order,
    correlate,
    coverage,
    doc_codes,
    doc_ranks,
    draw_resamples,
    intercorrelation,
    paired_bootstrap_p,
    paired_bootstrap_test,
    scored,
    system_totals,
)
from studies.services.analysis.frames import AspectInfo, ScoreFrame
from studies.services.analysis.params import COEFFICIENT_LABELS, MatrixParams
from studies.services.analysis.sentinels import mark_sentinels

ALPHA = 0.05
# Kendall-like counts the pairs whose human scores differ by at least this share of the
# aspect's scale: WMT20's 25 points on DA's 0-100.
KENDALL_LIKE_SHARE = 0.25


def statistic_options(aspect: AspectInfo) -> Options:
    """The pairwise statistics' settings for an aspect: Kendall-like counts pairs whose
    human scores differ by a quarter of the aspect's scale."""
    return Options(threshold=KENDALL_LIKE_SHARE * max(aspect.scale_max - aspect.scale_min, 1e-12))


def cell_statistic(
    metric: np.ndarray,
    human: np.ndarray,
    aspect: AspectInfo,
    params: MatrixParams,
    docs: Groups,
    systems: Groups,
    prepared: tuple[Prepared, Prepared] | None = None,
) -> CorrelationResult:
    """One matrix cell's statistic (the page, the drill-down and the command share it);
    with tie calibration, ``result.options.epsilon`` is the calibrated ε. ``prepared``:
    both sides' ranks within the documents or sort orders, when the matrix has them
    (:func:`prepare_columns`); the value is the same without them."""
    level, coefficient, average = params.level_enum, params.coefficient_enum, params.average_enum
    options = statistic_options(aspect)
    calibration = None
    if params.tie_calibration:
        calibration = calibrate_ties(
            metric,
            human,
            level=level,
            coefficient=coefficient,
            docs=docs,
            average=average,
            rng=np.random.default_rng(params.seed),
        )
        options = replace(options, epsilon=calibration.epsilon)
    return correlate(
        metric,
        human,
        level=level,
        coefficient=coefficient,
        docs=docs,
        systems=systems,
        policy=DegeneratePolicy(params.policy),
        average=average,
        options=options,
        calibration=calibration,
        ranks=_given(prepared, DocRanks),
        orders=_given(prepared, ColumnOrder),
        totals=_totals(prepared),
        codes=_given(prepared, DocCodes),
    )


@dataclass(frozen=True, eq=False)
class SystemTotals:
    """A column's sum per system over every output (:func:`system_totals`)."""

    sums: np.ndarray


# What a matrix computes once per column for the cells that share it.
Prepared = DocRanks | DocCodes | ColumnOrder | SystemTotals | None
T = TypeVar("T")


def prepare_columns(
    columns: np.ndarray, docs: Groups, systems: Groups, params: MatrixParams
) -> list[Prepared]:
    """What each column's cells share, computed once per column, not once per cell (a
    run's column meets every aspect, an aspect's every run): for a sample-level
    Spearman, its ranks within the documents; for a sample-level τ-b or τ-c, its dense
    ranks within the documents; for a dataset-level τ-b or τ-c, its sort order; at
    system level, its sum per system. A column with a missing value gets None (its cells
    work on the outputs both sides have, as they always did), as does every column of
    another statistic."""
    level, coefficient = params.level_enum, params.coefficient_enum
    sample_ranks = level is Level.SAMPLE and coefficient is Coefficient.SPEARMAN
    sample_codes = level is Level.SAMPLE and coefficient in KENDALL_ORDERED
    dataset_order = level is Level.DATASET and coefficient in KENDALL_ORDERED
    system_sums = level is Level.SYSTEM and coefficient is not Coefficient.SPA
    found: list[Prepared] = []
    for column in columns.T:
        complete = bool(np.isfinite(column).all())
        if complete and sample_ranks:
            found.append(doc_ranks(column, docs))
        elif complete and sample_codes:
            found.append(doc_codes(column, docs))
        elif complete and dataset_order:
            found.append(column_order(column))
        elif complete and system_sums:
            found.append(SystemTotals(system_totals(column, systems.codes, systems.n_groups)))
        else:
            found.append(None)
    return found


KENDALL_ORDERED = (Coefficient.KENDALL_B, Coefficient.KENDALL_C)


def _totals(prepared: tuple[Prepared, Prepared] | None) -> tuple[np.ndarray, np.ndarray] | None:
    given = _given(prepared, SystemTotals)
    return None if given is None else (given[0].sums, given[1].sums)


def _given(prepared: tuple[Prepared, Prepared] | None, kind: type[T]) -> tuple[T, T] | None:
    if prepared is None:
        return None
    first, second = prepared
    return (first, second) if isinstance(first, kind) and isinstance(second, kind) else None


def compute_matrix(
    frame: ScoreFrame,
    params: MatrixParams,
    report: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Correlate every run with every aspect, with bootstrap CIs, and rank the runs of
    each aspect into significance clusters (one-sided paired bootstrap on the shared
    resamples, as WMT ranks metrics; the best run and those below it follow)."""
    refusal = params.problem
    if refusal is not None:
        raise ValueError(refusal.message)
    started = time.perf_counter()
    level, coefficient = params.level_enum, params.coefficient_enum
    policy = DegeneratePolicy(params.policy)
    docs = Groups.from_keys(frame.doc_codes)
    systems = Groups.from_keys(frame.system_codes)
    plan = None
    if params.ci and frame.n_outputs:
        unit = Unit.SYSTEMS if level is Level.SYSTEM else Unit(params.unit)
        rng = np.random.default_rng(params.seed)
        plan = draw_resamples(rng, docs, systems, unit=unit, resamples=params.resamples)
    columns = []
    total = len(frame.aspects) * len(frame.runs)
    run_prepared = prepare_columns(frame.metrics, docs, systems, params)
    aspect_prepared = prepare_columns(frame.human, docs, systems, params)
    for j, aspect in enumerate(frame.aspects):
        human = frame.human[:, j]
        cells, draws, options = [], [], []
        for i, run in enumerate(frame.runs):
            metric = frame.metrics[:, i]
            prepared = (run_prepared[i], aspect_prepared[j])
            result = cell_statistic(metric, human, aspect, params, docs, systems, prepared)
            options.append(result.options)
            covered = coverage(metric, human, docs)
            cell: dict[str, Any] = {
                "run": run.pk,
                "value": _num(result.value),
                "n_outputs": result.n_outputs,
                "n_documents": result.n_documents,
                "n_systems": result.n_systems,
                "n_skipped": result.n_skipped,
                "low": None,
                "high": None,
                "epsilon": result.options.epsilon if params.tie_calibration else None,
                "coverage_outputs": covered.n_outputs,
                "coverage_documents": covered.n_documents,
                "judged_outputs": covered.of_outputs,
                "judged_documents": covered.of_documents,
                "coverage": covered.share,
                "partial": covered.share < params.min_coverage,
            }
            dist = None
            if plan is not None and np.isfinite(result.value):
                dist = bootstrap_distribution(
                    plan,
                    metric,
                    human,
                    level=level,
                    coefficient=coefficient,
                    policy=policy,
                    average=params.average_enum,
                    options=result.options,
                    estimate=result,
                    totals=_totals(prepared),
                )
                finite = dist[np.isfinite(dist)]
                if finite.size:
                    low, high = np.quantile(finite, [ALPHA / 2, 1 - ALPHA / 2])
                    cell["low"], cell["high"] = float(low), float(high)
            cells.append(cell)
            draws.append(dist)
            if report:
                report(j * len(frame.runs) + i + 1, total)
        used = [scored(frame.metrics[:, i], human) for i in range(len(frame.runs))]
        compare = comparer(plan, frame.metrics, human, options, params)
        for cell, run in zip(cells, frame.runs, strict=True):
            cell["sentinel"] = run.sentinel  # never ranked or best
            # a learned metric on documents it was trained on (unless the matrix keeps to
            # its test documents): shown, marked, never ranked or best
            cell["in_sample"] = bool(run.trained_on) and params.test_of != run.trained_metric
        rank_column(cells, draws if plan is not None else None, used, compare)
        mark_sentinels(cells, frame.runs, draws if plan is not None else None, used, compare)
        columns.append({"aspect": asdict(aspect), "cells": cells})
    ranked = average_ranks([{str(c["run"]): c["rank"] for c in col["cells"]} for col in columns])
    inter_coefficient = (
        Coefficient.KENDALL_B if coefficient is Coefficient.KENDALL_LIKE else coefficient
    )  # Kendall-like is not symmetric in its two sides
    inter = (
        intercorrelation(
            frame.human.T,
            level=level,
            coefficient=inter_coefficient,
            docs=docs,
            systems=systems,
            policy=policy,
            ranks=_only(aspect_prepared, DocRanks, inter_coefficient is coefficient),
            orders=_only(aspect_prepared, ColumnOrder, inter_coefficient is coefficient),
            codes=_only(aspect_prepared, DocCodes, inter_coefficient is coefficient),
        )
        if frame.aspects
        else np.zeros((0, 0))
    )
    return {
        "params": asdict(params),
        "intercorrelation": [[_num(v) for v in row] for row in inter],
        "intercorrelation_label": COEFFICIENT_LABELS[inter_coefficient],
        "coefficient_label": params.label,
        "runs": [asdict(r) for r in frame.runs],
        "average_rank": [ranked.get(str(r.pk)) if columns else None for r in frame.runs],
        "columns": columns,
        # sentinels that mark nothing yet (not finished, or below the coverage threshold)
        "sentinels_pending": sorted(
            {label for col in columns for c in col["cells"] for label in c["sentinels_pending"]}
        ),
        "n_outputs": frame.n_outputs,
        "n_documents": len(frame.doc_keys),
        "n_systems": len(frame.system_names),
        "seconds": round(time.perf_counter() - started, 3),
    }


def _only(prepared: list[Prepared], kind: type[T], same: bool) -> list[T | None] | None:
    """The prepared columns of one kind (None for the others), if the statistic is the same."""
    return [p if isinstance(p, kind) else None for p in prepared] if same else None


def comparer(
    plan: Resamples | None,
    metrics: np.ndarray,
    human: np.ndarray,
    options: list[Options],
    params: MatrixParams,
) -> Callable[[int, int], float]:
    """``p(a, b)``: the one-sided paired bootstrap p that run a beats run b on the
    outputs both scored (both recomputed there on ``plan``'s resamples)."""

    def p_on_shared(a: int, b: int) -> float:
        if plan is None:
            return float("nan")
        return paired_bootstrap_test(
            plan,
            metrics[:, a],
            metrics[:, b],
            human,
            level=params.level_enum,
            coefficient=params.coefficient_enum,
            policy=DegeneratePolicy(params.policy),
            alternative=Alternative.GREATER,
            average=params.average_enum,
            options=options[a],
            options_b=options[b],
        ).p_value

    return p_on_shared


def rank_column(
    cells: list[dict[str, Any]],
    draws: list[np.ndarray | None] | None,
    used: list[np.ndarray],
    p_on_shared: Callable[[int, int], float],
) -> None:
    """Rank one aspect's cells into significance clusters (WMT's AssignRanks on
    one-sided paired bootstrap p-values over the shared resamples) and flag the best
    cell and those significantly below it (p ≤ ALPHA against the best). Without
    ``draws`` (no intervals asked) there is no test: no ranks, no marks but the best.

    Only runs that are not ``partial`` (below the coverage threshold), ``sentinel`` nor
    ``in_sample`` (a learned metric read on its own training documents) are ranked and
    may be best; a partial run is only tested against the best. Two runs are compared
    on the outputs both scored (``used``): with the same outputs, on their draws; else
    ``p_on_shared`` recomputes both on the shared outputs. Each cell records how many
    outputs it shares with the best (``n_shared_with_best``)."""
    values = [np.nan if c["value"] is None else float(c["value"]) for c in cells]

    def p_better(a: int, b: int) -> float:
        assert draws is not None
        draw_a, draw_b = draws[a], draws[b]
        if draw_a is None or draw_b is None:
            return float("nan")
        if not np.array_equal(used[a], used[b]):
            return p_on_shared(a, b)
        return paired_bootstrap_p(draw_a, draw_b, values[a], values[b], Alternative.GREATER)

    ranked = [
        np.nan if c["partial"] or c.get("sentinel") or c.get("in_sample") else v
        for c, v in zip(cells, values, strict=True)
    ]
    clusters = cluster(ranked, p_better if draws is not None else None, ALPHA)
    position = {int(k): n for n, k in enumerate(clusters.order)}
    best = int(clusters.order[0]) if clusters.order.size else -1
    for k, cell in enumerate(cells):
        p = None
        if draws is not None and k != best and best >= 0:
            if k in position:
                p = _num(float(clusters.sig[0, position[k]]))
            elif np.isfinite(values[k]):
                p = _num(p_better(best, k))
        shared = int((used[k] & used[best]).sum()) if best >= 0 else None
        cell.update(
            best=k == best,
            rank=clusters.ranks[k],
            p_vs_best=p,
            below_best=p is not None and p <= ALPHA,
            n_shared_with_best=shared,
        )


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
