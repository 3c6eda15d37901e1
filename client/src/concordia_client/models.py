"""What the API answers, as frozen dataclasses.

Each class names the OpenAPI schema component it reads (``SCHEMA``); the repository's
tests check every field against the server's schema, so a renamed or removed field fails
there, not in a user's script. Fields the client does not model are still in ``raw``.
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

RunStatus = Literal["pending", "running", "succeeded", "failed", "cancelled", "waiting"]
ImportStatus = Literal["pending", "running", "succeeded", "failed"]
UploadStatus = Literal["receiving", "received", "completed"]
Level = Literal["sample", "dataset", "system"]
Coefficient = Literal[
    "acc23",
    "kendall",
    "kendall_23",
    "kendall_c",
    "kendall_like",
    "pdp",
    "pearson",
    "spa",
    "spearman",
]
Average = Literal["macro", "micro"]
Ties = Literal["exact", "calibrate"]
Flagged = Literal["include", "exclude"]
Weights = Literal["equal", "competence"]
DataFormat = Literal["jsonl", "csv"]  # datasets and run scores: the import formats
TableFormat = Literal["csv", "json", "tex"]  # the correlation table

RUN_FINISHED: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
IMPORT_FINISHED: frozenset[str] = frozenset({"succeeded", "failed"})

T = TypeVar("T")


def _parse_datetime(value: str) -> datetime:
    # DRF writes UTC as "Z", which datetime.fromisoformat reads only from Python 3.11
    return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        inner = [arg for arg in get_args(hint) if arg is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list:
        (item,) = get_args(hint)
        return [_convert(item, v) for v in value]
    if hint is datetime:
        return _parse_datetime(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return build(hint, value)
    return value


def build(cls: type[T], data: Mapping[str, Any]) -> T:
    """A model from its JSON object: nested models, lists of them and datetimes are
    converted; a field the answer lacks takes its default (a missing required one is a
    ``KeyError``). The whole object is kept in ``raw``."""
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for item in dataclasses.fields(cls):  # type: ignore[arg-type]
        if item.name == "raw":
            values["raw"] = dict(data)
        elif item.name in data:
            values[item.name] = _convert(hints[item.name], data[item.name])
        elif item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            raise KeyError(f"{cls.__name__}: the answer has no {item.name!r}")
    return cls(**values)


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Dataset:
    """A dataset you own or research in a study of."""

    SCHEMA: ClassVar[str] = "Dataset"
    id: int
    name: str
    task: str
    owner: str | None
    data_version: int
    created_at: datetime
    n_documents: int | None
    description: str = ""
    raw: Mapping[str, Any] = _raw()


# "line 3, field 'output': message", "line 3: message", "file: message" (LineError's text)
_PROBLEM = re.compile(
    r"(?:line (?P<line>\d+)|file)(?:, field '(?P<field>[^']*)')?: (?P<msg>.*)", re.S
)


@dataclass(frozen=True)
class ImportProblem:
    """One problem the server found in an uploaded file: its line (None for the file as a
    whole), the field to blame ("" if none), the message, and the server's whole text."""

    line: int | None
    field: str
    message: str
    text: str

    @classmethod
    def parse(cls, text: str) -> ImportProblem:
        match = _PROBLEM.fullmatch(text)
        if match is None:  # "... and 12 more problems", an internal error
            return cls(None, "", text, text)
        line = match["line"]
        return cls(int(line) if line else None, match["field"] or "", match["msg"], text)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ImportJob:
    """An upload: imported in the request when small, else by a worker."""

    SCHEMA: ClassVar[str] = "ImportJob"
    id: int
    status: ImportStatus
    original_name: str
    file_format: str
    dataset_name: str
    dataset: int | None
    task: str
    create_aspects: bool
    summary: Mapping[str, Any]
    errors: list[str]
    created_at: datetime
    finished_at: datetime | None
    raw: Mapping[str, Any] = _raw()

    @property
    def finished(self) -> bool:
        return self.status in IMPORT_FINISHED

    @property
    def problems(self) -> list[ImportProblem]:
        """The errors, each with its line and field."""
        return [ImportProblem.parse(text) for text in self.errors]


@dataclass(frozen=True)
class UploadSession:
    """A resumable upload: ``offset`` of ``size`` bytes received; ``job`` the import it
    became once completed. ``chunk_max`` is the largest chunk the server takes."""

    SCHEMA: ClassVar[str] = "UploadSession"
    id: str
    file_name: str
    file_format: str
    size: int
    offset: int
    sha256: str
    dataset: str
    task: str
    create_aspects: bool
    status: UploadStatus
    job: int | None
    chunk_max: int
    created_at: datetime
    expires_at: datetime
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Aspect:
    """What humans judge and metrics score (coherence, fluency…)."""

    SCHEMA: ClassVar[str] = "Aspect"
    id: int
    code: str
    name: str
    key: str
    version: int
    definition: str = ""
    scale_min: float | None = None
    scale_max: float | None = None
    kind: str = "scale"  # scale, binary or categorical
    labels: list[str] = field(default_factory=list)  # a label judgment's value: its index
    positive: str = ""  # binary: the positive label
    ordered: bool = False  # categorical: whether the labels are ordered
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Run:
    """A metric run, with its progress."""

    SCHEMA: ClassVar[str] = "Run"
    id: int
    dataset: int
    metric: str
    label: str
    kind: str
    status: RunStatus
    done: int
    total: int
    outputs_per_s: float | None
    eta_seconds: float | None
    can_resume: bool
    phase: str
    is_partial: bool
    outcome: str
    error: str
    aspect: str | None
    config: Mapping[str, Any]
    timings: Mapping[str, Any]
    provenance: Mapping[str, Any]
    usage: Mapping[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    raw: Mapping[str, Any] = _raw()

    @property
    def finished(self) -> bool:
        return self.status in RUN_FINISHED

    @property
    def fraction(self) -> float:
        """done / total (0 before the total is known)."""
        return self.done / self.total if self.total else 0.0


@dataclass(frozen=True)
class Job:
    """Work queued or running in a worker (the jobs page's row): another researcher's
    shows only its kind and place."""

    SCHEMA: ClassVar[str] = "Job"
    lane: str  # the worker that takes it: model, quick, light, io; batch: waiting for answers
    kind: str
    title: str
    url: str
    queue: str
    running: bool
    user: str
    dataset_id: int | None
    queued_at: datetime
    started_at: datetime | None
    done: int | None
    total: int | None
    eta_seconds: float | None
    position: int  # among its lane's queued jobs, from 1; 0 while running
    ahead: int
    starts_in: float | None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Score:
    """One output's metric score in a run."""

    SCHEMA: ClassVar[str] = "RunScore"
    output: int
    doc_key: str
    system_id: str
    value: float | None
    error: str
    details: Mapping[str, Any]
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Judgment:
    """A human score of one output on one aspect (imported or from an annotator)."""

    SCHEMA: ClassVar[str] = "Judgment"
    id: int
    output: int
    aspect: int
    aspect_code: str
    value: float
    annotator: str | None
    source: str
    created_at: datetime
    import_file: str = ""
    rater: str = ""  # an imported judgment's annotator, as its file names them
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class RunRef:
    """A row of the correlation matrix."""

    SCHEMA: ClassVar[str] = "RunRef"
    pk: int
    label: str
    metric: str
    model: str
    kind: str
    status: str
    aspect: str
    sentinel: bool
    partial_run: bool = False
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class AspectRef:
    SCHEMA: ClassVar[str] = "AspectRef"
    pk: int
    code: str
    name: str
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Cell:
    """One run's correlation with one aspect's judgments."""

    SCHEMA: ClassVar[str] = "Cell"
    run: int
    value: float | None
    low: float | None
    high: float | None
    n_outputs: int
    n_documents: int
    n_systems: int
    n_skipped: int
    best: bool
    p_vs_best: float | None
    rank: int | None
    coverage: float
    partial: bool
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Column:
    SCHEMA: ClassVar[str] = "Column"
    aspect: AspectRef
    cells: list[Cell]  # aligned with CorrelationMatrix.runs
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class CorrelationMatrix:
    """The metric × aspect table of the dataset's correlations page."""

    SCHEMA: ClassVar[str] = "Matrix"
    params: Mapping[str, Any]
    coefficient_label: str
    runs: list[RunRef]
    columns: list[Column]
    average_rank: list[float | None]
    n_outputs: int
    n_documents: int
    n_systems: int
    excluded_annotators: list[str]
    raw: Mapping[str, Any] = _raw()

    def cell(self, run: int | str, aspect: str) -> Cell:
        """The cell of a run (its id or label) and an aspect (its code)."""
        rows = [i for i, r in enumerate(self.runs) if run in (r.pk, r.label)]
        columns = [c for c in self.columns if c.aspect.code == aspect]
        if not rows or not columns:
            raise KeyError(f"no cell for run {run!r} and aspect {aspect!r}")
        return columns[0].cells[rows[0]]

    def value(self, run: int | str, aspect: str) -> float | None:
        return self.cell(run, aspect).value

    def table(self) -> dict[str, dict[str, float | None]]:
        """{run label: {aspect code: value}}."""
        return {
            run.label: {column.aspect.code: column.cells[i].value for column in self.columns}
            for i, run in enumerate(self.runs)
        }


@dataclass(frozen=True)
class CardRow:
    """One row of the judge report card: a judge run on an aspect (a ``scale``, ``binary``
    or ``categorical`` one: ``kind``), each piece of evidence as the API gives it
    (``labels``: a label aspect's MCC, κ, F1, TPR/TNR, prevalence and calibration; None on
    a scale aspect), and the verdict."""

    SCHEMA: ClassVar[str] = "ReportCardRow"
    run: Mapping[str, Any]
    aspect: Mapping[str, Any]
    correlation: Mapping[str, Any]
    labels: Mapping[str, Any] | None
    agreement: Mapping[str, Any]
    alt_test: Mapping[str, Any]
    verdict: Mapping[str, Any]
    raw: Mapping[str, Any] = _raw()

    @property
    def kind(self) -> str:
        return str(self.aspect.get("kind", "scale"))

    @property
    def primary(self) -> tuple[str, float | None, float | None, float | None]:
        """The statistic the verdict compares with the human ceiling, as (name, value,
        low, high): the correlation on a scale aspect, ``mcc`` on a binary one,
        ``kappa`` on a categorical one."""
        if self.labels and self.labels.get("judge"):
            name = str(self.labels["primary"])
            found = self.labels["judge"][name] or {}
        else:
            name, found = "correlation", self.correlation
        return name, found.get("value"), found.get("low"), found.get("high")
