"""A response cache for served models: a repeated, resumed or recovered run never pays
for the same request twice.

The key is the sha256 of the canonical JSON of who answers and for whom (the
endpoint's scope: its host and owner, or "shared", and whose data is asked about), the
model id and version, the route and the exact request body; the value is the server's
parsed answer. So one researcher's server never answers for another's, and a cache hit
tells nobody what someone else asked. Only successful answers are stored.
:class:`MemoryCache` lives in one process; a persistent store (the database) implements
the same :class:`ResponseCache` protocol, looked up and written in bulk by the caller's
thread (never from the client's event loop).
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: one text per value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(
    model_id: str,
    request: Mapping[str, Any],
    route: str = "",
    model_version: str = "",
    scope: str = "",
) -> str:
    """sha256 (hex) of the model id, the route and the exact request body, the model's
    version when the server reports one (a redeployed model is never answered from its
    predecessor's responses) and the scope (who answers, for whom)."""
    key: dict[str, Any] = {"model_id": model_id, "route": route, "request": request}
    if model_version:
        key["model_version"] = model_version
    if scope:
        key["scope"] = scope
    material = canonical_json(key)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


@runtime_checkable
class ResponseCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored answers of those ``keys`` that have one."""
        ...

    def set_many(self, values: Mapping[str, dict[str, Any]]) -> None:
        """Store each value under its key (the last write wins)."""
        ...


class MemoryCache:
    """Answers in this process's memory (deep copies, so callers cannot alter them)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._data.get(key)
        return copy.deepcopy(found) if found is not None else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = copy.deepcopy(value)

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found = {key: self.get(key) for key in keys}
        return {key: value for key, value in found.items() if value is not None}

    def set_many(self, values: Mapping[str, dict[str, Any]]) -> None:
        for key, value in values.items():
            self.set(key, value)

    def __len__(self) -> int:
        return len(self._data)
