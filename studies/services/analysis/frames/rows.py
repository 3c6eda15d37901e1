"""The row path: a frame read straight from the database's rows.

This was the only path before snapshots (:mod:`studies.services.analysis.snapshot`), and
stays for two uses: the fallback when no snapshot can be had (snapshots turned off, a
data folder that cannot be written, data changing faster than a snapshot can be written,
a read inside a transaction that has not committed) and the baseline the benchmark
measures the columnar path against (``bench/scale.py``). Reads go through raw cursors:
model instances would cost seconds on millions of scores, but even so every row becomes
Python tuples and object arrays, about 3.8 KB per output at a million outputs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Q

from scoring.stats import Aggregate, aggregate_judgments
from studies.models import Dataset, Judgment, MetricScore, Output
from studies.services import annotators
from studies.services.analysis.frames.meta import aspect_infos, run_infos
from studies.services.analysis.frames.types import JudgmentFilter, ScoreFrame


def read_rows(queryset: Any) -> list[tuple[Any, ...]]:
    """The queryset's rows as tuples, through a raw cursor."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # an empty ``__in`` list (e.g. only_aspects=[]): no rows
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def frame_from_rows(
    dataset: Dataset,
    *,
    aggregate: Aggregate = Aggregate.MEAN,
    exclude_annotators: Collection[int] = (),
    judgment_weights: Mapping[tuple[int, int], float] | None = None,
    only_runs: Collection[int] | None = None,
    only_aspects: Collection[int] | None = None,
    judgments: JudgmentFilter | Q | None = None,
) -> ScoreFrame:
    """The frame of :func:`~studies.services.analysis.frames.load_frame`, read from the
    database's rows (the same arguments)."""
    outputs = read_rows(
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

    kept = JudgmentFilter.of(judgments)
    judged = Judgment.objects.filter(output__document__dataset=dataset)
    if only_aspects is not None:
        judged = judged.filter(aspect_id__in=list(only_aspects))
    if kept is not None:
        judged = judged.filter(kept.q)
    aspects = aspect_infos(judged.order_by().values_list("aspect_id", flat=True).distinct())
    human = np.full((output_ids.size, len(aspects)), np.nan, order="F")
    found = read_rows(
        judged.values_list(
            "output_id", "aspect_id", "annotator_id", "import_file", "value", "pk", "rater"
        )
    )
    if found:
        table = np.array(found, dtype=object)
        # by output, then id: the order means add up in, whatever order the database
        # returned (a snapshot stores them so)
        table = table[np.lexsort((table[:, 5].astype(np.int64), table[:, 0].astype(np.int64)))]
        who = np.array(
            [
                annotators.key(a, f, r)
                for a, f, r in zip(table[:, 2], table[:, 3], table[:, 6], strict=True)
            ],
            dtype=object,
        )
        excluded = {annotators.key(pk, "", "") for pk in exclude_annotators}
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
                who[mask],
                table[mask, 4].astype(np.float64),
                method=aggregate,
                exclude_annotators=excluded,
                outputs=output_ids,
                weights=None if weights is None else weights[mask],
            )
            human[:, column] = result.values

    runs = run_infos(dataset, only_runs)
    stored = MetricScore.objects.filter(run__dataset=dataset, value__isnull=False)
    if only_runs is not None:
        stored = stored.filter(run_id__in=list(only_runs))
    metrics = np.full((output_ids.size, len(runs)), np.nan, order="F")
    scores = read_rows(stored.values_list("run_id", "output_id", "value"))
    if scores:
        table = np.array(scores, dtype=np.float64)
        at = np.searchsorted(output_ids, table[:, 1].astype(np.int64))
        run_pks = np.array([run.pk for run in runs], dtype=np.int64)
        order = np.argsort(run_pks)
        columns = order[np.searchsorted(run_pks[order], table[:, 0].astype(np.int64))]
        metrics[at, columns] = table[:, 2]
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
