"""Where a dataset's snapshots live and what their manifest says.

::

    <SNAPSHOT_DIR>/dataset-<id>-<created, µs>/      one folder per dataset (a dataset
        .lock                                        deleted and another given its id
        v000000000042/                               gets another folder)
            manifest.json      written last: a folder without it is not a snapshot
            outputs.parquet    output_id (sorted), doc, system (codes)
            documents.parquet  doc, doc_key (codes in key order)
            systems.parquet    system, system_id
            judgments/aspect_id=<id>/part-0.parquet
                               judgment_id, output_id, annotator_id (null: imported),
                               import_file, rater, value; by output, then judgment id
            scores/run_id=<id>/part-0.parquet
                               output_id, value (scored outputs only, by output)

The folders below ``judgments/`` and ``scores/`` are Hive-style partitions, so a
distributed engine reads ``scores/`` as one table with a ``run_id`` column (README,
"Columnar snapshots"). A snapshot is named by its dataset's ``data_version`` and is
written once; when the version moves a new one is written beside it and the old one
removed after ``SNAPSHOT_RETAIN_SECONDS``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

FORMAT = 3  # bump when the layout changes: snapshots of another format are rebuilt
MANIFEST = "manifest.json"
VERSION = re.compile(r"^v(\d{12})$")
TEMPORARY = ".tmp-"  # a snapshot being written: v…<TEMPORARY><pid>-<random>


@dataclass(frozen=True)
class Identity:
    """Which data a snapshot holds: one dataset (its id and creation time, since a
    deleted dataset's id may be given again) at one ``data_version``."""

    dataset: int
    created: int  # the dataset's creation time, in microseconds since the epoch
    version: int

    @classmethod
    def of(cls, pk: int, created_at: datetime, version: int) -> Identity:
        return cls(pk, round(created_at.timestamp() * 1_000_000), version)

    @property
    def folder(self) -> Path:
        """The dataset's folder (every version of its snapshots)."""
        return root() / f"dataset-{self.dataset}-{self.created}"

    @property
    def path(self) -> Path:
        return self.folder / version_name(self.version)


def root() -> Path:
    return Path(settings.CONCORDIA["SNAPSHOT_DIR"])


def version_name(version: int) -> str:
    return f"v{version:012d}"


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the snapshot at ``path``; None when there is none (not written,
    being written, or of another format)."""
    try:
        manifest: dict[str, Any] = json.loads((path / MANIFEST).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None
    return manifest if manifest.get("format") == FORMAT else None


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    (path / MANIFEST).write_text(json.dumps({"format": FORMAT, **manifest}, indent=1))


def judgments_file(path: Path, aspect: int) -> Path:
    return path / "judgments" / f"aspect_id={aspect}" / "part-0.parquet"


def scores_file(path: Path, run: int) -> Path:
    return path / "scores" / f"run_id={run}" / "part-0.parquet"
