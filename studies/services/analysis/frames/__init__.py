"""A dataset's scores as aligned numpy arrays for the statistics engine: one row per
output (sorted by id), human judgments aggregated per output and aspect, one column per
metric run (:class:`ScoreFrame`).

:func:`load_frame` reads the dataset's columnar snapshot (:mod:`.columnar`; the
snapshot is written first when there is none for the current data version), and the
database's rows (:mod:`.rows`) only when no snapshot can be had; both give the same
numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import replace

import numpy as np
from django.db.models import Q

from scoring.stats import Aggregate
from studies.models import Dataset
from studies.services.analysis import snapshot
from studies.services.analysis.frames.columnar import frame_from_snapshot
from studies.services.analysis.frames.rows import frame_from_rows, read_rows
from studies.services.analysis.frames.types import AspectInfo, JudgmentFilter, RunInfo, ScoreFrame

__all__ = [
    "AspectInfo",
    "JudgmentFilter",
    "RunInfo",
    "ScoreFrame",
    "frame_from_rows",
    "frame_from_snapshot",
    "load_frame",
    "restrict_to_documents",
    "read_rows",
]
log = logging.getLogger(__name__)


def load_frame(
    dataset: Dataset,
    *,
    aggregate: Aggregate = Aggregate.MEAN,
    exclude_annotators: Collection[int] = (),
    judgment_weights: Mapping[tuple[int, int], float] | None = None,
    only_runs: Collection[int] | None = None,
    only_aspects: Collection[int] | None = None,
    judgments: JudgmentFilter | Q | None = None,
) -> ScoreFrame:
    """The dataset's outputs, judgments and metric scores as a :class:`ScoreFrame`.

    ``judgment_weights`` maps (annotator id, aspect id) to the weight of that annotator's
    judgments in the mean; judgments not listed (imported ones among them) weigh 1.
    ``only_runs`` and ``only_aspects`` (ids) keep those runs and aspects (reading less);
    ``judgments`` keeps only the judgments it matches (one source's).

    Read from the snapshot of the dataset's current data (written first if missing);
    from the rows when none can be had (see :class:`snapshot.SnapshotUnavailable`)."""
    kept = JudgmentFilter.of(judgments)
    options = {
        "aggregate": aggregate,
        "exclude_annotators": exclude_annotators,
        "judgment_weights": judgment_weights,
        "only_runs": only_runs,
        "only_aspects": only_aspects,
        "judgments": kept,
    }
    for _ in range(2):  # a snapshot retired while read: once more with the new one
        try:
            return frame_from_snapshot(snapshot.ensure(dataset), dataset, **options)
        except snapshot.SnapshotUnavailable as exc:
            log.info("dataset %s: reading rows (%s)", dataset.pk, exc)
            break
        except FileNotFoundError:
            continue
    return frame_from_rows(dataset, **options)


def restrict_to_documents(frame: ScoreFrame, doc_keys: Collection[str]) -> ScoreFrame:
    """The same frame with only the outputs of ``doc_keys`` (codes renumbered)."""
    wanted = set(doc_keys)
    keep = np.array([key in wanted for key in frame.doc_keys], dtype=bool)[frame.doc_codes]
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
