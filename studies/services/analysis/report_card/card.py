"""The judge report card of a dataset: one row per judge run × aspect, with everything
that says whether the judge can replace the annotators there, and links to the evidence.

A row holds the judge's correlation with the humans and its interval (the matrix's
statistic, at the card's confidence level; on the matrix's resamples, so at 95 % it is
the matrix cell's) beside the human ceiling; agreement on the annotators' ordinal scale
(quadratic-weighted κ, Gwet's AC1, Krippendorff's α, with intervals by document, the
judge's scores put on that scale as ``binning`` says); the alternative-annotator test;
the matrix's sentinel check; length bias (the diagnostics'); self-consistency (sampled
runs); a pairwise judge's position consistency and first-position preference
(:func:`studies.services.analysis.pairwise_judge.summary`); the change from its prompt variant (a run of the same judge with another
template or aspect definition version); requests, tokens, cost and wall time per 1,000
outputs; a verdict (:mod:`.verdict`).

Judges are the runs that are neither sentinels nor reference-based baselines (ROUGE,
BLEU, chrF, BERTScore: those join with ``all_runs``); a judge prompted for one aspect
(GPTScore, G-Eval) gets a row for that aspect only. Plain dicts, cached under a key
that includes the dataset's data version; computed by the light worker when not cheap.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from django.urls import reverse

from scoring.stats import Groups, Level, Options, Unit, bootstrap_ci, draw_resamples
from scoring.stats.consistency import correlation_change, rank_changes
from studies.models import Dataset, MetricRun
from studies.services.analysis.ceiling import judgment_table
from studies.services.analysis.dashboards import frame_for, matrix_for
from studies.services.analysis.diagnostics import length_bias, output_lengths
from studies.services.analysis.frames import AspectInfo, RunInfo
from studies.services.analysis.matrix import cell_statistic
from studies.services.analysis.report_card.evidence import (
    MIN_ANNOTATORS,
    agreement,
    alternative_annotator,
    annotator_matrix,
    consistency_of,
    cost_per_thousand,
    human_pairs_of,
    num,
    position_of,
    prompt_variant,
)
from studies.services.analysis.report_card.params import CardParams
from studies.services.analysis.report_card.verdict import verdict
from studies.services.runs.labels import with_traits
from studies.services.runs.registry import runner


def is_judge(run: RunInfo, all_runs: bool = False) -> bool:
    """A run that gets rows: not a sentinel, and (unless ``all_runs``) not one of the
    reference-based baselines (their runner's queue is ``quick`` or, for an encoder's,
    ``cpu``; imported runs count)."""
    if run.sentinel:
        return False
    found = runner(run.metric)
    baseline = found is not None and found.queue in ("cpu", "quick")
    return all_runs or run.kind == MetricRun.Kind.IMPORTED or not baseline


class _Context:
    """What every row of one card shares: the frame, the resamples, the matrix, the
    annotators' rows, length bias and the runs' rows."""

    def __init__(self, dataset: Dataset, params: CardParams) -> None:
        self.dataset, self.params = dataset, params
        self.mp = params.matrix_params
        self.frame = frame = frame_for(dataset, self.mp)
        self.docs = Groups.from_keys(frame.doc_codes)
        self.systems = Groups.from_keys(frame.system_codes)
        self.plan = self.doc_plan = None
        if frame.n_outputs:
            level = self.mp.level_enum
            unit = Unit.SYSTEMS if level is Level.SYSTEM else Unit(self.mp.unit)
            rng = np.random.default_rng(self.mp.seed)  # the matrix's draws
            self.plan = draw_resamples(
                rng, self.docs, self.systems, unit=unit, resamples=self.mp.resamples
            )
            self.doc_plan = self.plan
            if self.plan.doc_counts is None:
                self.doc_plan = draw_resamples(
                    np.random.default_rng(self.mp.seed), self.docs, resamples=self.mp.resamples
                )
        matrix = matrix_for(dataset, self.mp)
        self.ceiling = {c["aspect"]: c for c in matrix.get("ceiling") or []}
        self.cells = {
            (column["aspect"]["code"], cell["run"]): cell
            for column in matrix["columns"]
            for cell in column["cells"]
        }
        empty = not (frame.aspects and frame.n_outputs)
        self.table, self.names = (
            (np.zeros((0, 4)), []) if empty else judgment_table(dataset, frame, set())
        )
        self.length = length_bias(frame, output_lengths(dataset, frame), self.mp)
        self.rows = {
            r.pk: r for r in with_traits(MetricRun.objects.filter(dataset=dataset)).order_by("pk")
        }


def compute_card(
    dataset: Dataset, params: CardParams, report: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """The dataset's report card (see the module's docstring)."""
    refusal = params.problem
    if refusal is not None:
        raise ValueError(refusal.message)
    started = time.perf_counter()
    c = _Context(dataset, params)
    frame = c.frame
    chosen = [
        (j, a)
        for j, a in enumerate(frame.aspects)
        if not params.aspects or a.code in params.aspects
    ]
    judges = [(i, r) for i, r in enumerate(frame.runs) if is_judge(r, params.all_runs)]
    todo = [
        (j, aspect, i, run)
        for j, aspect in chosen
        for i, run in judges
        if not run.aspect or run.aspect == aspect.code
    ]
    rows, aspects = [], []
    for j, aspect in chosen:
        humans, names = annotator_matrix(c.table, c.names, frame, aspect)
        mine = [t for t in todo if t[0] == j]
        among = None  # the annotators' own agreement: computed with the aspect's first row
        for _, _, i, run in mine:
            rows.append(_row(c, j, aspect, i, run, humans, names, among))
            if not rows[-1]["agreement"]["problem"]:
                among = rows[-1]["agreement"]
            if report:
                report(len(rows), len(todo))
        aspects.append(_aspect_summary(c, aspect, humans, rows[-1] if mine else None))
    return {
        "params": {**params.__dict__, "aspects": list(params.aspects)},
        "query": params.query,
        "statistic": f"{c.mp.label}, {c.mp.level}-level",
        "coefficient_label": c.mp.label,
        "level": c.mp.level,
        "confidence": params.confidence,
        "epsilon": params.epsilon,
        "aspects": aspects,
        "rows": rows,
        "n_outputs": frame.n_outputs,
        "n_documents": len(frame.doc_keys),
        "n_systems": len(frame.system_names),
        "links": {
            "matrix": reverse("studies:correlations", args=[dataset.pk]) + "?" + c.mp.query,
            "diagnostics": reverse("studies:dataset-diagnostics", args=[dataset.pk])
            + "?"
            + c.mp.query,
        },
        "seconds": round(time.perf_counter() - started, 3),
    }


def _aspect_summary(
    c: _Context, aspect: AspectInfo, humans: np.ndarray, row: dict[str, Any] | None
) -> dict[str, Any]:
    ceiling = c.ceiling.get(aspect.code) or {}
    per_item = np.isfinite(humans).sum(axis=0) if humans.size else np.zeros(0)
    return {
        "pk": aspect.pk,
        "code": aspect.code,
        "name": aspect.name,
        "ceiling": ceiling.get("value"),
        "ceiling_reason": ceiling.get("reason"),
        "n_annotators": int(humans.shape[0]),
        "n_items_with_three": int(np.count_nonzero(per_item >= MIN_ANNOTATORS)),
        "agreement": None if row is None else row["agreement"],
    }


def _row(
    c: _Context,
    j: int,
    aspect: AspectInfo,
    i: int,
    info: RunInfo,
    humans: np.ndarray,
    names: list[str],
    among: dict[str, Any] | None,
) -> dict[str, Any]:
    frame, params, mp = c.frame, c.params, c.mp
    metric, human = frame.metrics[:, i], frame.human[:, j]
    result = cell_statistic(metric, human, aspect, mp, c.docs, c.systems)
    low = high = None
    if c.plan is not None and np.isfinite(result.value):
        ci = bootstrap_ci(
            c.plan,
            metric,
            human,
            level=mp.level_enum,
            coefficient=mp.coefficient_enum,
            average=mp.average_enum,
            options=result.options,
            alpha=1.0 - params.confidence,
            estimate=result,
        )
        low, high = num(ci.low), num(ci.high)
    ceiling = c.ceiling.get(aspect.code) or {}
    agreed, compared = agreement(
        metric, humans, c.docs, aspect, c.doc_plan, params.confidence, among
    )
    cell = c.cells.get((aspect.code, info.pk)) or {}
    run = c.rows[info.pk]
    length = next(r for r in c.length["runs"] if r["run"]["pk"] == info.pk)
    row: dict[str, Any] = {
        "run": {
            "pk": info.pk,
            "label": info.label,
            "metric": info.metric,
            "kind": info.kind,
            "model": info.model,
            "partial_run": info.partial_run,
        },
        "aspect": {"pk": aspect.pk, "code": aspect.code, "name": aspect.name},
        "correlation": {
            "value": num(result.value),
            "low": low,
            "high": high,
            "n_outputs": result.n_outputs,
            "ceiling": ceiling.get("value"),
            "ceiling_reason": ceiling.get("reason"),
        },
        "agreement": agreed,
        "alt_test": alternative_annotator(
            compared, humans, names, frame.output_ids, params.epsilon
        ),
        "sentinel": {
            "fails": cell.get("fails_sentinel"),
            "pending": cell.get("sentinels_pending") or [],
        },
        "length": {
            "judge": length["length"],
            "humans": c.length["aspects"][j]["length"],
            **{k: length["cells"][j][k] for k in ("raw", "partial", "change")},
            "coefficient": c.length["coefficient_label"],
        },
        "self_consistency": consistency_of(run),
        "position": position_of(run, mp.seed, params.confidence),
        "human_pairs": human_pairs_of(run, mp.seed, params.confidence),
        "prompt": _prompt_change(c, run, i, j, result.options),
        "cost": cost_per_thousand(run),
        "links": _links(c, info, aspect),
    }
    row["verdict"] = verdict(row, c.mp.label)
    return row


def _prompt_change(
    c: _Context, run: MetricRun, i: int, j: int, options: Options
) -> dict[str, Any] | None:
    """The change from the run's prompt variant, when it has one in the frame."""
    found = prompt_variant(run, list(c.rows.values()))
    if found is None or c.plan is None:
        return None
    other, difference = found
    frame, mp = c.frame, c.mp
    k = frame.run_index(other.pk)
    change = correlation_change(
        c.plan,
        frame.metrics[:, i],
        frame.metrics[:, k],
        frame.human[:, j],
        level=mp.level_enum,
        coefficient=mp.coefficient_enum,
        average=mp.average_enum,
        options=options,
        confidence=c.params.confidence,
    )
    flips = rank_changes(frame.metrics[:, i], frame.metrics[:, k], c.systems)
    return {
        **difference,
        "against": {"pk": other.pk, "label": frame.runs[k].label},
        "value": num(change.value_a),
        "against_value": num(change.value_b),
        "delta": num(change.delta),
        "low": num(change.low),
        "high": num(change.high),
        "p_value": num(change.p_value),
        "n_outputs": change.n_outputs,
        "rank_changes": [
            {"system": frame.system_names[f.system], "rank": f.rank_a, "against_rank": f.rank_b}
            for f in flips
        ],
    }


def _links(c: _Context, run: RunInfo, aspect: AspectInfo) -> dict[str, str | None]:
    pk, query = c.dataset.pk, c.mp.query
    return {
        "cell": reverse("studies:correlations-cell", args=[pk, run.pk, aspect.pk]) + "?" + query,
        "diagnostics": reverse("studies:dataset-diagnostics", args=[pk])
        + f"?run={run.pk}&aspect={aspect.pk}&{query}",
        "run": reverse("studies:run-detail", args=[run.pk])
        if run.kind == MetricRun.Kind.COMPUTED
        else None,
    }
