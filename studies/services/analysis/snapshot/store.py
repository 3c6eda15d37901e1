"""Finding, writing and retiring snapshots.

A snapshot is trusted for exactly one ``data_version`` of one dataset, read from the
database when asked (never from a possibly stale instance). When none is written for
the current version, :func:`ensure` writes it under the dataset's lock (one writer per
dataset across processes; the others wait, then read it). A write is kept only when the
version is the same after the last row was read as before the first, and only when the
rows it read are committed: inside a transaction that has not committed (a
``transaction.atomic`` block; a test's own transaction aside) its rows may yet be rolled
back, so the reader is told to read the rows itself. The folder is written under a
temporary name and renamed into place, manifest included, so a reader sees a whole
snapshot or none.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection

from studies.models import Dataset
from studies.services.analysis.snapshot.build import write_judgments, write_outputs, write_scores
from studies.services.analysis.snapshot.layout import (
    TEMPORARY,
    VERSION,
    Identity,
    read_manifest,
    root,
    version_name,
    write_manifest,
)
from studies.services.analysis.snapshot.read import Snapshot

log = logging.getLogger(__name__)
ATTEMPTS = 3  # writes begun again when the data changed under one
STALE_TEMPORARY_SECONDS = 24 * 3600  # a temporary folder this old was left by a crash


class SnapshotUnavailable(Exception):
    """No snapshot of the current data can be had now; read the rows instead."""


def enabled() -> bool:
    return bool(settings.CONCORDIA["SNAPSHOTS"])


def identity(dataset_id: int) -> Identity | None:
    """The dataset's identity now (None when it is gone)."""
    row = Dataset.objects.filter(pk=dataset_id).values_list("created_at", "data_version").first()
    return None if row is None else Identity.of(dataset_id, row[0], row[1])


def find(found: Identity) -> Snapshot | None:
    """The snapshot written for exactly this identity, if any."""
    manifest = read_manifest(found.path)
    if manifest is None or manifest.get("data_version") != found.version:
        return None
    return Snapshot(found.path, manifest)


def current(dataset: Dataset) -> Snapshot | None:
    """The snapshot of the dataset's data as it is now, if one is written (and snapshots
    are on)."""
    if not enabled():
        return None
    found = identity(dataset.pk)
    return None if found is None else find(found)


def reads_committed_rows() -> bool:
    """Whether the rows this connection reads are committed (no transaction of ours is
    open, a test case's own aside: Django marks those)."""
    return all(getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def ensure(dataset: Dataset) -> Snapshot:
    """The snapshot of the dataset's current data, written first if there is none.
    Raises :class:`SnapshotUnavailable` when none can be had (snapshots off, the rows
    not committed, another writer holding the lock too long, the data changing under
    every attempt, or the folder not writable)."""
    if not enabled():
        raise SnapshotUnavailable("snapshots are turned off (CONCORDIA_SNAPSHOTS)")
    found = identity(dataset.pk)
    if found is None:
        raise SnapshotUnavailable("the dataset is gone")
    snapshot = find(found)
    if snapshot is not None:
        return snapshot
    if not reads_committed_rows():
        raise SnapshotUnavailable("inside a transaction: its rows are not committed")
    try:
        with _locked(found.folder):
            return _write_current(dataset)
    except OSError as exc:
        raise SnapshotUnavailable(f"cannot write under {root()}: {exc}") from exc


def _write_current(dataset: Dataset) -> Snapshot:
    """Under the lock: the current version's snapshot, found (another process wrote it
    while this one waited) or written."""
    for _ in range(ATTEMPTS):
        before = identity(dataset.pk)
        if before is None:
            raise SnapshotUnavailable("the dataset is gone")
        snapshot = find(before)
        if snapshot is not None:
            return snapshot
        snapshot = _write(dataset, before)
        if snapshot is not None:
            remove_old(before)
            return snapshot
    raise SnapshotUnavailable(f"the data changed under {ATTEMPTS} attempts to write it")


def _write(dataset: Dataset, before: Identity) -> Snapshot | None:
    """Write ``before``'s snapshot; None (nothing kept) when the version moved meanwhile."""
    started = time.perf_counter()
    name = f"{version_name(before.version)}{TEMPORARY}{os.getpid()}-{secrets.token_hex(4)}"
    temporary = before.folder / name
    temporary.mkdir(parents=True)
    try:
        parts = [write_outputs(dataset, temporary)]
        parts.append(write_judgments(dataset, temporary))
        parts.append(write_scores(dataset, temporary))
        after = identity(dataset.pk)
        if after != before:
            log.info("dataset %s changed while its snapshot was written; again", dataset.pk)
            return None
        manifest = {
            "dataset": before.dataset,
            "created": before.created,
            "data_version": before.version,
            "written_at": time.time(),
            "seconds": round(time.perf_counter() - started, 3),
            **parts[0],
            "aspects": parts[1]["aspects"],
            "files": parts[1]["files"],
            "runs": parts[2]["runs"],
            "bytes": sum(int(p["bytes"]) for p in parts),
        }
        write_manifest(temporary, manifest)
        if before.path.exists():  # of another format, or half-removed: never trusted
            shutil.rmtree(before.path)
        temporary.rename(before.path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    log.info("snapshot of dataset %s v%s: %s", before.dataset, before.version, manifest)
    return Snapshot(before.path, manifest)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold the dataset's lock (an advisory lock on a file of its folder, released by
    the kernel if the process dies), waiting at most ``SNAPSHOT_WAIT_SECONDS``."""
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + float(settings.CONCORDIA["SNAPSHOT_WAIT_SECONDS"])
    with open(folder / ".lock", "a+b") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SnapshotUnavailable(
                        "another process has been writing this snapshot too long"
                    ) from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_old(kept: Identity) -> list[Path]:
    """Remove what no reader of ``kept``'s dataset needs: the folders of an earlier
    dataset that had its id, every version above ``kept``'s (not trusted: written from
    data the database no longer has), versions below it superseded more than
    ``SNAPSHOT_RETAIN_SECONDS`` ago (a reader that opened one just before has that long
    to finish), and temporary folders a crash left. Returns what it removed."""
    removed = []
    if root().is_dir():
        for other in root().glob(f"dataset-{kept.dataset}-*"):
            if other != kept.folder and other.is_dir():
                removed.append(other)
    retain = float(settings.CONCORDIA["SNAPSHOT_RETAIN_SECONDS"])
    now = time.time()
    versions = []
    for path in kept.folder.iterdir() if kept.folder.is_dir() else []:
        if TEMPORARY in path.name:
            if now - path.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                removed.append(path)
            continue
        matched = VERSION.match(path.name)
        if matched:
            versions.append((int(matched.group(1)), path))
    versions.sort()
    for k, (version, path) in enumerate(versions):
        if version > kept.version:
            removed.append(path)
        elif version < kept.version:
            successor = read_manifest(versions[k + 1][1]) if k + 1 < len(versions) else None
            written = float(successor.get("written_at", 0.0)) if successor else 0.0
            if now - written > retain:
                removed.append(path)
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


def remove_dataset(dataset_id: int) -> None:
    """Remove every snapshot of a deleted dataset."""
    if root().is_dir():
        for folder in root().glob(f"dataset-{dataset_id}-*"):
            shutil.rmtree(folder, ignore_errors=True)


def refresh(dataset_id: int) -> str:
    """The worker's job after an import or a run: write the current version's snapshot
    unless it is written, and retire old ones. Says what it did."""
    if not enabled():
        return "snapshots off"
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        remove_dataset(dataset_id)
        return "dataset gone"
    found = current(dataset)
    if found is not None:
        return f"v{found.version} already written"
    try:
        written = ensure(dataset)
    except SnapshotUnavailable as exc:
        return f"not written: {exc}"
    return f"v{written.version} written in {written.manifest['seconds']} s"
