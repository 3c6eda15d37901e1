"""The columnar path: a frame read from the dataset's snapshot.

Only the files the frame asks for are opened (the aspects of ``only_aspects``, the
runs of ``only_runs``), and each aspect's judgments are aggregated and let go before
the next is read, so memory follows the cells asked for: the frame's own arrays (8
bytes a number) and one aspect's judgments at a time.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np

from scoring.stats import Aggregate, aggregate_judgments
from studies.models import Dataset, Judgment
from studies.services.analysis.frames.meta import aspect_infos, run_infos
from studies.services.analysis.frames.types import JudgmentFilter, ScoreFrame
from studies.services.analysis.snapshot import Judgments, Snapshot, release_memory


def frame_from_snapshot(
    snapshot: Snapshot,
    dataset: Dataset,
    *,
    aggregate: Aggregate = Aggregate.MEAN,
    exclude_annotators: Collection[int] = (),
    judgment_weights: Mapping[tuple[int, int], float] | None = None,
    only_runs: Collection[int] | None = None,
    only_aspects: Collection[int] | None = None,
    judgments: JudgmentFilter | None = None,
) -> ScoreFrame:
    """The frame of :func:`~studies.services.analysis.frames.load_frame`, read from
    ``snapshot`` (the same arguments)."""
    output_ids, doc_codes, system_codes = snapshot.outputs()
    wanted = snapshot.aspects
    if only_aspects is not None:
        keep = set(only_aspects)
        wanted = [pk for pk in wanted if pk in keep]
    matched = None  # the judgment ids a query keeps (one campaign's answers)
    if judgments is not None and judgments.import_file is None and wanted:
        ids = Judgment.objects.filter(output__document__dataset=dataset).filter(judgments.q)
        matched = np.unique(np.fromiter(ids.values_list("pk", flat=True), dtype=np.int64))
    columns: dict[int, np.ndarray] = {}
    for pk in wanted:
        found = snapshot.judgments(pk, ids=matched is not None)
        rows = _kept(found, judgments, matched)
        if rows is not None and not rows.any():
            continue  # no judgment of this aspect passes: no column (as the row path)
        columns[pk] = _aggregated(
            found, rows, pk, output_ids, aggregate, exclude_annotators, judgment_weights
        )
    aspects = aspect_infos(columns)
    human = np.full((output_ids.size, len(aspects)), np.nan, order="F")
    for j, aspect in enumerate(aspects):
        human[:, j] = columns.pop(aspect.pk)
    runs = run_infos(dataset, only_runs)
    metrics = np.full((output_ids.size, len(runs)), np.nan, order="F")
    for i, run in enumerate(runs):
        metrics[:, i] = snapshot.scores(run.pk, output_ids)
    release_memory()
    return ScoreFrame(
        output_ids=output_ids,
        doc_codes=doc_codes,
        system_codes=system_codes,
        doc_keys=snapshot.doc_keys(),
        system_names=snapshot.system_names(),
        aspects=aspects,
        human=human,
        runs=runs,
        metrics=metrics,
    )


def _kept(
    found: Judgments, judgments: JudgmentFilter | None, matched: np.ndarray | None
) -> np.ndarray | None:
    """The rows the filter keeps (None: all)."""
    if judgments is None:
        return None
    if judgments.import_file is not None:
        return found.from_file(judgments.import_file)
    assert matched is not None and found.judgment_id is not None
    return np.isin(found.judgment_id, matched)


def _aggregated(
    found: Judgments,
    rows: np.ndarray | None,
    aspect: int,
    output_ids: np.ndarray,
    aggregate: Aggregate,
    exclude_annotators: Collection[int],
    judgment_weights: Mapping[tuple[int, int], float] | None,
) -> np.ndarray:
    """One aspect's human column: the kept judgments aggregated per output."""
    annotator, value = found.annotator, found.value
    output = found.output_id
    if rows is not None:
        annotator, value, output = annotator[rows], value[rows], output[rows]
    weights = None
    if judgment_weights is not None:  # an account's weight on this aspect; files weigh 1
        weights = np.ones(value.size)
        accounts = annotator > 0
        who, at = np.unique(annotator[accounts], return_inverse=True)
        per = np.array([judgment_weights.get((int(a), aspect), 1.0) for a in who])
        weights[accounts] = per[at] if who.size else weights[accounts]
    return aggregate_judgments(
        output,
        annotator,
        value,
        method=aggregate,
        exclude_annotators=set(exclude_annotators),
        outputs=output_ids,
        weights=weights,
    ).values
