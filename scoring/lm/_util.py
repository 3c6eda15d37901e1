"""Small helpers shared by the Hugging Face scoring paths (no torch at import time)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from scoring.lm.base import TargetScore

# Tokenizers and configs use huge sentinels (int(1e30), int(1e20)) for "no limit".
SANE_LIMIT = 10_000_000


def plan_batches(lengths: Sequence[int], batch_size: int, forward_cost: int) -> list[list[int]]:
    """Split rows, sorted longest first, into batches of consecutive indices.

    Minimises padded tokens plus ``forward_cost`` per forward (the fixed price of a
    forward, in token equivalents: every forward streams all the weights), with at most
    ``batch_size`` rows per batch. So a short row is not padded to the length of much
    longer ones, nor given a forward of its own for a few tokens of padding saved.
    """
    n = len(lengths)
    best = [0] + [-1] * n  # best[k]: cheapest plan for the first k rows
    start_of = [0] * (n + 1)
    for end in range(1, n + 1):
        for start in range(max(0, end - batch_size), end):
            cost = best[start] + forward_cost + lengths[start] * (end - start)
            if best[end] < 0 or cost < best[end]:
                best[end], start_of[end] = cost, start
    batches: list[list[int]] = []
    end = n
    while end > 0:
        start = start_of[end]
        batches.append(list(range(start, end)))
        end = start
    return batches[::-1]


def common_prefix_len(sequences: Sequence[Sequence[int]], limit: int) -> int:
    """How many leading tokens all ``sequences`` share, at most ``limit``."""
    first = sequences[0]
    n = 0
    while n < limit and all(seq[n] == first[n] for seq in sequences):
        n += 1
    return n


def finish(
    keys: Sequence[Hashable], encoded: Sequence[object], scores: dict[int, TargetScore]
) -> list[TargetScore]:
    """Results in request order: the score, or the tokenisation error (an encoding that
    is a string), for every request."""
    return [
        TargetScore.failed(key, enc) if isinstance(enc, str) else scores[i]
        for i, (key, enc) in enumerate(zip(keys, encoded, strict=True))
    ]


def describe(exc: BaseException) -> str:
    """A one-line error message for a result: the exception's type and text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def sane_limit(value: object) -> int | None:
    """``value`` as a positive context length, or ``None`` for a missing or sentinel one."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value < SANE_LIMIT else None


_CACHE_KEYWORD: dict[type, str] = {}


def cache_kwargs(model: object, cache: object) -> dict[str, object]:
    """The keyword argument that hands a key/value ``cache`` to ``model``'s forward:
    ``cache`` where the forward takes it (transformers 5.2x renamed ``past_key_values``,
    deprecated there and due to go in 5.40), else ``past_key_values``."""
    import inspect

    kind = type(model)
    keyword = _CACHE_KEYWORD.get(kind)
    if keyword is None:
        parameters = inspect.signature(model.forward).parameters  # type: ignore[attr-defined]
        keyword = _CACHE_KEYWORD[kind] = "cache" if "cache" in parameters else "past_key_values"
    return {keyword: cache}


def returned_cache(output: object) -> Any:
    """The key/value cache a forward returned, under either name (see :func:`cache_kwargs`)."""
    found = getattr(output, "cache", None)
    return found if found is not None else getattr(output, "past_key_values", None)
