"""The files of ``../shared/data`` as today's importer takes them, subsampled for tests.

Likert files (one line per output, ``human`` holding the annotators' means): a record
keeps ``doc_id``, ``system_id``, ``source``, ``output``, the document's references (the
first line's: in simpeval2022 and xsumfaith each output's references are the *other*
outputs, which the importer refuses as a document with differing references) and the
numeric ``human`` values (binary 0/1 ones included; categorical labels and the
per-annotator ``annotators`` field are left out: the importer takes neither yet).
Pairwise files (``*_pairs.jsonl``, one line per judgment) give each pair's two outputs
as records without human scores, and the judgments as answers (see
:func:`pairwise_answers`); a pair with an empty output (a few of PandaLM's) is left
out, as the importer refuses empty outputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import SHARED_DATA


@dataclass(frozen=True)
class SharedFile:
    """How one file imports: its task, and the import options it needs."""

    task: str
    options: list[str] = field(default_factory=list)


LIKERT_FILES = {
    # data-to-text files score 1–6 against aspects defined on 1–5, and use 'quality',
    # which is no default aspect
    "summeval": SharedFile("summarization"),
    "newsroom": SharedFile("summarization"),
    "realsumm": SharedFile("summarization", ["--create-aspects"]),
    "bagel": SharedFile("data_to_text", ["--create-aspects", "--widen-aspects"]),
    "sfhot": SharedFile("data_to_text", ["--create-aspects", "--widen-aspects"]),
    "sfres": SharedFile(
        "data_to_text",
        ["--create-aspects", "--rescale", "informativeness=1:6", "--rescale", "naturalness=1:6"],
    ),
    "simpeval2022": SharedFile("custom", ["--create-aspects"]),
    "xsumfaith": SharedFile("summarization", ["--create-aspects"]),
    "wmt23_mqm_ende": SharedFile("machine_translation", ["--create-aspects", "--widen-aspects"]),
}
PAIRWISE_FILES = ("pandalm_pairs", "llmbar_pairs")


def shared_lines(name: str, max_documents: int | None = None) -> Iterator[dict[str, Any]]:
    """The file's lines as dicts; with ``max_documents``, only those of its first
    documents (in the file's order)."""
    seen: set[str] = set()
    with (SHARED_DATA / f"{name}.jsonl").open(encoding="utf-8") as stream:
        for line in stream:
            if not line.strip():
                continue
            found = json.loads(line)
            if any(not str(found.get(k, "x")).strip() for k in ("output", "output_a", "output_b")):
                continue  # the importer refuses an empty output
            doc = str(found["doc_id"])
            if max_documents is not None and doc not in seen and len(seen) >= max_documents:
                continue
            seen.add(doc)
            yield found


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def likert_records(name: str, max_documents: int | None = None) -> list[dict[str, Any]]:
    """The file's outputs as import records (see the module's docstring)."""
    references: dict[str, list[str]] = {}
    records = []
    for line in shared_lines(name, max_documents):
        doc = str(line["doc_id"])
        records.append(
            {
                "doc_id": doc,
                "system_id": str(line["system_id"]),
                "source": line["source"],
                "references": references.setdefault(doc, list(line.get("references") or [])),
                "output": line["output"],
                "human": {k: v for k, v in line["human"].items() if _number(v)},
            }
        )
    return records


def pair_records(name: str, max_documents: int | None = None) -> list[dict[str, Any]]:
    """A pairwise file's outputs (each pair's two) as import records, without human
    scores."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for line in shared_lines(name, max_documents):
        for side in ("a", "b"):
            key = (str(line["doc_id"]), str(line[f"system_{side}"]))
            found.setdefault(
                key,
                {
                    "doc_id": key[0],
                    "system_id": key[1],
                    "source": line["source"],
                    "references": [],
                    "output": line[f"output_{side}"],
                },
            )
    return list(found.values())


def pairwise_answers(name: str, max_documents: int | None = None) -> list[dict[str, str]]:
    """A pairwise file's judgments: doc, system a, system b, annotator, winner."""
    return [
        {
            "doc": str(line["doc_id"]),
            "a": str(line["system_a"]),
            "b": str(line["system_b"]),
            "annotator": str(line["annotator"]),
            "winner": str(line["winner"]),
        }
        for line in shared_lines(name, max_documents)
    ]


def write_records(path: Path, records: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as stream:
        for found in records:
            stream.write(json.dumps(found) + "\n")
    return path
