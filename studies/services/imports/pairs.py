"""Pairwise preference files: one annotator's preference between two outputs of one
document on one aspect per line (the ``*_pairs.jsonl`` layout of shared/data)::

    {"doc_id": "...", "source": "...", "system_a": "...", "output_a": "...",
     "system_b": "...", "output_b": "...", "aspect": "overall", "annotator": "...",
     "winner": "a" | "b" | "tie"}

CSV: the same columns (and ``reference``/``reference_N``, ``context``). Optional:
``references`` and ``context`` (a line without them leaves a stored document's own as
they are), ``annotator`` (without it the file is one annotator). Other keys with a plain
value (LLMBar's ``subset``, PandaLM's ``motivation_app``) are left out and named in the
summary. An output may be empty (a model's empty response, judged by the annotator).

A file is read as pairs when its first line (a CSV: its header) has a ``winner``. Each
side of a pair is an output, created or matched by ``(doc_id, system)`` like any
output; a side without a system id (absent or empty) gets one derived from its text,
``text-`` and the first 16 hex digits of the SHA-256 of the text (NFC), the same on
every import of the same text. Ids the source gives are kept as they are (LLMBar's
``output_1``/``output_2`` name the first and the second response of each item, not
systems). A pair whose two sides are one output (one system id, or one derived id from
one text) is an error, as is a ``winner`` other than a, b or tie.
"""

from __future__ import annotations

import csv
import hashlib
import unicodedata
from dataclasses import dataclass
from typing import IO, Any

from studies.models import ImportedPreference
from studies.services.csvfile import restore_cell
from studies.services.imports.errors import LineError, RecordError
from studies.services.imports.jsontext import check_structure, parse_json
from studies.services.imports.labels import extra_keys, rater_id
from studies.services.imports.records import (
    KEY,
    REFERENCE_COLUMN,
    Layout,
    Record,
    normal_id,
    read_lines,
)

WINNERS = tuple(ImportedPreference.Winner.values)  # a, b, tie
PAIR_FIELDS = {
    "doc_id",
    "source",
    "references",
    "context",
    "system_a",
    "output_a",
    "system_b",
    "output_b",
    "aspect",
    "annotator",
    "winner",
}
_TEXTS = ("doc_id", "source", "output_a", "output_b", "aspect", "winner")  # required
_COLUMNS = ("doc_id", "source", "system_a", "output_a", "system_b", "output_b", "aspect")
_COLUMNS += ("annotator", "winner", "context")


@dataclass(frozen=True)
class PairRecord:
    """One line of a pairs file: the two outputs as :class:`Record` s (no scores; their
    ``references`` None when the line gives none), the aspect's name, the rater ("" for
    none) and the winner."""

    line: int
    a: Record
    b: Record
    aspect: str
    rater: str
    winner: str
    ignored: tuple[str, ...] = ()

    @property
    def doc_id(self) -> str:
        return self.a.doc_id


def derived_system_id(text: str) -> str:
    """The system id of an output given without one: from its text, stable."""
    digest = hashlib.sha256(unicodedata.normalize("NFC", text).encode("utf-8")).hexdigest()
    return f"text-{digest[:16]}"


def is_pairs_file(stream: IO[bytes], file_format: str, max_line_bytes: int) -> bool:
    """Whether the file's first line (a CSV's header) has a ``winner``; the stream is
    put back where it was."""
    start = stream.tell()
    try:
        for _number, text in read_lines(stream, max_line_bytes):
            if isinstance(text, LineError) or not text.strip():
                if isinstance(text, LineError):
                    return False
                continue
            if file_format == "csv":
                header = next(csv.reader([text]), [])
                return "winner" in {normal_id(cell) for cell in header}
            first = parse_json(0, "", text)  # bad JSON: read as records, to say where
            return (
                not isinstance(first, RecordError)
                and isinstance(first[0], dict)
                and ("winner" in first[0])
            )
        return False
    finally:
        stream.seek(start)


def _pair_from_mapping(number: int, obj: Any, *, suspect: bool) -> PairRecord | RecordError:
    if not isinstance(obj, dict):
        return RecordError([LineError(number, "", "expected a JSON object {...}")])
    errors = check_structure(number, obj) if suspect else []
    if errors:
        return RecordError(errors)
    ignored, problems = extra_keys(obj, PAIR_FIELDS)
    errors = [LineError(number, where, message) for where, message in problems]
    texts: dict[str, str] = {}
    for name in (*_TEXTS, "system_a", "system_b"):
        value = obj.get(name)
        if value is None or (name.startswith("system_") and value == ""):
            if name in _TEXTS:
                errors.append(LineError(number, name, "missing required field"))
            continue
        if not isinstance(value, str):
            hint = "; write ids in quotes" if isinstance(value, int | float) else ""
            got = type(value).__name__
            errors.append(LineError(number, name, f"expected a string, got {got}{hint}"))
        elif name not in ("source", "output_a", "output_b") and not value.strip():
            errors.append(LineError(number, name, "must not be empty"))
        else:
            texts[name] = value
    spelled: dict[str, tuple[str, str, str]] = {}  # field -> (where, as written, as read)
    for name in ("doc_id", "system_a", "system_b", "aspect"):
        if name in texts:
            read = normal_id(texts[name])
            if read != texts[name] and name != "aspect":
                where = "doc_id" if name == "doc_id" else "system_id"
                spelled[name] = (where, texts[name], read)
            texts[name] = read
            longest = 100 if name == "aspect" else 255
            if len(read) > longest or (name == "aspect" and not KEY.match(read)):
                errors.append(LineError(number, name, _bad_name(name, longest)))
    rater = ""
    if obj.get("annotator") is not None:
        found, problem = rater_id(obj["annotator"])
        if found is None:
            errors.append(LineError(number, "annotator", problem))
        rater = found or ""
    winner = texts.get("winner", "").strip().lower()
    if "winner" in texts and winner not in WINNERS:
        shown = texts["winner"]
        errors.append(LineError(number, "winner", f"{shown!r} is not one of a, b, tie"))
    references = obj.get("references")
    if references is not None and (
        not isinstance(references, list) or not all(isinstance(r, str) for r in references)
    ):
        errors.append(LineError(number, "references", "expected a list of strings"))
    if errors:
        return RecordError(errors)
    sides = []
    for side in ("a", "b"):
        text = texts[f"output_{side}"]
        system = texts.get(f"system_{side}") or derived_system_id(text)
        sides.append(
            Record(
                line=number,
                doc_id=texts["doc_id"],
                system_id=system,
                source=texts["source"],
                references=None if references is None else tuple(references),  # type: ignore[arg-type]
                output=text,
                context=obj.get("context"),
                spelled=tuple(v for k, v in spelled.items() if k in ("doc_id", f"system_{side}")),
            )
        )
    a, b = sides
    if a.system_id == b.system_id:
        where = "system_b" if "system_b" in texts else "output_b"
        why = (
            f"names the same output as system_a ({a.system_id!r})"
            if "system_b" in texts
            else "is the same text as output_a: the pair names one output twice"
        )
        return RecordError([LineError(number, where, why)])
    return PairRecord(number, a, b, texts["aspect"], rater, winner, ignored)


def _bad_name(name: str, longest: int) -> str:
    if name == "aspect":
        return f"an aspect's name must be letters, digits, _ . : - (at most {longest})"
    return f"longer than {longest} characters"


def _pair_columns(header: list[str], _max_metrics: int | None) -> dict[str, Any] | RecordError:
    names = [normal_id(h) for h in header]
    index: dict[str, int] = {}
    references: list[tuple[int, int]] = []
    errors = []
    for position, name in enumerate(names):
        ref = REFERENCE_COLUMN.match(name)
        if name in index or (ref and any(p == position for _n, p in references)):
            errors.append(LineError(1, name, f"duplicate column: {name!r} appears twice"))
        elif ref:
            references.append((int(ref.group(1) or 0), position))
        elif name in _COLUMNS:
            index[name] = position
    for required in _TEXTS:
        if required not in index:
            errors.append(LineError(1, required, "missing required column"))
    if errors:
        return RecordError(errors)
    extra = tuple(n for k, n in enumerate(names) if k not in index.values() and n)
    extra = tuple(n for n in extra if not REFERENCE_COLUMN.match(n))
    return {"index": index, "references": [p for _n, p in sorted(references)], "extra": extra}


def _pair_from_row(
    number: int, row: list[str], header: list[str], cols: dict[str, Any]
) -> PairRecord | RecordError:
    if len(row) != len(header):
        return RecordError(
            [LineError(number, "", f"expected {len(header)} cells, found {len(row)}")]
        )
    row = [restore_cell(cell) for cell in row]
    obj: dict[str, Any] = {
        name: row[p] for name, p in cols["index"].items() if name != "context" and row[p] != ""
    }
    obj.update(dict.fromkeys(cols["extra"]))  # named in the summary, as a JSONL line's
    if cols["references"]:
        obj["references"] = [row[p] for p in cols["references"] if row[p] != ""]
    suspect = any("\x00" in cell for cell in row)
    context_at = cols["index"].get("context")
    if context_at is not None and row[context_at].strip():
        context = parse_json(number, "context", row[context_at])
        if isinstance(context, RecordError):
            return context
        obj["context"], suspect = context[0], suspect or context[1]
    return _pair_from_mapping(number, obj, suspect=suspect)


PAIRS = Layout(_pair_from_mapping, _pair_columns, _pair_from_row)
