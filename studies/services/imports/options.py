"""What an import is asked to do and what it reports: its options, its summary and the
error that stops it before anything is written; and the batching both directions use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import studies.services.imports.scales as scales
from studies.services.imports.records import LineError

T = TypeVar("T")


class ImportValidationError(Exception):
    """The file has problems; nothing was written. ``errors`` locates each one."""

    def __init__(self, errors: list[LineError], more: int = 0) -> None:
        self.errors = errors
        self.more = more
        lines = [str(e) for e in errors]
        if more:
            lines.append(f"... and {more} more problems")
        super().__init__("\n".join(lines))


@dataclass
class ImportOptions:
    """What to import where. Scores outside an existing aspect's scale are an error
    unless ``rescale`` states their source range (``{"informativeness": (1, 6)}``: mapped
    linearly onto the aspect's scale) or ``widen_aspects`` imports them into a wider copy
    of the aspect (``Informativeness 1–6``)."""

    dataset: str
    task: str
    file_format: str
    file_name: str
    create_aspects: bool = False
    owner: Any = None
    description: str = ""
    rescale: scales.SourceRanges = field(default_factory=dict)
    widen_aspects: bool = False


@dataclass
class ImportSummary:
    """What an import did, by kind of row."""

    dataset: str
    records: int = 0
    documents: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    outputs: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    judgments: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    metric_scores: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    pairwise_judgments: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    aspects_created: list[str] = field(default_factory=list)
    metric_runs: list[str] = field(default_factory=list)
    scales: list[str] = field(default_factory=list)  # created, rescaled, widened: in words
    merged: list[str] = field(default_factory=list)  # ids spelled two ways, merged: in words
    # the raters per aspect, human values not used, keys left out: in words
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
