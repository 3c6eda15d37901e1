"""Reading dataset files (JSONL and CSV) into validated records, streaming.

A file is read line by line from a binary stream, so memory stays bounded by one line
(and by the keys the validator remembers). Every problem is reported as a
:class:`LineError` naming the line and the field; callers collect them and write
nothing when there is any.

JSONL, one output per line (see shared/data/README.md)::

    {"doc_id": "...", "system_id": "...", "source": "...", "references": ["..."],
     "output": "...", "human": {"coherence": 4.0, "consistency": "pass"},
     "annotators": {"consistency": {"ann1": "fail", "ann2": "pass"}},
     "metrics": {"rouge1": 0.41}, "context": ...}

CSV: ``doc_id, system_id, source, reference`` (or ``reference_1..n``), ``output``,
``human_<aspect>...``, ``human_<aspect>@<rater>...``, ``metric_<name>...``, optional
``context`` (JSON text). Human values and extra keys: :mod:`.labels`. Pairwise
preference files have their own layout (:mod:`.pairs`).
"""

from __future__ import annotations

import csv
import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from studies.services.csvfile import restore_cell
from studies.services.imports.errors import LineError, RecordError
from studies.services.imports.jsontext import check_structure, parse_json
from studies.services.imports.labels import (
    Value,
    extra_keys,
    rater_id,
    read_annotators,
    read_number,
    read_value,
)

FORMATS = ("jsonl", "csv")
JSONL_FIELDS = {
    "doc_id",
    "system_id",
    "source",
    "references",
    "output",
    "human",
    "annotators",
    "metrics",
    "context",
}
REQUIRED_FIELDS = ("doc_id", "system_id", "source", "output")
MAX_METRIC_NAME = 64  # MetricRun.metric
REFERENCE_COLUMN = re.compile(r"^reference(?:_(\d+))?$")
KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")


@dataclass(frozen=True)
class Record:
    """One output of one system for one document, with its human and metric scores."""

    line: int
    doc_id: str
    system_id: str
    source: str
    references: tuple[str, ...]
    output: str
    human: dict[str, Value] = field(default_factory=dict)  # a number, or a label
    metrics: dict[str, float] = field(default_factory=dict)
    context: Any = None
    # ids and score names written otherwise than they are read: (where, as written, as
    # read), where is doc_id, system_id, human or metrics (imports/ids.py)
    spelled: tuple[tuple[str, str, str], ...] = ()
    # per aspect name, each rater's value ("annotators" of a line; CSV @ columns)
    annotators: dict[str, dict[str, Value]] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()  # keys of the line left out (plain extra values)


def normal_id(text: str) -> str:
    """What an id or a score name written as ``text`` is read as: Unicode NFC, without
    the white space around it (see :mod:`studies.services.imports.ids`)."""
    return unicodedata.normalize("NFC", text).strip()


def detect_format(file_name: str) -> str:
    """``jsonl`` or ``csv`` from a file name, or ValueError naming the accepted endings."""
    lower = file_name.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lower.endswith(".csv"):
        return "csv"
    raise ValueError(f"Cannot tell the format of {file_name!r}: use a .jsonl or .csv file.")


@dataclass(frozen=True)
class Layout:
    """What a file's lines are: how a decoded JSONL line, and a CSV header and row, become
    items (records here; :mod:`.pairs` has pairwise preferences)."""

    from_mapping: Callable[..., Any]  # (line, object, suspect=) -> item or RecordError
    csv_columns: Callable[[list[str], int | None], Any]  # (header, max_metrics) -> columns
    from_row: Callable[[int, list[str], list[str], Any], Any]  # (line, row, header, columns)


def read_records(
    stream: IO[bytes],
    file_format: str,
    *,
    max_line_bytes: int,
    max_metrics: int | None = None,
    layout: Layout | None = None,
) -> Iterator[Any]:
    """Yield a record (an item of ``layout``), or a :class:`RecordError`, per data line.

    File-level problems (empty file, bad CSV header) are yielded as a RecordError too, and
    so is the metric name that takes a file past ``max_metrics`` names (None: no cap).
    """
    layout = layout or RECORDS
    if file_format == "jsonl":
        yield from _read_jsonl(stream, max_line_bytes, max_metrics, layout)
    elif file_format == "csv":
        yield from _read_csv(stream, max_line_bytes, max_metrics, layout)
    else:
        raise ValueError(f"Unknown format {file_format!r}; expected one of {FORMATS}.")


def too_many_metrics(limit: int, found: str) -> str:
    """The message for a file past the cap on metric names (``found``: what it holds)."""
    return (
        f"the file {found}; one import takes at most {limit} metrics (IMPORT_MAX_METRICS), "
        "each becoming a metric run: split the file"
    )


# --- lines --------------------------------------------------------------------------------


def read_lines(stream: IO[bytes], max_line_bytes: int) -> Iterator[tuple[int, str | LineError]]:
    """Yield (line number, decoded text or error) with a hard limit on a line's length."""
    number = 0
    while True:
        raw = stream.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the oversized line
                raw = stream.readline(1 << 20)
            yield number, LineError(number, "", f"line is longer than {max_line_bytes} bytes")
            continue
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield (
                number,
                LineError(
                    number,
                    "",
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                    "save the file as UTF-8",
                ),
            )


# --- JSONL --------------------------------------------------------------------------------


def _read_jsonl(
    stream: IO[bytes], max_line_bytes: int, max_metrics: int | None, layout: Layout
) -> Iterator[Any]:
    seen_any = False
    metrics: set[str] = set()  # the names seen so far, up to the cap
    capped = False
    for number, text in read_lines(stream, max_line_bytes):
        if isinstance(text, LineError):
            seen_any = True
            yield RecordError([text])
            continue
        if not text.strip():
            continue
        seen_any = True
        parsed = parse_json(number, "", text)
        if isinstance(parsed, RecordError):
            yield parsed
            continue
        item = layout.from_mapping(number, parsed[0], suspect=parsed[1])
        if isinstance(item, Record) and max_metrics is not None and not capped:
            new = [name for name in item.metrics if name not in metrics]
            if len(metrics) + len(new) > max_metrics:  # reported once, at the name past it
                capped = True
                name = new[max_metrics - len(metrics)]
                found = f"names more than {max_metrics} metrics"
                item = RecordError(
                    [LineError(number, f"metrics.{name}", too_many_metrics(max_metrics, found))]
                )
            metrics.update(new)
        yield item
    if not seen_any:
        yield RecordError([LineError(0, "", "the file is empty: no records found")])


def _record_from_mapping(number: int, obj: Any, *, suspect: bool) -> Record | RecordError:
    if not isinstance(obj, dict):
        return RecordError([LineError(number, "", "expected a JSON object {...}")])
    errors = check_structure(number, obj) if suspect else []
    if errors:
        return RecordError(errors)
    ignored, problems = extra_keys(obj, JSONL_FIELDS)
    values: dict[str, str] = {}
    for name in REQUIRED_FIELDS:
        if name not in obj or obj[name] is None:
            errors.append(LineError(number, name, "missing required field"))
            continue
        value = obj[name]
        if (
            name in ("doc_id", "system_id")
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            # ids are text, as in CSV: 1, 1.0 and 1e0 would otherwise be one id or three
            errors.append(
                LineError(
                    number,
                    name,
                    f"expected text, got the number {json.dumps(value)}; "
                    f'write ids in quotes ("{json.dumps(value)}")',
                )
            )
            continue
        if not isinstance(value, str):
            errors.append(LineError(number, name, f"expected a string, got {type(value).__name__}"))
            continue
        if name in ("doc_id", "system_id", "output") and not value.strip():
            errors.append(LineError(number, name, "must not be empty"))
            continue
        values[name] = value
    spelled: list[tuple[str, str, str]] = []
    for name in ("doc_id", "system_id"):
        if name not in values:
            continue
        read = normal_id(values[name])
        if read != values[name]:
            spelled.append((name, values[name], read))
            values[name] = read
        if len(read) > 255:
            errors.append(LineError(number, name, "longer than 255 characters"))
    references = obj.get("references", [])
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        errors.append(LineError(number, "references", "expected a list of strings"))
        references = []
    human = _scores(number, "human", obj.get("human", {}), errors, spelled)
    metrics = _scores(number, "metrics", obj.get("metrics", {}), errors, spelled)
    annotators, found = read_annotators(obj["annotators"]) if "annotators" in obj else ({}, [])
    if problems or found:
        errors += [LineError(number, where, message) for where, message in problems + found]
    if errors:
        return RecordError(errors)
    return Record(
        line=number,
        doc_id=values["doc_id"],
        system_id=values["system_id"],
        source=values["source"],
        references=tuple(references),
        output=values["output"],
        human=human,
        metrics=metrics,
        context=obj.get("context"),
        spelled=tuple(spelled),
        annotators=annotators,
        ignored=ignored,
    )


def _scores(
    number: int, group: str, raw: Any, errors: list[LineError], spelled: list[tuple[str, str, str]]
) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        errors.append(LineError(number, group, "expected an object of name: number"))
        return {}
    scores: dict[str, Any] = {}
    written: dict[str, str] = {}  # name as read -> as written
    read_one = read_number if group == "metrics" else read_value
    for written_name, value in raw.items():
        name = _score_name(group, written_name)
        if name is None:
            longest = MAX_METRIC_NAME if group == "metrics" else 100
            errors.append(
                LineError(
                    number,
                    f"{group}.{written_name}",
                    f"name must be letters, digits, _ . : - (at most {longest})",
                )
            )
            continue
        if name in written:  # one value would silently replace the other
            errors.append(
                LineError(
                    number,
                    f"{group}.{written_name}",
                    f"names the same score as {written[name]!r}; keep one",
                )
            )
            continue
        written[name] = written_name
        if name != written_name:
            spelled.append((group, written_name, name))
        if value is None:
            continue  # a missing score
        read = read_one(value)
        if read is None:
            wanted = "a number" if group == "metrics" else "a number or a label"
            where = f"{group}.{written_name}"
            errors.append(LineError(number, where, f"expected {wanted}, got {value!r}"))
            continue
        scores[name] = read
    return scores


@functools.lru_cache(maxsize=4096)
def _score_name(group: str, written: str) -> str | None:
    """A score name as read, or None when invalid: checked once per name, not per line."""
    name = normal_id(written)
    return (
        name
        if KEY.match(name) and len(name) <= (MAX_METRIC_NAME if group == "metrics" else 100)
        else None
    )


# --- CSV ----------------------------------------------------------------------------------


@dataclass
class _CsvColumns:
    index: dict[str, int]
    references: list[int]
    human: dict[str, int]
    metrics: dict[str, int]
    raters: dict[tuple[str, str], int] = field(default_factory=dict)  # (aspect, rater)


def _read_csv(
    stream: IO[bytes], max_line_bytes: int, max_metrics: int | None, layout: Layout
) -> Iterator[Any]:
    problems: list[LineError] = []

    def text_lines() -> Iterator[str]:
        for _number, text in read_lines(stream, max_line_bytes):
            if isinstance(text, LineError):
                problems.append(text)
                return  # a CSV cannot be resynchronised after a broken line
            yield text

    csv.field_size_limit(max_line_bytes)
    reader = csv.reader(text_lines())
    try:
        header = next(reader, None)
    except csv.Error as exc:
        yield RecordError([LineError(1, "", f"malformed CSV header ({exc})")])
        return
    if problems:
        yield RecordError(problems)
        return
    if header is None:
        yield RecordError([LineError(0, "", "the file is empty: no header and no records")])
        return
    columns = layout.csv_columns(header, max_metrics)
    if isinstance(columns, RecordError):
        yield columns
        return
    seen_any = False
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            yield RecordError([LineError(reader.line_num, "", f"malformed CSV ({exc})")])
            return
        if not any(cell.strip() for cell in row):
            continue
        seen_any = True
        yield layout.from_row(reader.line_num, row, header, columns)
    if problems:
        yield RecordError(problems)
    elif not seen_any:
        yield RecordError([LineError(0, "", "the file is empty: a header but no records")])


def _csv_columns(header: list[str], max_metrics: int | None) -> _CsvColumns | RecordError:
    names = [normal_id(h) for h in header]
    errors: list[LineError] = []
    index: dict[str, int] = {}
    references: list[tuple[int, int]] = []
    human: dict[str, int] = {}
    metrics: dict[str, int] = {}
    raters: dict[tuple[str, str], int] = {}
    seen: dict[str, int] = {}  # a column's identity -> its position
    spelling: dict[str, str] = {}  # an aspect's name (lower case) -> as its first column has it
    for position, name in enumerate(names):
        first = seen.setdefault(_column_identity(name), position) if name else position
        if first != position:  # one value would silently replace the other
            errors.append(
                LineError(1, name, _duplicate_column(names[first], first, name, position))
            )
            continue
        ref = REFERENCE_COLUMN.match(name)
        if ref:
            references.append((int(ref.group(1) or 0), position))
        elif name.startswith("human_") and "@" in name:
            aspect, _, written = name[6:].partition("@")
            rater, problem = rater_id(written)
            if rater is None or not aspect:
                errors.append(LineError(1, name, problem or "write human_<aspect>@<rater>"))
            else:
                raters[(spelling.setdefault(aspect.lower(), aspect), rater)] = position
        elif name.startswith("human_") and len(name) > 6:
            human[spelling.setdefault(name[6:].lower(), name[6:])] = position
        elif name.startswith("metric_") and len(name) > 7:
            metrics[name[7:]] = position
        elif name in ("doc_id", "system_id", "source", "output", "context"):
            index[name] = position
        else:
            errors.append(
                LineError(
                    1,
                    name,
                    "unknown column (expected doc_id, system_id, source, reference or "
                    "reference_N, output, human_<aspect>, human_<aspect>@<rater>, "
                    "metric_<name>, context)",
                )
            )
    for required in REQUIRED_FIELDS:
        if required not in index:
            errors.append(LineError(1, required, "missing required column"))
    if max_metrics is not None and len(metrics) > max_metrics:  # located at the first past it
        name = list(metrics)[max_metrics]
        message = too_many_metrics(max_metrics, f"has {len(metrics)} metric columns")
        errors.append(LineError(1, f"metric_{name}", message))
    if errors:
        return RecordError(errors)
    return _CsvColumns(index, [p for _n, p in sorted(references)], human, metrics, raters)


def _column_identity(name: str) -> str:
    """What a header cell names: human score names match aspects case-insensitively (as
    the import matches them; a rater's name after ``@`` exactly), every other column
    exactly."""
    if not name.startswith("human_"):
        return name
    aspect, at, rater = name.partition("@")
    return aspect.lower() + at + rater


def _duplicate_column(first: str, first_at: int, name: str, position: int) -> str:
    where = f"columns {first_at + 1} and {position + 1}"
    if first == name:
        return f"duplicate column: {name!r} appears twice ({where}); keep one"
    return f"duplicate column: {first!r} and {name!r} ({where}) name the same scores; keep one"


def _record_from_row(
    number: int, row: list[str], header: list[str], cols: _CsvColumns
) -> Record | RecordError:
    if len(row) != len(header):
        return RecordError(
            [LineError(number, "", f"expected {len(header)} cells, found {len(row)}")]
        )
    row = [restore_cell(cell) for cell in row]
    obj: dict[str, Any] = {name: row[pos] for name, pos in cols.index.items() if name != "context"}
    obj["references"] = [row[p] for p in cols.references if row[p] != ""]
    obj["human"] = {name: (row[p] if row[p].strip() else None) for name, p in cols.human.items()}
    obj["metrics"] = {
        name: (row[p] if row[p].strip() else None) for name, p in cols.metrics.items()
    }
    if cols.raters:
        given: dict[str, dict[str, str | None]] = {}
        for (aspect, rater), p in cols.raters.items():
            given.setdefault(aspect, {})[rater] = row[p] if row[p].strip() else None
        obj["annotators"] = given
    # a CSV cell may hold a raw NUL; the context cell, anything a JSONL line may hold
    suspect = any("\x00" in cell for cell in row)
    if "context" in cols.index and row[cols.index["context"]].strip():
        context = parse_json(number, "context", row[cols.index["context"]])
        if isinstance(context, RecordError):
            return context
        obj["context"], suspect = context[0], suspect or context[1]
    return _record_from_mapping(number, obj, suspect=suspect)


RECORDS = Layout(_record_from_mapping, _csv_columns, _record_from_row)
