"""What a frame is: one dataset's scores and judgments aligned by output, with what its
rows and columns say about the outputs, runs and aspects; and which judgments it keeps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from scoring.metrics.sentinels import is_sentinel
from studies.models import MetricRun


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
    kind: str = "scale"  # scale, binary or categorical (Aspect.Kind)
    labels: tuple[str, ...] = ()  # a label aspect's labels, as text, in their order
    positive: str = ""  # a binary aspect's positive label
    ordered: bool = False  # a categorical aspect's labels are ordered


@dataclass(frozen=True, eq=False)
class ScoreFrame:
    """Scores of one dataset, aligned by output (row k is ``output_ids[k]``)."""

    output_ids: np.ndarray
    doc_codes: np.ndarray
    system_codes: np.ndarray
    doc_keys: list[str]
    system_names: list[str]
    aspects: list[AspectInfo]
    # column-major (each column contiguous): a cell reads one run's and one aspect's
    # column, and a strided column would stream the whole matrix through the cache
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


@dataclass(frozen=True)
class JudgmentFilter:
    """Which judgments make a frame's human side: those ``q`` matches. ``import_file``,
    when set, says that ``q`` means "imported from this file" (no annotator), which a
    snapshot answers from its own columns; any other ``q`` is asked of the database for
    the ids it matches (a campaign's answers: a few thousand rows)."""

    q: Q
    import_file: str | None = None

    @classmethod
    def from_file(cls, name: str) -> JudgmentFilter:
        return cls(Q(annotator__isnull=True, import_file=name), import_file=name)

    @classmethod
    def of(cls, given: JudgmentFilter | Q | None) -> JudgmentFilter | None:
        """A filter from what a caller gave (a bare ``Q`` is a query)."""
        return cls(given) if isinstance(given, Q) else given
