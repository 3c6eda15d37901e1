"""Sentinel metrics (Perrella et al. 2024, "Guardians of the machine translation
meta-evaluation: sentinel metrics fall in!"): scores that know nothing of quality, run
beside the real metrics to expose spurious correlation. A metric that does not beat
them significantly may be rewarding length, or nothing at all.

* ``length``: the output's length in tokens (whitespace-separated words);
* ``random``: a uniform number in [0, 1) fixed by (seed, output key), so a resumed or
  repeated run gives every output the same number;
* the source-free GPTScore (the ``hypo`` dimension of :mod:`scoring.metrics.gptscore`)
  is the third; it needs a language model and lives with GPTScore.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scoring.metrics.base import Item, ScoreResult

METRICS = ("length", "random")
TOKENIZER = "whitespace"
SOURCE_FREE_DIMENSION = "hypo"


def n_tokens(text: str) -> int:
    """The number of whitespace-separated tokens of ``text``."""
    return len(text.split())


def score_length(items: Sequence[Item]) -> list[ScoreResult]:
    """One result per item: its output's length in tokens."""
    return [
        ScoreResult(item.key, float(n_tokens(item.hypothesis)), {"tokenizer": TOKENIZER})
        for item in items
    ]


def uniform(seed: int, key: Hashable) -> float:
    """A number in [0, 1) that depends only on ``seed`` and ``key`` (not on the order
    or the batch the item comes in)."""
    digest = hashlib.sha256(f"{seed}:{key!r}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def score_random(items: Sequence[Item], seed: int) -> list[ScoreResult]:
    """One result per item: :func:`uniform` of the seed and the item's key."""
    return [ScoreResult(item.key, uniform(seed, item.key), {"seed": seed}) for item in items]


def is_sentinel(metric: str, config: Mapping[str, Any] | None) -> bool:
    """Whether a run of ``metric`` with ``config`` is a sentinel: length, random, or a
    source-free GPTScore."""
    if metric in METRICS:
        return True
    return metric == "gptscore" and (config or {}).get("dimension") == SOURCE_FREE_DIMENSION
