"""What the tool adapters share: naming the fields of a task or record that hold
Concordia's document, system, source and output; inferring aspect kinds from the values
an export holds (tools rarely say); and metric names that the importer accepts."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from studies.services.sources.types import AspectSpec, Option

FIELD_OPTIONS = (
    Option("doc_field", str, "doc_id", "field holding the document id (default: the item's id)"),
    Option("system_field", str, "system_id", "field holding the system id"),
    Option(
        "source_field", str, "source", "field holding the input (also tried: prompt, input, text)"
    ),
    Option(
        "output_field", str, "output", "field holding the output (also tried: response, completion)"
    ),
    Option("default_system", str, "default", "system id where an item names none"),
)
SOURCE_FALLBACKS = ("prompt", "input", "instruction", "question", "text")
OUTPUT_FALLBACKS = ("response", "completion", "answer", "generation")
PAIR_FIELDS = ("output_a", "output_b")
KNOWN_FIELDS = frozenset(
    {
        "doc_id",
        "system_id",
        "source",
        "output",
        "references",
        "context",
        "system_a",
        "system_b",
        "output_a",
        "output_b",
    }
)
POSITIVE = ("yes", "pass", "true", "correct", "good", "1")
NEGATIVE = ("no", "fail", "false", "incorrect", "bad", "0")
_METRIC = re.compile(r"[^A-Za-z0-9_.:\-]+")
WINNER_WORDS = {"a": "a", "b": "b", "tie": "tie", "left": "a", "right": "b"}


def text(value: Any) -> str | None:
    """A field as text: strings as they are, JSON values (chat messages, dicts) as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def pick(data: Mapping[str, Any], name: str, fallbacks: tuple[str, ...] = ()) -> Any:
    for key in (name, *fallbacks):
        if key in data and data[key] is not None:
            return data[key]
    return None


def metric_name(*parts: str | None) -> str:
    """A metric name the importer accepts, from the parts that are given."""
    joined = ":".join(p for p in parts if p)
    cleaned = _METRIC.sub("_", joined).strip("_:.-") or "score"
    return cleaned[:64]


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass
class AspectScan:
    """Values seen per aspect, to declare each aspect's kind after a first pass."""

    numbers: dict[str, list[float]] = field(default_factory=dict)
    labels: dict[str, set[str]] = field(default_factory=dict)
    pairwise: set[str] = field(default_factory=set)
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)  # declared by the tool
    declared_labels: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def see(self, aspect: str, value: Any) -> None:
        if isinstance(value, str):
            self.labels.setdefault(aspect, set()).add(value)
        elif number(value) is not None:
            bounds = self.numbers.setdefault(aspect, [math.inf, -math.inf])
            bounds[0], bounds[1] = min(bounds[0], value), max(bounds[1], value)

    def specs(self, source: str) -> tuple[AspectSpec, ...]:
        specs: list[AspectSpec] = []
        definition = f"Imported from {source}; edit this definition."
        for name in sorted(set(self.numbers) | set(self.labels) | set(self.scales)):
            if name in self.labels or name in self.declared_labels:
                labels = self.declared_labels.get(name) or tuple(sorted(self.labels.get(name, ())))
                specs.append(_label_spec(name, labels, definition))
            else:
                low, high = self.scales.get(name) or tuple(self.numbers[name])
                if {low, high} <= {0.0, 1.0} and name not in self.scales:
                    specs.append(AspectSpec.binary(name, definition))
                    continue
                specs.append(
                    AspectSpec.scale(name, low, high if high > low else low + 1, definition)
                )
        for name in sorted(self.pairwise - {s.name for s in specs}):
            specs.append(
                AspectSpec.categorical(
                    name, ("a", "b", "tie"), f"Pairwise preference; {definition}"
                )
            )
        return tuple(specs)


def _label_spec(name: str, labels: tuple[str, ...], definition: str) -> AspectSpec:
    lowered = [label.lower() for label in labels]
    if len(labels) == 2:
        for positive in POSITIVE:
            if positive in lowered and any(neg in lowered for neg in NEGATIVE):
                chosen = labels[lowered.index(positive)]
                return AspectSpec.binary(name, definition, (labels[0], labels[1]), chosen)
    if len(labels) < 2:
        labels = (*labels, *(x for x in ("other",) if x not in labels))
    return AspectSpec.categorical(name, labels, definition)
