"""What every metric takes and gives: :class:`Item` (an output with its document) in,
one :class:`ScoreResult` per item out, in the same order."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Item:
    """One output to score, with its document."""

    key: Hashable
    doc_key: str
    source: str
    hypothesis: str
    references: tuple[str, ...] = ()
    history: tuple[str, ...] = ()  # dialogue turns before the response, oldest first


@dataclass(frozen=True)
class ScoreResult:
    """One output's score, or why there is none (never a silent 0)."""

    key: Hashable
    value: float | None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
