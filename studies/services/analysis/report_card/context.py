"""What every row of one report card shares (the frame, the resamples, the matrix, the
annotators' rows, length bias and the runs' rows), and what one row's pieces compute
from (:class:`RowInput`)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scoring.stats import Groups, Level, Unit, draw_resamples
from studies.models import Dataset, MetricRun
from studies.services.analysis.ceiling import ceiling_row, judgment_table
from studies.services.analysis.dashboards import frame_for, matrix_for
from studies.services.analysis.diagnostics import length_bias, output_lengths
from studies.services.analysis.frames import AspectInfo, RunInfo, restrict_to_documents
from studies.services.analysis.label_cells import label_columns
from studies.services.analysis.matrix import compute_matrix
from studies.services.analysis.report_card.params import CardParams
from studies.services.analysis.report_card.reference import (
    ADJUDICATED,
    Values,
    adjudicated_values,
    reference_humans,
    substitute,
)
from studies.services.analysis.report_card.thresholds import DeclaredSplit, declared_split
from studies.services.runs.labels import with_traits


class Context:
    """What every row of one card shares: the frame, the resamples, the matrix, the
    annotators' rows, length bias and the runs' rows. With ``documents`` (document
    keys), all of it on those documents only: a tuned run's rows are computed on its
    split's test documents (:mod:`.held_out`), with the matrix, the human ceiling and the
    resamples of those documents (not cached: the dataset's matrix is of every one).
    With the adjudicated reference (:mod:`.reference`), the frame's human column holds
    the adjudicated values where there are some (``counts``: how many per aspect)."""

    def __init__(
        self, dataset: Dataset, params: CardParams, documents: Collection[str] | None = None
    ) -> None:
        self.dataset, self.params = dataset, params
        self.mp = params.matrix_params
        frame = frame_for(dataset, self.mp)
        if documents is not None:
            frame = restrict_to_documents(frame, documents)
        self.adjudicated: Values = {}
        self.counts: dict[str, dict[str, int]] = {}
        self.frame = frame  # the annotators' matrix, ceiling and length bias read this one
        if params.reference == ADJUDICATED:
            self.adjudicated = adjudicated_values(dataset.pk, params.reference_study)
            self.frame, self.counts = substitute(frame, self.adjudicated)
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
        matrix = (
            matrix_for(dataset, self.mp) if documents is None else _matrix(dataset, frame, self.mp)
        )
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
        self._split: DeclaredSplit | None = None
        self.restricted = documents is not None

    @property
    def split(self) -> DeclaredSplit:
        """Where a numeric judge's threshold on a binary aspect is chosen (read once); on
        a tuned run's test documents (``restricted``) the study split's tune documents are
        not there: halves of those documents, cross-fitted."""
        if self._split is None:
            study = None if self.restricted else self.params.split
            self._split = declared_split(self.frame.doc_keys, study, self.mp.seed)
        return self._split


def _matrix(dataset: Dataset, frame: Any, mp: Any) -> dict[str, Any]:
    """The matrix of a restricted frame, with its ceiling and label columns."""
    if not (frame.aspects and frame.n_outputs):
        return {"columns": [], "ceiling": []}
    matrix = compute_matrix(frame, mp)
    matrix["ceiling"] = ceiling_row(dataset, frame, mp)
    label_columns(dataset, frame, matrix)
    return matrix


@dataclass
class RowInput:
    """One row's inputs: the card's :class:`Context`, the aspect (``j``: its column in the
        frame) and the judge run (``i``: its column), the annotators' answers on the aspect
        (annotators × the frame's outputs, NaN: none) and their names; ``shared``: what the
        pieces keep per aspect across its rows (the annotators' own statistics, computed
        once); ``row``: what the pieces before this one put in the row; ``scratch``: what
    they leave the next ones that is not shown (the correlation's options, the scores the
    alternative-annotator test compares)."""

    context: Context
    j: int
    aspect: AspectInfo
    i: int
    info: RunInfo
    humans: np.ndarray
    names: list[str]
    shared: dict[str, Any] = field(default_factory=dict)
    row: dict[str, Any] = field(default_factory=dict)
    scratch: dict[str, Any] = field(default_factory=dict)  # what one piece leaves the next

    @property
    def metric(self) -> np.ndarray:
        """The judge's scores, aligned with the frame's outputs."""
        return self.context.frame.metrics[:, self.i]

    @property
    def human(self) -> np.ndarray:
        """The human reference per output: the annotators' mean, or the adjudicated value
        where the card's reference is the adjudications and there is one."""
        return self.context.frame.human[:, self.j]

    @property
    def reference_humans(self) -> np.ndarray:
        """The annotators' answers a label aspect's judge is compared with: ``humans``,
        read as the adjudicated value on an adjudicated output (:mod:`.reference`)."""
        c = self.context
        return reference_humans(self.humans, c.frame, self.aspect, c.adjudicated)

    @property
    def run(self) -> MetricRun:
        return self.context.rows[self.info.pk]
