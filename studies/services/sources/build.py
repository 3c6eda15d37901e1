"""Building records and pairs in Concordia's import layout (see :mod:`.types`), and the
one rule for what ``human`` holds when a source gives each annotator's value: the mean for
scale aspects, the majority label for binary and categorical ones (none on a tie), as in
``shared/data``'s per-annotator files."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from studies.services.sources.types import AspectSpec, Label, Row

WINNERS = ("a", "b", "tie")
MAX_ID = 255  # Document.doc_id, Output.system_id


def summarize(spec: AspectSpec, values: Mapping[str, Any]) -> Any:
    """The value ``human`` holds for ``spec`` given each annotator's value (None: none)."""
    present = [v for v in values.values() if v is not None]
    if not present:
        return None
    if spec.kind == "scale":
        return sum(float(v) for v in present) / len(present)  # as shared/data computed it
    counts = Counter(present).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None  # annotators tie: no majority label
    return counts[0][0]


def human_from(
    aspects: Mapping[str, AspectSpec], annotators: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """``human`` for a record from its ``annotators``, aspect by aspect."""
    human: dict[str, Any] = {}
    for name, values in annotators.items():
        value = summarize(aspects[name], values)
        if value is not None:
            human[name] = value
    return human


def record(
    doc_id: str,
    system_id: str,
    source: str,
    output: str,
    *,
    references: list[str] | tuple[str, ...] = (),
    human: Mapping[str, Any] | None = None,
    annotators: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Mapping[str, float] | None = None,
    context: Mapping[str, Any] | None = None,
) -> Row:
    """One output as an import line; empty groups are left out."""
    row: Row = {
        "doc_id": doc_id,
        "system_id": system_id,
        "source": source,
        "references": list(references),
        "output": output,
    }
    if human:
        row["human"] = dict(human)
    if annotators:
        row["annotators"] = {name: dict(values) for name, values in annotators.items() if values}
    if metrics:
        row["metrics"] = dict(metrics)
    if context:
        row["context"] = dict(context)
    return row


def pair(
    doc_id: str,
    source: str,
    system_a: str,
    output_a: str,
    system_b: str,
    output_b: str,
    *,
    aspect: str,
    annotator: str,
    winner: str,
    extra: Mapping[str, Any] | None = None,
) -> Row:
    """One pairwise judgment as a ``*_pairs.jsonl`` line."""
    if winner not in WINNERS:
        raise ValueError(f"winner must be one of {WINNERS}, got {winner!r}")
    row: Row = {
        "doc_id": doc_id,
        "source": source,
        "system_a": system_a,
        "output_a": output_a,
        "system_b": system_b,
        "output_b": output_b,
        "aspect": aspect,
        "annotator": annotator,
        "winner": winner,
    }
    if extra:
        row.update(extra)
    return row


def in_order(row: Row) -> Row:
    """``row`` with its two systems in name order (the winner follows its system), so that
    judgments of one system pair shown in either order make one item."""
    if row["system_a"] <= row["system_b"]:
        return row
    swapped = dict(row)
    swapped["system_a"], swapped["system_b"] = row["system_b"], row["system_a"]
    swapped["output_a"], swapped["output_b"] = row["output_b"], row["output_a"]
    swapped["winner"] = {"a": "b", "b": "a", "tie": "tie"}[row["winner"]]
    return swapped


def digest(text: str, length: int = 12) -> str:
    """A short stable id for a text (a prompt without an id of its own)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:length]


def short_id(value: str) -> str:
    """``value`` if it fits an id column, else a prefix plus its digest."""
    return value if len(value) <= MAX_ID else f"{value[: MAX_ID - 14]}~{digest(value)}"


def as_label(value: Any, labels: tuple[Label, ...]) -> Label | None:
    """``value`` as one of ``labels`` (a 0/1 label also matches 0.0, "1" and True), else None."""
    for label in labels:
        if isinstance(label, int):
            if isinstance(value, bool | int | float) and float(value) == label:
                return label
            if isinstance(value, str) and value.strip() == str(label):
                return label
        elif value == label:
            return label
    return None


def natural(key: str) -> tuple[Any, ...]:
    """Sort key putting ``rater2`` before ``rater10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key))
