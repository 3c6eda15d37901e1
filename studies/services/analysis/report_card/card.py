"""The judge report card of a dataset: one row per judge run × aspect (scale, binary or
categorical aspects alike), with everything that says whether the judge can replace the
annotators there, and links to the evidence.

A row holds the run and the aspect, then one entry per piece of evidence registered in
:mod:`.pieces.registry`, in its order: the correlation with the humans beside the human
ceiling; a label aspect's statistics (MCC, κ, F1, TPR/TNR, prevalence, calibration); agreement on
the annotators' ordinal scale; the alternative-annotator test; the sentinel check;
length bias; self-consistency; a pairwise judge's position bias and agreement with
imported human pairs; the change from its prompt variant; cost and time per 1,000
outputs; scores read from a served endpoint's top-k alone, and whether they could change
the verdict (:mod:`.bounds`) (each module says what it holds). Then a verdict (:mod:`.verdict`, which reads
the primary statistic of the aspect's kind and the caveats through the registry).

The human reference is the annotators', or the adjudicated values where there are some
(:mod:`.reference`); ``reference`` says which, and how many outputs were adjudicated.

A tuned run (one whose configuration names a study split: tuned there, or a jury weighed
on it) gets its rows computed on the split's test documents only (:mod:`.held_out`):
``run.tuned`` says on how many documents it was tuned and evaluated, the page shows it
as a badge.

Judges are the runs that are neither sentinels nor reference-based baselines (ROUGE,
BLEU, chrF, BERTScore: those join with ``all_runs``); a judge prompted for one aspect
(GPTScore, G-Eval) gets a row for that aspect only. Plain dicts, cached under a key
that includes the dataset's data version; computed by the light worker when not cheap.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from django.urls import reverse

from studies.models import Dataset, MetricRun
from studies.services.analysis.frames import AspectInfo, RunInfo
from studies.services.analysis.report_card.bounds import check_bounds
from studies.services.analysis.report_card.context import Context, RowInput
from studies.services.analysis.report_card.evidence import MIN_ANNOTATORS, annotator_matrix
from studies.services.analysis.report_card.held_out import HeldOut, held_out_of
from studies.services.analysis.report_card.params import CardParams
from studies.services.analysis.report_card.pieces.registry import PIECES
from studies.services.analysis.report_card.reference import summary as reference_summary
from studies.services.analysis.report_card.verdict import verdict
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


def compute_card(
    dataset: Dataset, params: CardParams, report: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """The dataset's report card (see the module's docstring)."""
    refusal = params.problem
    if refusal is not None:
        raise ValueError(refusal.message)
    started = time.perf_counter()
    c = Context(dataset, params)
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
    tuned = held_out_of([c.rows[run.pk] for _, run in judges])
    held = _HeldOutContexts(dataset, params, tuned)
    rows, aspects = [], []
    for j, aspect in chosen:
        humans, names = annotator_matrix(c.table, c.names, frame, aspect)
        mine = [t for t in todo if t[0] == j]
        shared: dict[str, Any] = {}  # the annotators' own statistics, computed once per aspect
        for _, _, i, run in mine:
            found = tuned.get(run.pk)
            if found is None or found.replaced:
                row = _row(RowInput(c, j, aspect, i, run, humans, names, shared))
            else:
                row = _row(held.input(found, j, aspect, i, run))
            row["run"]["tuned"] = None if found is None else found.as_dict()
            rows.append(row)
            if report:
                report(len(rows), len(todo))
        plain = [r for r in rows if r["aspect"]["pk"] == aspect.pk and not r["run"]["tuned"]]
        aspects.append(_aspect_summary(c, aspect, humans, plain[-1] if plain else None))
    return {
        "params": {**params.__dict__, "aspects": list(params.aspects)},
        "query": params.query,
        "statistic": f"{c.mp.label}, {c.mp.level}-level",
        "coefficient_label": c.mp.label,
        "level": c.mp.level,
        "confidence": params.confidence,
        "epsilon": params.epsilon,
        "reference": reference_summary(params.reference, params.reference_study, c.counts),
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


def rows_on_documents(
    dataset: Dataset,
    params: CardParams,
    documents: frozenset[str],
    aspect_code: str,
    run_pks: Iterable[int],
) -> dict[int, dict[str, Any]]:
    """The card's rows of the runs ``run_pks`` on the aspect ``aspect_code``, every one
    computed on ``documents`` only, tuned or not: a before/after comparison on the same
    held-out documents (a run with no score there gets no row)."""
    c = Context(dataset, params, documents=documents)
    frame = c.frame
    found = [(j, a) for j, a in enumerate(frame.aspects) if a.code == aspect_code]
    if not found:
        return {}
    j, aspect = found[0]
    humans, names = annotator_matrix(c.table, c.names, frame, aspect)
    wanted, shared = set(run_pks), {}  # type: ignore[var-annotated]
    return {
        run.pk: _row(RowInput(c, j, aspect, i, run, humans, names, shared))
        for i, run in enumerate(frame.runs)
        if run.pk in wanted
    }


class _HeldOutContexts:
    """The card's contexts on each split's test documents, made when first needed, with
    their annotators' matrices and shared statistics per aspect."""

    def __init__(self, dataset: Dataset, params: CardParams, tuned: dict[int, HeldOut]) -> None:
        self.dataset, self.params, self.tuned = dataset, params, tuned
        self.contexts: dict[frozenset[str], Context] = {}
        self.humans: dict[tuple[frozenset[str], int], tuple[np.ndarray, list[str]]] = {}
        self.shared: dict[tuple[frozenset[str], int], dict[str, Any]] = {}

    def input(self, found: HeldOut, j: int, aspect: AspectInfo, i: int, run: RunInfo) -> RowInput:
        keys = found.test_keys
        c = self.contexts.get(keys)
        if c is None:
            c = self.contexts[keys] = Context(self.dataset, self.params, documents=keys)
        at = (keys, j)
        if at not in self.humans:
            self.humans[at] = annotator_matrix(c.table, c.names, c.frame, aspect)
        humans, names = self.humans[at]
        return RowInput(c, j, aspect, i, run, humans, names, self.shared.setdefault(at, {}))


def _aspect_summary(
    c: Context, aspect: AspectInfo, humans: np.ndarray, row: dict[str, Any] | None
) -> dict[str, Any]:
    ceiling = c.ceiling.get(aspect.code) or {}
    per_item = np.isfinite(humans).sum(axis=0) if humans.size else np.zeros(0)
    labels = (row or {}).get("labels") or {}
    return {
        "pk": aspect.pk,
        "code": aspect.code,
        "name": aspect.name,
        "kind": aspect.kind,
        "labels": list(aspect.labels),
        "ceiling": ceiling.get("value"),
        "ceiling_reason": ceiling.get("reason"),
        "n_annotators": int(humans.shape[0]),
        "n_items_with_three": int(np.count_nonzero(per_item >= MIN_ANNOTATORS)),
        "agreement": None if row is None else row["agreement"],
        "label_ceiling": labels.get("human"),
    }


def _row(inp: RowInput) -> dict[str, Any]:
    """One judge × aspect row: every registered piece's evidence, then the verdict."""
    info, aspect, c = inp.info, inp.aspect, inp.context
    inp.row = row = {
        "run": {
            "pk": info.pk,
            "label": info.label,
            "metric": info.metric,
            "kind": info.kind,
            "model": info.model,
            "partial_run": info.partial_run,
        },
        "aspect": {"pk": aspect.pk, "code": aspect.code, "name": aspect.name, "kind": aspect.kind},
    }
    for piece in PIECES:
        row[piece.key] = piece.compute(inp)
    check_bounds(inp, row, c.mp.label)  # flagged top-k scores: could they change the verdict?
    row["links"] = _links(c, info, aspect)
    row["verdict"] = verdict(row, c.mp.label)
    return row


def _links(c: Context, run: RunInfo, aspect: AspectInfo) -> dict[str, str | None]:
    pk, query = c.dataset.pk, c.mp.query
    return {
        "cell": reverse("studies:correlations-cell", args=[pk, run.pk, aspect.pk]) + "?" + query,
        "diagnostics": reverse("studies:dataset-diagnostics", args=[pk])
        + f"?run={run.pk}&aspect={aspect.pk}&{query}",
        "run": reverse("studies:run-detail", args=[run.pk])
        if run.kind == MetricRun.Kind.COMPUTED
        else None,
    }
