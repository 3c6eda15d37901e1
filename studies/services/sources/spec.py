"""What a benchmark loader and a tool adapter declare: one :class:`Benchmark` or
:class:`Format` value per module, registered by one line in :mod:`.registry`.

A benchmark names its pinned release (a Hugging Face dataset repository at a commit, or
release URLs at a commit), its licence, citation, aspects with the paper's definitions and
the published layout of its raw files; ``read`` turns those files into a
:class:`Conversion`. A format names the tool's documentation page for its export and
``read`` (and, where the tool can import it back, ``export``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studies.services.sources.types import (
    AspectSpec,
    Licence,
    Option,
    Row,
    RowStream,
    no_rows,
)


@dataclass(frozen=True)
class HubRelease:
    """Files of a Hugging Face dataset repository at a pinned revision (a commit)."""

    repo: str
    revision: str
    patterns: tuple[str, ...]

    def describe(self, revision: str | None = None) -> str:
        return f"https://huggingface.co/datasets/{self.repo} @ {revision or self.revision}"


@dataclass(frozen=True)
class UrlRelease:
    """Files under a release URL; ``base`` may hold ``{revision}`` (a commit of a GitHub
    repository served by raw.githubusercontent.com, say)."""

    base: str
    revision: str
    files: tuple[str, ...]

    def describe(self, revision: str | None = None) -> str:
        return self.base.format(revision=revision or self.revision)


Release = HubRelease | UrlRelease


@dataclass
class Conversion:
    """What ``read`` returns: the streams, the aspects (a format reads them from the
    file; a benchmark has its own) and notes on what was left out, filled while streaming."""

    records: RowStream
    pairs: RowStream = no_rows
    aspects: tuple[AspectSpec, ...] = ()
    notes: list[str] = field(default_factory=list)


Reader = Callable[[Path, dict[str, Any]], Conversion]


@dataclass(frozen=True)
class Benchmark:
    """A published meta-evaluation benchmark and how to convert its raw files."""

    name: str
    title: str
    task: str
    licence: Licence
    citation: str
    homepage: str
    release: Release
    layout: str
    aspects: tuple[AspectSpec, ...]
    read: Reader
    options: tuple[Option, ...] = ()


Exporter = Callable[[Iterable[Row], Iterable[Row], Path, dict[str, Any]], None]


@dataclass(frozen=True)
class Format:
    """A tool's export format (``import_records --format NAME``)."""

    name: str
    title: str
    doc_url: str
    read: Reader
    options: tuple[Option, ...] = ()
    export: Exporter | None = None
    export_options: tuple[Option, ...] = ()
