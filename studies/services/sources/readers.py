"""Streaming readers for the files sources publish: JSON Lines, JSON arrays (read one
element at a time), CSV/TSV, Parquet (in record batches), gzip and tar members; and
:func:`grouped`, which gathers rows that belong together (one output's annotators, spread
over a file in any order) through a temporary SQLite file, so memory stays bounded by the
largest group, not the file.

Every reader yields the place of what it yields (a line number, an array index, a row
index) so a converter can name it in a :class:`~.types.SourceError`.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sqlite3
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal

import pyarrow.parquet as pq

from studies.services.sources.types import Problem, SourceError

CHUNK = 1 << 20
_DECODER = json.JSONDecoder()


def fail(path: Path | str, where: str, field: str, message: str) -> SourceError:
    """A SourceError located in ``path`` (named by its file name)."""
    return SourceError(Problem(Path(path).name, where, field, message))


@contextmanager
def open_text(path: Path) -> Iterator[IO[str]]:
    """``path`` as UTF-8 text; ``.gz`` files are decompressed on the fly."""
    with path.open("rb") as raw:
        if path.suffix == ".gz":
            with gzip.GzipFile(fileobj=raw) as unpacked, _text(unpacked) as text:
                yield text
        else:
            with _text(raw) as text:
                yield text


def _text(raw: Any) -> io.TextIOWrapper:
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) per non-blank line of a JSON Lines file."""
    with open_text(path) as fh:
        try:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except ValueError as exc:
                    raise fail(path, f"line {number}", "", f"not valid JSON ({exc})") from None
        except UnicodeDecodeError as exc:
            raise fail(path, "", "", f"not valid UTF-8 ({exc.reason})") from None


def iter_json_array(path: Path) -> Iterator[tuple[str, int, Any]]:
    """(JSON path ``$[i]``, line, element) per element of a top-level JSON array, reading
    the file in chunks: one element in memory at a time, however large the file."""
    with open_text(path) as fh:
        buffer = fh.read(CHUNK)
        pos, line, index = 0, 1, 0
        eof = False

        def skip(chars: str) -> None:
            nonlocal pos, line, buffer, eof
            while True:
                while pos < len(buffer) and buffer[pos] in chars:
                    line += buffer[pos] == "\n"
                    pos += 1
                if pos < len(buffer) or eof:
                    return
                more = fh.read(CHUNK)
                eof = not more
                buffer, pos = buffer[pos:] + more, 0

        skip(" \t\r\n")
        if pos >= len(buffer) or buffer[pos] != "[":
            raise fail(path, "line 1", "", "expected a JSON array [...]")
        pos += 1
        while True:
            skip(" \t\r\n")
            if pos < len(buffer) and buffer[pos] == "]":
                return
            if index:
                if pos >= len(buffer) or buffer[pos] != ",":
                    raise fail(
                        path, f"line {line}", "", f"expected ',' or ']' after $[{index - 1}]"
                    )
                pos += 1
                skip(" \t\r\n")
            start_line = line
            while True:
                try:
                    value, end = _DECODER.raw_decode(buffer, pos)
                    # what follows an element is a separator; anything else (the rest of
                    # a number cut by the chunk) means it is not complete yet
                    if eof or (end < len(buffer) and buffer[end] in " \t\r\n,]"):
                        break
                except ValueError as exc:
                    if eof:
                        raise fail(
                            path, f"line {start_line}", f"$[{index}]", f"not valid JSON ({exc})"
                        ) from None
                more = fh.read(CHUNK)
                eof = not more
                buffer, pos = buffer[pos:] + more, 0
            line += buffer.count("\n", pos, end)
            pos = end
            yield f"$[{index}]", start_line, value
            index += 1
            if pos > CHUNK:  # keep the buffer from growing with the file
                buffer, pos = buffer[pos:], 0


def iter_json_items(path: Path, key: str | None = None) -> Iterator[tuple[str, Any]]:
    """(place, item) from a file that holds items as a JSON array, as JSON Lines, or as
    one object: a page of an API answer whose ``key`` holds the items, or else the item."""
    with open_text(path) as fh:
        head = fh.read(4096).lstrip()
    if head.startswith("["):
        for where, line, value in iter_json_array(path):
            yield f"{where} (line {line})", value
        return
    if key is not None and head.startswith("{"):
        first_line = head.split("\n", 1)[0]
        try:
            json.loads(first_line)
        except ValueError:  # a pretty-printed object spanning lines: one API page
            yield from _page_items(path, key)
            return
    for number, value in iter_jsonl(path):
        if key is not None and isinstance(value, dict) and isinstance(value.get(key), list):
            for i, item in enumerate(value[key]):  # one API page per line
                yield f"line {number}, {key}[{i}]", item
        else:
            yield f"line {number}", value


def _page_items(path: Path, key: str) -> Iterator[tuple[str, Any]]:
    with open_text(path) as fh:
        try:
            page = json.load(fh)
        except ValueError as exc:
            raise fail(path, "", "", f"not valid JSON ({exc})") from None
    items = page.get(key) if isinstance(page, dict) else None
    if not isinstance(items, list):
        yield "$", page  # one object of its own (a single trace's download, say)
        return
    for i, item in enumerate(items):
        yield f"$.{key}[{i}]", item


def iter_delimited(
    path: Path, delimiter: str = ",", quoting: Literal[0, 1, 2, 3] = csv.QUOTE_MINIMAL
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row as a dict) per data row of a CSV/TSV file with a header line.
    A row with more or fewer cells than the header is a located error."""
    csv.field_size_limit(max(csv.field_size_limit(), min(sys.maxsize, 1 << 30)))
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter, quoting=quoting)
        try:
            header = next(reader)
        except StopIteration:
            raise fail(path, "line 1", "", "the file is empty") from None
        header = [name.strip() for name in header]
        while header and (not header[-1] or header[-1].startswith("#")):
            header.pop()  # an empty name, or a comment such as WMT MQM's "# Documentation: ..."
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) < len(header) or any(cell for cell in row[len(header) :]):
                raise fail(
                    path,
                    f"line {reader.line_num}",
                    "",
                    f"expected {len(header)} cells like the header, got {len(row)}",
                )
            yield reader.line_num, dict(zip(header, row, strict=False))


def iter_parquet(
    path: Path, columns: list[str] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row index, row) per row of a Parquet file, read in record batches."""
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a file that is no Parquet
        raise fail(path, "", "", f"not a Parquet file ({exc})") from None
    names = set(parquet.schema_arrow.names)
    missing = [name for name in columns or () if name not in names]
    if missing:
        raise fail(path, "schema", missing[0], f"missing column (the file has {sorted(names)})")
    index = 0
    for batch in parquet.iter_batches(batch_size=512, columns=columns):
        for row in batch.to_pylist():
            yield index, row
            index += 1


@contextmanager
def tar_member(path: Path, suffix: str) -> Iterator[Path]:
    """The first member of tar archive ``path`` whose name ends with ``suffix``, unpacked
    to a temporary file (deleted afterwards)."""
    with tarfile.open(path, "r:*") as archive, tempfile.TemporaryDirectory() as tmp:
        for member in archive:
            if member.isfile() and member.name.endswith(suffix):
                source = archive.extractfile(member)
                if source is None:
                    break
                target = Path(tmp) / Path(member.name).name
                with source, target.open("wb") as out:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
                yield target
                return
        raise fail(path, "", "", f"the archive holds no file ending in {suffix!r}")


def grouped(rows: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, list[Any]]]:
    """Gather ``(key, value)`` pairs by key, in the order keys first appear, however the
    rows are spread over the input. Keys and values must be JSON-serialisable; they pass
    through a temporary SQLite file, so memory holds one group at a time."""
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "groups.sqlite3")
        try:
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")
            db.execute("CREATE TABLE rows (k TEXT, seq INTEGER PRIMARY KEY, v TEXT)")
            db.execute("CREATE TABLE keys (k TEXT PRIMARY KEY, first INTEGER)")
            batch: list[tuple[str, int, str]] = []
            for seq, (key, value) in enumerate(rows):
                batch.append((json.dumps(key), seq, json.dumps(value)))
                if len(batch) >= 5000:
                    _flush(db, batch)
            _flush(db, batch)
            cursor = db.execute(
                "SELECT rows.k, rows.v FROM rows JOIN keys ON keys.k = rows.k "
                "ORDER BY keys.first, rows.seq"
            )
            current: str | None = None
            values: list[Any] = []
            for key_text, value_text in cursor:
                if key_text != current:
                    if current is not None:
                        yield json.loads(current), values
                    current, values = key_text, []
                values.append(json.loads(value_text))
            if current is not None:
                yield json.loads(current), values
        finally:
            db.close()


def _flush(db: sqlite3.Connection, batch: list[tuple[str, int, str]]) -> None:
    db.executemany("INSERT INTO rows VALUES (?, ?, ?)", batch)
    db.executemany("INSERT OR IGNORE INTO keys VALUES (?, ?)", [(k, s) for k, s, _v in batch])
    batch.clear()


def find_file(root: Path, *names: str) -> Path:
    """``root`` itself when it is a file, else the first of ``names`` (paths relative to
    folder ``root``, or glob patterns such as ``**/train.jsonl.gz``) that exists; a located
    error naming what was sought otherwise."""
    found = find_files(root, *names)
    return found[0]


def find_files(root: Path, *names: str) -> list[Path]:
    """Like :func:`find_file`, but every match of the first name that matches anything."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise fail(root, "", "", "no such file or folder")
    for name in names:
        if any(char in name for char in "*?["):
            matches = sorted(p for p in root.glob(name) if p.is_file())
        else:
            matches = [root / name] if (root / name).is_file() else []
        if matches:
            return matches
    raise fail(root, "", "", f"none of {', '.join(names)} found in this folder")


def find_all(root: Path, *patterns: str) -> list[Path]:
    """``root`` itself when it is a file, else every file under folder ``root`` matching
    any of ``patterns`` (each once, in name order); a located error when there is none."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise fail(root, "", "", "no such file or folder")
    found = sorted({p for pattern in patterns for p in root.glob(pattern) if p.is_file()})
    if not found:
        raise fail(root, "", "", f"no {' or '.join(patterns)} files in this folder")
    return found
