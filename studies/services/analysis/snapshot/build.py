"""Writing a snapshot: the dataset's rows streamed from the database into Parquet files.

Rows come through a chunked cursor (a server-side cursor on PostgreSQL, so neither
database hands over more than a chunk at a time) and are turned into numpy columns a
chunk at a time; nothing holds a Python object per row beyond one chunk. Scores are
read one run at a time in output order (the ``(run, output)`` unique index gives it),
judgments in one pass and split by aspect. The same queries run on SQLite and
PostgreSQL (the ORM writes them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.db import connection
from django.db.models import Value
from django.db.models.functions import Coalesce

from studies.models import Dataset, Document, Judgment, MetricRun, MetricScore, Output
from studies.services.analysis.snapshot.layout import judgments_file, scores_file

CHUNK_ROWS = 100_000
# No compression: integer columns are delta-encoded (sorted ids and codes shrink to a
# few bits each) and the rest dictionary-encoded (ratings, file names), except metric
# scores (floats that no encoding shrinks). Read back three times faster than zstd, at
# the same size (a million scores: 9 ms and 7.8 MB, against 28 ms and 9.0 MB).
DELTA = "DELTA_BINARY_PACKED"


def _chunks(queryset: Any) -> Iterator[list[tuple[Any, ...]]]:
    """The queryset's rows, ``CHUNK_ROWS`` at a time."""
    sql, params = queryset.query.sql_with_params()
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(CHUNK_ROWS):
            yield chunk


def _ints(column: tuple[Any, ...]) -> np.ndarray:
    return np.fromiter(column, dtype=np.int64, count=len(column))


def _floats(column: tuple[Any, ...]) -> np.ndarray:
    return np.fromiter(column, dtype=np.float64, count=len(column))


class _Strings:
    """Codes for strings seen a chunk at a time (Arrow's hashing, then a dict of the
    few distinct values); :meth:`sorted_codes` renumbers them in sorted order."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def codes(self, column: tuple[Any, ...]) -> np.ndarray:
        encoded = pc.dictionary_encode(pa.array(column, type=pa.string()))
        local = np.array(
            [self.index.setdefault(s, len(self.index)) for s in encoded.dictionary.to_pylist()],
            dtype=np.int64,
        )
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        return local[indices] if local.size else indices.astype(np.int64)

    def sorted_codes(self) -> tuple[list[str], np.ndarray]:
        """The strings in sorted order (Python's, as ``np.unique`` sorts them), and each
        first-seen code's position among them."""
        names = sorted(self.index)
        position = np.empty(len(names), dtype=np.int64)
        for k, name in enumerate(names):
            position[self.index[name]] = k
        return names, position


def _write(table: pa.Table, path: Path, *, plain: tuple[str, ...] = ()) -> int:
    """Write ``table`` (``plain``: columns stored as they are, neither delta- nor
    dictionary-encoded)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    integers = [f.name for f in table.schema if pa.types.is_integer(f.type)]
    dictionary = [n for n in table.column_names if n not in integers and n not in plain]
    pq.write_table(
        table,
        path,
        compression="none",
        use_dictionary=dictionary,
        column_encoding={name: DELTA for name in integers},
    )
    return path.stat().st_size


def write_outputs(dataset: Dataset, path: Path) -> dict[str, Any]:
    """``outputs``, ``documents`` and ``systems``: each output's document and system as
    codes in key order (what ``np.unique`` gives the row path)."""
    ids, documents, systems = [], [], []
    names = _Strings()
    for chunk in _chunks(
        Output.objects.filter(document__dataset=dataset)
        .order_by("pk")
        .values_list("pk", "document_id", "system_id")
    ):
        pks, docs, system = zip(*chunk, strict=True)
        ids.append(_ints(pks))
        documents.append(_ints(docs))
        systems.append(names.codes(system))
    output_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    document_ids = np.concatenate(documents) if documents else np.zeros(0, dtype=np.int64)
    system_names, position = names.sorted_codes()
    system_codes = position[np.concatenate(systems)] if systems else np.zeros(0, dtype=np.int64)
    # documents with outputs, coded in key order (two documents of one key share a code)
    used, per_output = np.unique(document_ids, return_inverse=True)
    key_of = dict(Document.objects.filter(dataset=dataset).values_list("pk", "doc_key"))
    doc_keys, key_codes = np.unique(
        np.array([key_of[int(pk)] for pk in used], dtype=object), return_inverse=True
    )
    doc_codes = key_codes.astype(np.int64)[per_output] if used.size else per_output
    size = _write(
        pa.table(
            {
                "output_id": output_ids,
                "doc": doc_codes.astype(np.int32),
                "system": system_codes.astype(np.int32),
            }
        ),
        path / "outputs.parquet",
    )
    size += _write(
        pa.table(
            {
                "doc": np.arange(len(doc_keys), dtype=np.int32),
                "doc_key": pa.array([str(k) for k in doc_keys], type=pa.string()),
            }
        ),
        path / "documents.parquet",
    )
    size += _write(
        pa.table(
            {
                "system": np.arange(len(system_names), dtype=np.int32),
                "system_id": pa.array(system_names, type=pa.string()),
            }
        ),
        path / "systems.parquet",
    )
    return {
        "n_outputs": int(output_ids.size),
        "n_documents": len(doc_keys),
        "n_systems": len(system_names),
        "bytes": size,
    }


def write_judgments(dataset: Dataset, path: Path) -> dict[str, Any]:
    """One file per aspect, the judgments by output then id (the order the row path's
    query meets them within an output, so means add up in the same order); the names of
    the files judgments were imported from. An imported judgment's annotator is its
    file and rater (:mod:`studies.services.annotators`)."""
    columns: dict[str, list[np.ndarray]] = {
        k: []
        for k in ("judgment_id", "output_id", "aspect_id", "annotator_id", "file", "rater", "value")
    }
    files, raters = _Strings(), _Strings()
    found = (
        Judgment.objects.filter(output__document__dataset=dataset)
        .annotate(who=Coalesce("annotator_id", Value(0)))
        .order_by()
        .values_list("pk", "output_id", "aspect_id", "who", "import_file", "rater", "value")
    )
    for chunk in _chunks(found):
        pks, outputs, aspects, annotators, names, rater_names, values = zip(*chunk, strict=True)
        columns["judgment_id"].append(_ints(pks))
        columns["output_id"].append(_ints(outputs))
        columns["aspect_id"].append(_ints(aspects))
        columns["annotator_id"].append(_ints(annotators))
        columns["file"].append(files.codes(names))
        columns["rater"].append(raters.codes(rater_names))
        columns["value"].append(_floats(values))
    if not columns["value"]:
        return {"aspects": {}, "files": [], "bytes": 0}
    table = {k: np.concatenate(v) for k, v in columns.items()}
    del columns
    file_names, position = files.sorted_codes()
    dictionary = pa.array(file_names, type=pa.string())
    rater_names, rater_position = raters.sorted_codes()
    rater_dictionary = pa.array(rater_names, type=pa.string())
    counts, size = {}, 0
    for aspect in np.unique(table["aspect_id"]).tolist():
        rows = np.flatnonzero(table["aspect_id"] == aspect)
        rows = rows[np.lexsort((table["judgment_id"][rows], table["output_id"][rows]))]
        annotator = table["annotator_id"][rows]
        size += _write(
            pa.table(
                {
                    "judgment_id": table["judgment_id"][rows],
                    "output_id": table["output_id"][rows],
                    "annotator_id": pa.array(annotator, mask=annotator == 0),
                    "import_file": pa.DictionaryArray.from_arrays(
                        pa.array(position[table["file"][rows]].astype(np.int32)), dictionary
                    ),
                    "rater": pa.DictionaryArray.from_arrays(
                        pa.array(rater_position[table["rater"][rows]].astype(np.int32)),
                        rater_dictionary,
                    ),
                    "value": table["value"][rows],
                }
            ),
            judgments_file(path, aspect),
        )
        counts[str(aspect)] = int(rows.size)
    return {"aspects": counts, "files": [f for f in file_names if f], "bytes": size}


def write_scores(dataset: Dataset, path: Path) -> dict[str, Any]:
    """One file per run: its scored outputs (a score without a value, an error, is left
    out, as the row path leaves it), by output."""
    counts, size = {}, 0
    for run in (
        MetricRun.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True)
    ):
        ids, values = [], []
        for chunk in _chunks(
            MetricScore.objects.filter(run_id=run, value__isnull=False)
            .order_by("output_id")
            .values_list("output_id", "value")
        ):
            outputs, scores = zip(*chunk, strict=True)
            ids.append(_ints(outputs))
            values.append(_floats(scores))
        if not ids:
            continue
        size += _write(
            pa.table({"output_id": np.concatenate(ids), "value": np.concatenate(values)}),
            scores_file(path, run),
            plain=("value",),
        )
        counts[str(run)] = int(sum(v.size for v in values))
    return {"runs": counts, "bytes": size}
