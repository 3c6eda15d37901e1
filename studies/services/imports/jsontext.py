"""Decoding one JSON text of an import (a JSONL line, a CSV ``context`` cell) with its
problems located: what :mod:`json` rejects, keys repeated in one object, nesting deeper
than :data:`MAX_DEPTH`, and text no database can store."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from studies.services.imports.errors import LineError, RecordError

MAX_DEPTH = 64  # JSON nesting kept; deeper values would overflow recursive code later on
# NUL: PostgreSQL text cannot hold it; lone surrogates: not encodable as UTF-8.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")  # \u0000, \ud800-\udfff


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


class _JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers the keys it held more than once."""

    duplicates: tuple[str, ...] = ()


def _suspect(text: str) -> bool:
    """Whether JSON ``text`` may decode to a NUL or a lone surrogate (from valid UTF-8,
    both can only arrive as ``\\u`` escapes) or to nesting deeper than MAX_DEPTH."""
    return _SUSPECT_ESCAPE.search(text) is not None or (
        text.count("[") + text.count("{") > MAX_DEPTH
    )


class _Decoder(threading.local):
    """One JSON decoder per thread, built once (``json.loads`` with options builds a
    decoder and its scanner per call), noting whether an object repeated a key."""

    def __init__(self) -> None:
        self.repeated = False
        self.decoder = json.JSONDecoder(
            parse_constant=_reject_constant, object_pairs_hook=self.json_object
        )

    def json_object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        self.repeated = True  # json.loads alone would keep the last value silently
        marked = _JsonObject(obj)
        seen: set[str] = set()
        marked.duplicates = tuple(k for k, _v in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        return marked


_DECODER = _Decoder()


def parse_json(number: int, where: str, text: str) -> tuple[Any, bool] | RecordError:
    """The decoded value and whether it needs :func:`check_structure` (a repeated key,
    or :func:`_suspect` text), or a RecordError locating why ``text`` is no JSON."""
    state = _DECODER
    state.repeated = False
    try:
        # json.loads, not the decoder, names a byte order mark inside the file
        value = json.loads(text) if text.startswith("\ufeff") else state.decoder.decode(text)
        return value, state.repeated or _suspect(text)
    except ValueError as exc:
        message = f"invalid JSON ({exc})"
    except RecursionError:
        message = f"invalid JSON: nested deeper than {MAX_DEPTH} levels"
    return RecordError([LineError(number, where, message)])


def check_structure(number: int, obj: Any) -> list[LineError]:
    """Problems anywhere inside a decoded line: repeated keys, nesting deeper than
    MAX_DEPTH, and text no database can store (NUL, lone surrogates). Iterative, so a
    deep value cannot overflow the stack here."""
    errors: list[LineError] = []
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack and len(errors) < 10:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            bad = _UNSTORABLE.search(value)
            if bad:
                char = bad.group()
                what = "a NUL character" if char == "\x00" else "a lone surrogate"
                errors.append(
                    LineError(
                        number,
                        path,
                        f"contains {what} (\\u{ord(char):04x} at position {bad.start() + 1}), "
                        "which cannot be stored as text",
                    )
                )
            continue
        if depth > MAX_DEPTH and isinstance(value, dict | list):
            errors.append(LineError(number, path, f"nested deeper than {MAX_DEPTH} levels"))
            continue
        if isinstance(value, dict):
            for key in getattr(value, "duplicates", ()):
                errors.append(
                    LineError(
                        number,
                        _join(path, key),
                        "duplicate key: it appears more than once in the same object",
                    )
                )
            for key, item in value.items():
                stack.append((key, _join(path, key) + " (the name)", depth + 1))
                stack.append((item, _join(path, key), depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
    return sorted(errors, key=lambda e: e.field)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
