"""Reading a snapshot: only the files and columns asked for, straight into numpy.

A matrix cell needs the outputs' keys, one aspect's judgments and one run's scores; a
reader opens those files alone and, within them, those columns alone (Parquet stores
each column apart), so what a read costs follows what it asks, not the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from studies.services.analysis.snapshot.layout import judgments_file, scores_file


def release_memory() -> None:
    """Hand the memory Arrow freed back to the system: its allocator keeps freed pages
    for reuse, and a frame read leaves ~100 MB of them per million outputs, which the
    statistics that follow would otherwise add to."""
    pa.default_memory_pool().release_unused()


def _numpy(column: pa.ChunkedArray, dtype: Any) -> np.ndarray:
    return np.asarray(column.to_numpy(), dtype=dtype)


@dataclass(frozen=True)
class Judgments:
    """One aspect's judgments, by output then judgment id: ``annotator`` is the
    account's id, or ``-(k + 1)`` for the k-th imported annotator (``sources``: each
    one's (import file, rater), sorted; :mod:`studies.services.annotators`)."""

    judgment_id: np.ndarray | None
    output_id: np.ndarray
    annotator: np.ndarray
    value: np.ndarray
    files: list[str]
    file_code: np.ndarray  # each row's index in ``files`` (accounts: the index of "")
    sources: list[tuple[str, str]] = field(default_factory=list)

    def from_file(self, name: str) -> np.ndarray:
        """The rows imported from the file ``name`` (no annotator)."""
        if name not in self.files:
            return np.zeros(self.value.size, dtype=bool)
        return (self.annotator < 0) & (self.file_code == self.files.index(name))


@dataclass(frozen=True)
class Snapshot:
    """A written snapshot (``path``, with its ``manifest``)."""

    path: Path
    manifest: dict[str, Any] = field(repr=False)

    @property
    def version(self) -> int:
        return int(self.manifest["data_version"])

    @property
    def aspects(self) -> list[int]:
        """The aspects with judgments, by id."""
        return sorted(int(pk) for pk in self.manifest["aspects"])

    @property
    def files(self) -> list[str]:
        """The names of the files judgments were imported from, sorted."""
        return [str(f) for f in self.manifest["files"]]

    @property
    def runs(self) -> list[int]:
        """The runs with scores, by id."""
        return sorted(int(pk) for pk in self.manifest["runs"])

    def outputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Output ids (sorted), and each one's document and system code (int64)."""
        table = pq.read_table(self.path / "outputs.parquet", columns=["output_id", "doc", "system"])
        return (
            _numpy(table["output_id"], np.int64),
            _numpy(table["doc"], np.int64),
            _numpy(table["system"], np.int64),
        )

    def doc_keys(self) -> list[str]:
        return [
            str(k) for k in pq.read_table(self.path / "documents.parquet")["doc_key"].to_pylist()
        ]

    def system_names(self) -> list[str]:
        return [
            str(s) for s in pq.read_table(self.path / "systems.parquet")["system_id"].to_pylist()
        ]

    def judgments(self, aspect: int, *, ids: bool = False) -> Judgments:
        """The aspect's judgments (with their ids when ``ids``); none when it has none."""
        columns = ["output_id", "annotator_id", "import_file", "rater", "value"]
        if str(aspect) not in self.manifest["aspects"]:
            empty = np.zeros(0, dtype=np.int64)
            return Judgments(empty if ids else None, empty, empty, np.zeros(0), [], empty)
        table = pq.read_table(
            judgments_file(self.path, aspect),
            columns=(["judgment_id"] if ids else []) + columns,
            read_dictionary=["import_file", "rater"],
        )
        files, file_code = _dictionary_codes(table["import_file"])
        sources, source_code = _sources(files, file_code, table["rater"])
        annotator = table["annotator_id"]
        accounts = np.asarray(annotator.fill_null(0).to_numpy(), dtype=np.int64)
        return Judgments(
            judgment_id=_numpy(table["judgment_id"], np.int64) if ids else None,
            output_id=_numpy(table["output_id"], np.int64),
            annotator=np.where(accounts > 0, accounts, -(source_code + 1)),
            value=_numpy(table["value"], np.float64),
            files=files,
            file_code=file_code,
            sources=sources,
        )

    def scores(self, run: int, output_ids: np.ndarray) -> np.ndarray:
        """The run's scores aligned with ``output_ids`` (the snapshot's, sorted): NaN
        where it has none."""
        aligned = np.full(output_ids.size, np.nan)
        if str(run) not in self.manifest["runs"]:
            return aligned
        table = pq.read_table(scores_file(self.path, run), columns=["output_id", "value"])
        ids = _numpy(table["output_id"], np.int64)
        values = _numpy(table["value"], np.float64)
        if ids.size == output_ids.size and np.array_equal(ids, output_ids):
            return values  # every output scored: already aligned
        at = np.searchsorted(output_ids, ids)
        aligned[at] = values
        return aligned


def _sources(
    files: list[str], file_code: np.ndarray, rater: pa.ChunkedArray
) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Each row's imported annotator, (file, rater), as a code into their sorted list."""
    raters, rater_code = _dictionary_codes(rater)
    width = max(len(raters), 1)
    found, inverse = np.unique(file_code * width + rater_code, return_inverse=True)
    pairs = [(files[int(c) // width], raters[int(c) % width] if raters else "") for c in found]
    order = sorted(range(len(pairs)), key=pairs.__getitem__)
    rank = np.empty(len(pairs), dtype=np.int64)
    rank[order] = np.arange(len(pairs))
    return [pairs[k] for k in order], rank[inverse.reshape(-1)] if pairs else inverse


def _dictionary_codes(column: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """A dictionary column's distinct strings (each chunk's dictionaries merged) and
    each row's index among them."""
    names: dict[str, int] = {}
    codes = []
    for chunk in column.chunks:
        local = np.array(
            [names.setdefault(str(s), len(names)) for s in chunk.dictionary.to_pylist()],
            dtype=np.int64,
        )
        indices = np.asarray(chunk.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        codes.append(local[indices] if local.size else indices)
    code = np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)
    return list(names), code
