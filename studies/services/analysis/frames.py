"""Load a dataset's scores into aligned numpy arrays for the statistics engine.

One row per output (sorted by id); human judgments aggregated per output and aspect;
one column per metric run. Reads go through raw cursors: a large dataset holds millions
of scores and model instances would cost seconds.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Q

from scoring.metrics.sentinels import is_sentinel
from scoring.stats import Aggregate, aggregate_judgments
from studies.models import Aspect, Dataset, Judgment, MetricRun, MetricScore, Output
from studies.services.runs.labels import distinct_labels, with_traits


@dataclass(frozen=True)
class RunInfo:
    """What a matrix row says about its run."""

    pk: int
    label: str
    metric: str
    kind: str
    status: str
    model: str
    setting: str
    dimension: str
    aspect: str  # the aspect a GPTScore run was prompted for ("" for imported metrics)
    trained_on: int = 0  # a learned metric: documents of its training and validation splits
    trained_metric: int = 0  # a learned metric: the trained metric's id
    sentinel: bool = False  # length, random or source-free GPTScore: never ranked or best
    done: int = 0
    total: int = 0
    # a computed run that has not scored every output (running, cancelled, failed):
    # labelled so wherever it appears
    partial_run: bool = False

    @classmethod
    def of(cls, run: MetricRun) -> RunInfo:
        config = run.config or {}
        return cls(
            pk=run.pk,
            label=run.label,
            metric=run.metric,
            kind=run.kind,
            status=run.status,
            model=str(config.get("model_label") or config.get("model") or ""),
            setting=str(config.get("setting") or ""),
            dimension=str(config.get("dimension") or ""),
            aspect=str(config.get("aspect") or ""),
            trained_on=sum(len(v) for v in (config.get("trained_on") or {}).values()),
            trained_metric=int(config.get("trained_metric") or 0),
            sentinel=run.kind == MetricRun.Kind.COMPUTED and is_sentinel(run.metric, config),
            done=run.done,
            total=run.total,
            partial_run=run.kind == MetricRun.Kind.COMPUTED
            and (run.status != MetricRun.Status.SUCCEEDED or run.done < run.total),
        )


@dataclass(frozen=True)
class AspectInfo:
    pk: int
    code: str
    name: str
    scale_min: float = 1.0
    scale_max: float = 5.0


@dataclass(frozen=True, eq=False)
class ScoreFrame:
    """Scores of one dataset, aligned by output (row k is ``output_ids[k]``)."""

    output_ids: np.ndarray
    doc_codes: np.ndarray
    system_codes: np.ndarray
    doc_keys: list[str]
    system_names: list[str]
    aspects: list[AspectInfo]
    human: np.ndarray  # outputs × aspects, NaN where nobody judged
    runs: list[RunInfo]
    metrics: np.ndarray  # outputs × runs, NaN where unscored

    @property
    def n_outputs(self) -> int:
        return int(self.output_ids.size)

    def aspect_index(self, pk: int) -> int:
        return next(i for i, a in enumerate(self.aspects) if a.pk == pk)

    def run_index(self, pk: int) -> int:
        return next(i for i, r in enumerate(self.runs) if r.pk == pk)


def _rows(queryset: Any) -> list[tuple[Any, ...]]:
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # an empty ``__in`` list (e.g. only_aspects=[]): no rows
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def load_frame(
    dataset: Dataset,
    *,
    aggregate: Aggregate = Aggregate.MEAN,
    exclude_annotators: Collection[int] = (),
    judgment_weights: Mapping[tuple[int, int], float] | None = None,
    only_runs: Collection[int] | None = None,
    only_aspects: Collection[int] | None = None,
    judgments: Q | None = None,
) -> ScoreFrame:
    """Read the dataset's outputs, judgments and metric scores into a :class:`ScoreFrame`.

    ``judgment_weights`` maps (annotator id, aspect id) to the weight of that annotator's
    judgments in the mean; judgments not listed (imported ones among them) weigh 1.
    ``only_runs`` and ``only_aspects`` (ids) keep those runs and aspects (reading less);
    ``judgments`` keeps only the judgments it matches (one source's)."""
    outputs = _rows(
        Output.objects.filter(document__dataset=dataset)
        .order_by("pk")
        .values_list("pk", "document__doc_key", "system_id")
    )
    output_ids = np.fromiter((o[0] for o in outputs), dtype=np.int64, count=len(outputs))
    doc_keys, doc_codes = np.unique(
        np.array([o[1] for o in outputs], dtype=object), return_inverse=True
    )
    systems, system_codes = np.unique(
        np.array([o[2] for o in outputs], dtype=object), return_inverse=True
    )

    judged = Judgment.objects.filter(output__document__dataset=dataset)
    if only_aspects is not None:
        judged = judged.filter(aspect_id__in=list(only_aspects))
    if judgments is not None:
        judged = judged.filter(judgments)
    aspect_ids = judged.order_by().values_list("aspect_id", flat=True).distinct()
    aspects = [
        AspectInfo(a.pk, a.code, a.name, a.scale_min, a.scale_max)
        for a in Aspect.objects.filter(pk__in=aspect_ids).order_by("code")
    ]
    human = np.full((output_ids.size, len(aspects)), np.nan)
    judgments = _rows(
        judged.values_list("output_id", "aspect_id", "annotator_id", "import_file", "value")
    )
    if judgments:
        table = np.array(judgments, dtype=object)
        annotators = np.array(
            [
                f"u{a}" if a is not None else f"f:{f}"
                for a, f in zip(table[:, 2], table[:, 3], strict=True)
            ],
            dtype=object,
        )
        excluded = {f"u{pk}" for pk in exclude_annotators}
        weights = None
        if judgment_weights is not None:
            weights = np.array(
                [
                    judgment_weights.get((a, s), 1.0) if a is not None else 1.0
                    for a, s in zip(table[:, 2], table[:, 1], strict=True)
                ]
            )
        for column, aspect in enumerate(aspects):
            mask = table[:, 1] == aspect.pk
            result = aggregate_judgments(
                table[mask, 0].astype(np.int64),
                annotators[mask],
                table[mask, 4].astype(np.float64),
                method=aggregate,
                exclude_annotators=excluded,
                outputs=output_ids,
                weights=None if weights is None else weights[mask],
            )
            human[:, column] = result.values

    run_rows = MetricRun.objects.filter(dataset=dataset)
    stored = MetricScore.objects.filter(run__dataset=dataset, value__isnull=False)
    if only_runs is not None:
        run_rows = run_rows.filter(pk__in=list(only_runs))
        stored = stored.filter(run_id__in=list(only_runs))
    rows = list(with_traits(run_rows).order_by("label", "pk"))
    names = distinct_labels(rows)  # runs sharing a label show what differs
    runs = [replace(RunInfo.of(r), label=names[r.pk]) for r in rows]
    metrics = np.full((output_ids.size, len(runs)), np.nan)
    scores = _rows(stored.values_list("run_id", "output_id", "value"))
    if scores:
        table = np.array(scores, dtype=np.float64)
        rows = np.searchsorted(output_ids, table[:, 1].astype(np.int64))
        run_pks = np.array([run.pk for run in runs], dtype=np.int64)
        order = np.argsort(run_pks)
        columns = order[np.searchsorted(run_pks[order], table[:, 0].astype(np.int64))]
        metrics[rows, columns] = table[:, 2]
    return ScoreFrame(
        output_ids=output_ids,
        doc_codes=doc_codes.astype(np.int64),
        system_codes=system_codes.astype(np.int64),
        doc_keys=[str(k) for k in doc_keys],
        system_names=[str(s) for s in systems],
        aspects=aspects,
        human=human,
        runs=runs,
        metrics=metrics,
    )


def restrict_to_documents(frame: ScoreFrame, doc_keys: Collection[str]) -> ScoreFrame:
    """The same frame with only the outputs of ``doc_keys`` (codes renumbered)."""
    wanted = set(doc_keys)
    keep = np.array([frame.doc_keys[c] in wanted for c in frame.doc_codes], dtype=bool)
    docs, doc_codes = np.unique(frame.doc_codes[keep], return_inverse=True)
    systems, system_codes = np.unique(frame.system_codes[keep], return_inverse=True)
    return replace(
        frame,
        output_ids=frame.output_ids[keep],
        doc_codes=doc_codes.astype(np.int64),
        system_codes=system_codes.astype(np.int64),
        doc_keys=[frame.doc_keys[c] for c in docs],
        system_names=[frame.system_names[c] for c in systems],
        human=frame.human[keep],
        metrics=frame.metrics[keep],
    )
