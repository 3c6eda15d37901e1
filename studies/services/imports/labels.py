"""Human values against their aspect's kind during an import: numbers for a scale
aspect, labels for a binary or categorical one; the kind, and the labels, of the aspect
an import creates for a name it does not know; and the rater ids of per-annotator data.

A label judgment stores the label's position in the aspect's ``labels`` (0, 1, ...), so
every numeric pipeline reads it unchanged. A file writes a label as text (``"fail"``) or,
for labels that are whole numbers (``0``/``1``), as the number; both are read by
:func:`studies.models.label_text`.

What an import creates (``--create-aspects``), from every value the file gives a name:
numbers that are all 0 or 1 make a binary aspect (labels ``0``, ``1``, positive ``1``);
other numbers, a scale aspect (:mod:`.scales`); texts with two distinct values, a binary
aspect (the positive label the known one of a pair such as fail/pass, yes/no,
inconsistent/consistent, else the second in sorted order); more, a categorical aspect
with the labels sorted, unordered. A name given both numbers and texts is an error.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from studies.models import Aspect, label_text
from studies.models.aspects import MAX_LABEL_LENGTH, MAX_LABELS
from studies.models.datasets import MAX_RATER_LENGTH

# (negative, positive) of the binary label pairs an import recognises
KNOWN_PAIRS = (
    ("0", "1"),
    ("fail", "pass"),
    ("no", "yes"),
    ("false", "true"),
    ("inconsistent", "consistent"),
    ("unfaithful", "faithful"),
    ("incorrect", "correct"),
    ("bad", "good"),
    ("negative", "positive"),
    ("reject", "accept"),
    ("unacceptable", "acceptable"),
)
Value = float | str  # a human value as read: a number, or a label's text
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")  # a score's name (records.py's rule)


def read_number(value: Any) -> float | None:
    """A metric score as a file gives it: a finite number (also from text), else None."""
    if value.__class__ is float:  # the common case first
        return value if math.isfinite(value) else None
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            result = float(value)
        elif isinstance(value, str):
            result = float(value.strip())
        else:
            return None
    except (ValueError, OverflowError):  # OverflowError: an integer beyond a float's range
        return None
    return result if math.isfinite(result) else None


def read_value(value: Any) -> Value | None:
    """A human value as a file gives it: a finite number (also from text such as
    ``"3.5"``), else a label's text; None when it is neither (a boolean, a list, an
    object, an infinite number, empty text)."""
    if value.__class__ is float:  # the common case first
        return value if math.isfinite(value) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond a float's range
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            return label_text(text) or None
        if math.isfinite(number):
            return number
        return None if text.lower().lstrip("+-") in ("inf", "infinity", "nan") else text
    return None


def rater_id(raw: Any) -> tuple[str | None, str]:
    """A rater id as a file writes it (a text, or a whole number), read as ids are
    (NFC, trimmed): (the id, "") or (None, why not)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None, f"a rater id must be a text or a number, got {_type_name(raw)}"
    if isinstance(raw, float) and not (math.isfinite(raw) and raw.is_integer()):
        return None, f"a rater id must be a text or a whole number, got {raw!r}"
    text = unicodedata.normalize("NFC", str(int(raw)) if isinstance(raw, float) else str(raw))
    text = text.strip()
    if not text:
        return None, "a rater id must not be empty"
    if len(text) > MAX_RATER_LENGTH:
        return None, f"a rater id is at most {MAX_RATER_LENGTH} characters"
    if any(unicodedata.category(c) == "Cc" for c in text):
        return None, "a rater id must not hold control characters"
    return text, ""


Problems = list[tuple[str, str]]  # (field, message): the caller locates them on its line


def extra_keys(obj: dict[str, Any], known: set[str]) -> tuple[tuple[str, ...], Problems]:
    """The keys of a line outside ``known`` with a plain value (text, number, true or
    false, null), which are left out and named in the summary (the shared files'
    ``document``, ``subset``); one holding an object or a list is a problem (a misspelt
    ``human``, most likely)."""
    if obj.keys() <= known:
        return (), []
    ignored, problems = [], []
    allowed = ", ".join(sorted(known))
    for name in sorted(set(obj) - known):
        if isinstance(obj[name], dict | list):
            problems.append((name, f"unknown field (allowed: {allowed})"))
        else:
            ignored.append(name)
    return tuple(ignored), problems


def read_annotators(raw: Any) -> tuple[dict[str, dict[str, Value]], Problems]:
    """A line's ``{"aspect": {"rater": value, ...}, ...}``: each rater's value per aspect
    name (names read as ids are; null: no value)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [("annotators", 'expected an object {"aspect": {"rater": value}}')]
    found: dict[str, dict[str, Value]] = {}
    problems: Problems = []
    for written_name, raters in raw.items():
        where = f"annotators.{written_name}"
        name = unicodedata.normalize("NFC", written_name).strip()
        if not _NAME.match(name) or len(name) > 100:
            problems.append((where, "name must be letters, digits, _ . : - (at most 100)"))
            continue
        if not isinstance(raters, dict):
            problems.append((where, 'expected an object {"rater": value}'))
            continue
        values = found.setdefault(name, {})
        for written_rater, value in raters.items():
            at = f"{where}.{written_rater}"
            rater, problem = rater_id(written_rater)
            if rater is None:
                problems.append((at, problem))
            elif rater in values:
                problems.append((at, "names a rater already given a value on this line"))
            elif value is not None:
                read = read_value(value)
                if read is None:
                    problems.append((at, f"expected a number or a label, got {value!r}"))
                else:
                    values[rater] = read
    return {name: values for name, values in found.items() if values}, problems


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "an object", list: "a list", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)


def stored_value(
    value: Value, aspect: Aspect, codes: dict[str, int] | None = None
) -> tuple[float | None, str]:
    """What a judgment of ``aspect`` stores for ``value``: (the value, "") or (None,
    why it cannot be stored); ``codes``: the aspect's ``label_codes()``, when the caller
    keeps them. A scale aspect's range is checked by :mod:`.scales`."""
    if not aspect.is_labelled:
        if isinstance(value, str):
            return None, (
                f"expected a number, got {value!r} ({aspect.code} is a scale aspect, "
                f"{_range(aspect)})"
            )
        return value, ""
    code = (aspect.label_codes() if codes is None else codes).get(label_text(value))
    if code is None:
        shown = label_text(value)
        return None, f"{shown!r} is not one of {', '.join(str(x) for x in aspect.labels)}"
    return float(code), ""


def _range(aspect: Aspect) -> str:
    low, high = aspect.scale_min, aspect.scale_max
    return f"{low:g}–{high:g}"


@dataclass(slots=True)
class Observed:
    """The values a file gives one name (only what deciding a new aspect's kind needs:
    how many numbers and their range, whether all are 0/1, the distinct labels up to
    one past the cap, and where each kind was first seen)."""

    count: int = 0
    numbers: int = 0
    low: float = math.inf
    high: float = -math.inf
    zero_one: bool = True
    number_line: int = 0
    labels: dict[str, int] = field(default_factory=dict)  # label -> first line

    def add(self, value: Value, line: int) -> None:
        self.count += 1
        if value.__class__ is str:
            if value not in self.labels and len(self.labels) <= MAX_LABELS:
                self.labels[value] = line  # type: ignore[index]
            return
        if not self.numbers:
            self.number_line = line
        self.numbers += 1
        if value < self.low:  # type: ignore[operator]
            self.low = value  # type: ignore[assignment]
        if value > self.high:  # type: ignore[operator]
            self.high = value  # type: ignore[assignment]
        if self.zero_one and value != 0.0 and value != 1.0:
            self.zero_one = False

    @property
    def range(self) -> tuple[float, float]:
        """The numbers' range ((1, 5) when there are none: an aspect only pairs name)."""
        return (self.low, self.high) if self.numbers else (1.0, 5.0)


@dataclass(frozen=True)
class NewKind:
    """The kind and labels of an aspect an import creates."""

    kind: str
    labels: tuple[str, ...] = ()
    positive: str = ""

    def describe(self) -> str:
        if self.kind == Aspect.Kind.SCALE:
            return "a scale aspect"
        shown = ", ".join(self.labels)
        if self.kind == Aspect.Kind.BINARY:
            return f"a binary aspect with the labels {shown} (positive: {self.positive})"
        return f"a categorical aspect with the labels {shown} (unordered)"


def new_kind(observed: Observed) -> tuple[NewKind | None, str, int]:
    """The kind of the aspect to create from what a file gives a name: (the kind, "",
    0), or (None, why none can be made, the line to name)."""
    labels = observed.labels
    if observed.numbers and labels:
        label, line = min(labels.items(), key=lambda item: item[1])
        return (
            None,
            f"the file gives numbers (first on line {observed.number_line}) and labels "
            f"({label!r}) for it: an aspect is one or the other",
            line,
        )
    if not labels:
        if observed.numbers and observed.zero_one:
            return NewKind(Aspect.Kind.BINARY, ("0", "1"), "1"), "", 0
        return NewKind(Aspect.Kind.SCALE), "", 0
    first = min(labels.values())
    if len(labels) > MAX_LABELS:
        return None, f"the file gives it more than {MAX_LABELS} distinct labels", first
    if any(len(label) > MAX_LABEL_LENGTH for label in labels):
        return None, f"a label is longer than {MAX_LABEL_LENGTH} characters", first
    if len(labels) == 1:
        (label,) = labels
        return (
            None,
            f"the file gives it the one label {label!r}: create the aspect with its labels "
            "first (a binary or categorical aspect needs two or more)",
            first,
        )
    ordered = sorted(labels)
    if len(ordered) == 2:
        lower = [label.lower() for label in ordered]
        for negative, positive in KNOWN_PAIRS:
            if sorted((negative, positive)) == sorted(lower):
                pair = ordered if lower[0] == negative else ordered[::-1]
                return NewKind(Aspect.Kind.BINARY, tuple(pair), pair[1]), "", 0
        return NewKind(Aspect.Kind.BINARY, tuple(ordered), ordered[1]), "", 0
    return NewKind(Aspect.Kind.CATEGORICAL, tuple(ordered)), "", 0
