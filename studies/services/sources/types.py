"""The typed result of a conversion, shared by every benchmark loader and tool adapter.

A :class:`ConvertedDataset` says what a source holds (its aspects with their kind and the
paper's definition, its licence, citation and where the files came from) and streams its
data in Concordia's import layout: per-output records (``records()``) and pairwise
preference lines (``pairs()``), both plain JSON-ready dicts. The streams are re-readable:
each call reads the source files again, so the importer can validate in one pass and
write in a second without holding the dataset in memory.

Record layout (one output; see ``studies/services/imports/records.py``)::

    {"doc_id", "system_id", "source", "references": [...], "output",
     "human": {aspect: value}, "annotators": {aspect: {annotator_id: value}},
     "metrics": {name: number}, "context": {...}}

``human`` holds, per aspect, the mean of the annotators (scale aspects) or their majority
label (binary and categorical aspects; left out on a tie), as in ``shared/data``;
``annotators`` and ``metrics`` appear only when the source has them. Anything else a
source carries per output (a subset name, the WMT document) goes under ``context``.

Pair layout (one judgment by one annotator)::

    {"doc_id", "source", "system_a", "output_a", "system_b", "output_b",
     "aspect", "annotator", "winner": "a" | "b" | "tie"}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

AspectKind = Literal["scale", "binary", "categorical"]
Label = str | int
Row = dict[str, Any]
RowStream = Callable[[], Iterator[Row]]
TASKS = ("summarization", "dialogue", "data_to_text", "machine_translation", "custom")


@dataclass(frozen=True)
class AspectSpec:
    """One aspect a source judges: its kind, its values and the definition it was judged by.

    ``scale``: numbers from ``low`` to ``high``; ``binary``: two ``labels``, ``positive``
    the one that counts as a pass (0/1 files: ``labels=(0, 1), positive=1``);
    ``categorical``: ``labels``, ``ordered`` when they form a scale of their own.
    """

    name: str
    kind: AspectKind
    definition: str
    low: float | None = None
    high: float | None = None
    labels: tuple[Label, ...] = ()
    positive: Label | None = None
    ordered: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise ValueError(f"aspect {self.name!r}: {problem}")

    def _problem(self) -> str:
        if not self.definition.strip():
            return "needs a definition"
        if self.kind == "scale":
            if self.low is None or self.high is None or not self.low < self.high:
                return "a scale needs low < high"
        elif self.kind == "binary":
            if len(self.labels) != 2 or self.positive not in self.labels:
                return "a binary aspect needs two labels, one of them positive"
        elif self.kind == "categorical":
            if len(set(self.labels)) < 2:
                return "a categorical aspect needs at least two labels"
        else:
            return f"unknown kind {self.kind!r}"
        return ""

    @classmethod
    def scale(
        cls, name: str, low: float, high: float, definition: str, source: str = ""
    ) -> AspectSpec:
        return cls(name, "scale", definition, low=low, high=high, source=source)

    @classmethod
    def binary(
        cls,
        name: str,
        definition: str,
        labels: tuple[Label, Label] = (0, 1),
        positive: Label = 1,
        source: str = "",
    ) -> AspectSpec:
        return cls(name, "binary", definition, labels=labels, positive=positive, source=source)

    @classmethod
    def categorical(
        cls,
        name: str,
        labels: tuple[Label, ...],
        definition: str,
        ordered: bool = False,
        source: str = "",
    ) -> AspectSpec:
        return cls(name, "categorical", definition, labels=labels, ordered=ordered, source=source)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the dataset's page and the importer's aspect declarations."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "definition": self.definition}
        if self.kind == "scale":
            out.update(low=self.low, high=self.high)
        else:
            out["labels"] = list(self.labels)
        if self.kind == "binary":
            out["positive"] = self.positive
        if self.kind == "categorical":
            out["ordered"] = self.ordered
        if self.source:
            out["source"] = self.source
        return out


@dataclass(frozen=True)
class Licence:
    """A source's licence. ``commercial`` is False for non-commercial licences and None
    where the release states none; both are refused unless the user accepts them."""

    spdx: str
    url: str
    commercial: bool | None
    note: str = ""

    @property
    def restricted(self) -> bool:
        return self.commercial is not True

    def describe(self) -> str:
        if self.commercial is None:
            use = "no licence stated"
        elif self.commercial:
            use = "commercial use allowed"
        else:
            use = "non-commercial"
        return f"{self.spdx} ({use})" + (f"; {self.note}" if self.note else "")


@dataclass(frozen=True)
class Provenance:
    """Where the converted files came from: a Hugging Face dataset repository at a
    revision, release URLs, or files the user already had (``local``)."""

    kind: Literal["huggingface", "url", "local"]
    location: str
    revision: str = ""
    files: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "location": self.location,
            "revision": self.revision,
            "files": list(self.files),
        }


@dataclass(frozen=True)
class Option:
    """An option a loader or adapter takes, declared once; command flags and forms derive
    from it. Values given as text (``--option split=validation``) are parsed by ``parse``."""

    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()

    def parse(self, value: Any) -> Any:
        if self.kind is bool and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(f"option {self.name}: expected true or false, got {value!r}")
            value = lowered in ("1", "true", "yes")
        elif self.kind in (int, float) and isinstance(value, str):
            try:
                value = self.kind(value)
            except ValueError:
                raise ValueError(
                    f"option {self.name}: expected {self.kind.__name__}, got {value!r}"
                ) from None
        elif value is not None and not isinstance(value, self.kind):
            raise ValueError(
                f"option {self.name}: expected {self.kind.__name__}, got {type(value).__name__}"
            )
        if self.choices and value not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise ValueError(f"option {self.name}: {value!r} is not one of {allowed}")
        return value


def parse_options(declared: tuple[Option, ...], given: dict[str, Any]) -> dict[str, Any]:
    """The declared options with defaults filled in; ValueError naming an unknown one."""
    known = {option.name: option for option in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        accepted = ", ".join(sorted(known)) or "none"
        raise ValueError(f"unknown option {unknown[0]!r} (accepted: {accepted})")
    return {
        name: option.parse(given[name]) if name in given else option.default
        for name, option in known.items()
    }


@dataclass(frozen=True)
class Problem:
    """A located problem in a source file: the file, where in it (``line 7``,
    ``$[3].annotations[0]``), the field, and what is wrong."""

    file: str
    where: str
    field: str
    message: str

    def __str__(self) -> str:
        place = ", ".join(part for part in (self.file, self.where) if part)
        name = f", field '{self.field}'" if self.field else ""
        return f"{place}{name}: {self.message}"


class SourceError(ValueError):
    """A source file that cannot be converted; ``problem`` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


class LicenceNotAccepted(PermissionError):
    """A non-commercial (or unlicensed) source loaded without ``accept_licence``."""


@dataclass
class ConvertedDataset:
    """A converted source: metadata plus re-readable streams of records and pairs."""

    name: str
    title: str
    task: str
    aspects: tuple[AspectSpec, ...]
    licence: Licence
    citation: str
    homepage: str
    provenance: Provenance
    records_factory: RowStream
    pairs_factory: RowStream
    notes: list[str] = field(default_factory=list)

    def records(self) -> Iterator[Row]:
        """Stream the per-output records (reads the source files again on each call)."""
        return self.records_factory()

    def pairs(self) -> Iterator[Row]:
        """Stream the pairwise preference lines (reads the source files again)."""
        return self.pairs_factory()

    def aspect(self, name: str) -> AspectSpec:
        for spec in self.aspects:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def metadata(self) -> dict[str, Any]:
        """Everything but the streams, JSON-ready (recorded on the dataset, shown on its page)."""
        return {
            "name": self.name,
            "title": self.title,
            "task": self.task,
            "aspects": [spec.as_dict() for spec in self.aspects],
            "licence": {
                "spdx": self.licence.spdx,
                "url": self.licence.url,
                "commercial": self.licence.commercial,
                "note": self.licence.note,
            },
            "citation": self.citation,
            "homepage": self.homepage,
            "provenance": self.provenance.as_dict(),
            "notes": list(self.notes),
        }


def no_rows() -> Iterator[Row]:
    """The empty stream, for sources without records or without pairs."""
    return iter(())
