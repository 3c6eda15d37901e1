"""Columnar snapshots of each dataset's numbers: what every matrix, diagnostic and
report reads instead of the database's rows.

A snapshot holds a dataset's outputs (document and system keys), its judgments (per
aspect, with their annotator or file) and its metric scores (per run) as Parquet files
under the data folder (:mod:`.layout`), written once per ``data_version`` (:mod:`.build`,
:mod:`.store`: by a light worker when an import or a run ends, or by the first reader
that finds none) and read a file and a column at a time (:mod:`.read`).

Why Parquet through pyarrow: the format every columnar engine reads (DuckDB, Polars,
Spark, Ray Data, pandas), so the same files serve a deployment that outgrows one
machine; pyarrow is its reference implementation, reads one column of one file
without the others, and hands numpy the buffers without a copy. One dependency, no
server, and nothing home-made about the format.
"""

from studies.services.analysis.snapshot.read import Judgments, Snapshot, release_memory
from studies.services.analysis.snapshot.store import (
    SnapshotUnavailable,
    current,
    enabled,
    ensure,
    refresh,
    remove_dataset,
    remove_old,
)

__all__ = [
    "release_memory",
    "Judgments",
    "Snapshot",
    "SnapshotUnavailable",
    "current",
    "enabled",
    "ensure",
    "refresh",
    "remove_dataset",
    "remove_old",
]
