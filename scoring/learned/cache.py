"""Features on disk, one file per (backbone fingerprint, pooling, input text): computed
once per output and reused by every training job and scoring run on the same backbone."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scoring.learned.inputs import Formatted


class FeatureCache:
    """``root/<backbone key>/<text sha256[:2]>/<text sha256>.npy``."""

    def __init__(self, root: str | os.PathLike[str], backbone_key: str) -> None:
        safe = hashlib.sha256(backbone_key.encode()).hexdigest()[:24]
        self.folder = Path(root) / safe
        self.hits = 0
        self.misses = 0

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(text.encode()).hexdigest()
        return self.folder / digest[:2] / f"{digest}.npy"

    def get(self, text: str) -> np.ndarray[Any, Any] | None:
        try:
            return np.load(self._path(text))  # type: ignore[no-any-return]
        except (OSError, ValueError):
            return None

    def put(self, text: str, vector: np.ndarray[Any, Any]) -> None:
        path = self._path(text)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "wb") as fh:  # written aside, then renamed: never half a file
            np.save(fh, vector.astype(np.float32))
        os.replace(scratch, path)

    def features(
        self,
        inputs: Sequence[Formatted],
        compute: Callable[[Sequence[Formatted]], np.ndarray[Any, Any]],
        *,
        chunk: int = 64,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray[Any, Any]:
        """Vectors for ``inputs`` in order: cached ones read, the rest computed in chunks
        (whole prefixes stay together, so a decoder reuses each document's prefix) and
        stored as they come, so an interrupted extraction keeps what it finished."""
        found: list[np.ndarray[Any, Any] | None] = [self.get(i.text) for i in inputs]
        missing = [k for k, v in enumerate(found) if v is None]
        self.hits += len(inputs) - len(missing)
        self.misses += len(missing)
        done = len(inputs) - len(missing)
        for group in _chunks_by_prefix(missing, inputs, chunk):
            vectors = compute([inputs[k] for k in group])
            for k, vector in zip(group, vectors, strict=True):
                self.put(inputs[k].text, vector)
                found[k] = vector
            done += len(group)
            if progress:
                progress(done, len(inputs))
        return np.stack([v for v in found if v is not None]).astype(np.float32)


def _chunks_by_prefix(
    indices: list[int], inputs: Sequence[Formatted], size: int
) -> list[list[int]]:
    by_prefix: dict[str, list[int]] = {}
    for k in indices:
        by_prefix.setdefault(inputs[k].prefix, []).append(k)
    chunks: list[list[int]] = []
    current: list[int] = []
    for members in by_prefix.values():
        if current and len(current) + len(members) > size:
            chunks.append(current)
            current = []
        current.extend(members)
    if current:
        chunks.append(current)
    return chunks
