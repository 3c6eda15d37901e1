"""Checkpoints: the head (and, in full mode, the backbone's weights), the training state
and the metadata, written atomically; the sha256 of the file is returned and checked
when it is read back."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import torch


class CheckpointError(RuntimeError):
    """A checkpoint is missing or does not match its recorded sha256."""


def sha256_of(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_checkpoint(path: str | os.PathLike[str], payload: dict[str, Any]) -> str:
    """Write ``payload`` (tensors, numbers, strings) to ``path``; returns its sha256."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(payload, fh)
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return sha256_of(target)


def load_checkpoint(path: str | os.PathLike[str], sha256: str | None = None) -> dict[str, Any]:
    """Read a checkpoint; with ``sha256`` a file that changed since is refused."""
    target = Path(path)
    if not target.is_file():
        raise CheckpointError(f"no checkpoint at {target}")
    if sha256 is not None and sha256_of(target) != sha256:
        raise CheckpointError(f"{target} does not match its recorded sha256 {sha256[:12]}…")
    payload: dict[str, Any] = torch.load(target, map_location="cpu", weights_only=True)
    return payload
