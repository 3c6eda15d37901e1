"""The scale benchmark's data: a study of documents × systems with four judged aspects and
ten metric runs, written straight into the tables in bulk (``executemany`` on SQLite,
``COPY`` on PostgreSQL), one transaction per table, then the data version bumped, as an
import ends. The values are those of ``bench/dashboard.py``'s generator (scores correlated
with a latent quality to different degrees, 1-5 ratings).

This is the fast path a bulk loader takes, not the JSONL importer (which validates every
line first: ``bench/ingest.py`` measures that one)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

N_RUNS, ASPECT_CODES = 10, ("COH", "CON", "FLU", "REL")
BATCH = 50_000


def _insert(table: str, columns: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> None:
    from django.db import connection, transaction

    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join(["%s"] * len(columns))
        sql = f"INSERT INTO {table} ({names}) VALUES ({marks})"
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                cursor.executemany(sql, batch)
                batch = []
        if batch:
            cursor.executemany(sql, batch)


def _tune() -> None:
    """SQLite: a bigger page cache while loading (indexes grow by random inserts)."""
    from django.db import connection

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA cache_size = -1000000")  # 1 GB


def load(n_docs: int, n_systems: int, seed: int = 0) -> tuple[int, dict[str, float]]:
    """Write the study; returns the dataset's id and each table's seconds."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.utils import timezone

    from studies.models import (
        Aspect,
        Dataset,
        Document,
        Judgment,
        MetricRun,
        MetricScore,
        Output,
        TaskKind,
    )

    _tune()
    seconds: dict[str, float] = {}
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    owner = User.objects.create_superuser("bench", password="bench-password")
    dataset = Dataset.objects.create(
        name="scale", task=TaskKind.objects.get(code="summarization"), owner=owner
    )
    _insert(
        Document._meta.db_table,
        ("dataset_id", "doc_key", "source", "references"),
        ((dataset.pk, f"doc{d:07d}", "s", '["r"]') for d in range(n_docs)),
    )
    docs = list(dataset.documents.order_by("pk").values_list("pk", flat=True))
    systems = [f"sys{s:03d}" for s in range(n_systems)]
    _insert(
        Output._meta.db_table,
        ("document_id", "system_id", "text"),
        ((d, s, "o") for d in docs for s in systems),
    )
    outputs = np.fromiter(
        Output.objects.filter(document__dataset=dataset)
        .order_by("pk")
        .values_list("pk", flat=True)
        .iterator(chunk_size=100_000),
        dtype=np.int64,
    )
    seconds["outputs"] = time.perf_counter() - started
    quality = rng.normal(size=outputs.size)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    started = time.perf_counter()
    for aspect in Aspect.objects.filter(code__in=ASPECT_CODES).order_by("code"):
        values = np.clip(np.round(3 + quality + rng.normal(0, 0.7, outputs.size)), 1, 5)
        _insert(
            Judgment._meta.db_table,
            ("output_id", "aspect_id", "value", "import_file", "created_at", "updated_at"),
            (
                (o, aspect.pk, v, "scale.jsonl", now, now)
                for o, v in zip(outputs.tolist(), values.tolist(), strict=True)
            ),
        )
    seconds["judgments"] = time.perf_counter() - started
    started = time.perf_counter()
    for r in range(N_RUNS):
        run = MetricRun.objects.create(
            dataset=dataset,
            metric="bench",
            label=f"metric-{r}",
            kind="imported",
            status="succeeded",
        )
        values = quality + rng.normal(0, 0.3 + 0.35 * r, outputs.size)  # strong to weak
        _insert(
            MetricScore._meta.db_table,
            ("run_id", "output_id", "value", "details", "error"),
            _scores(run.pk, outputs, values),
        )
        MetricRun.objects.filter(pk=run.pk).update(total=outputs.size, done=outputs.size)
    seconds["scores"] = time.perf_counter() - started
    dataset.bump_data_version()
    _analyse()
    return dataset.pk, seconds


def _scores(run: int, outputs: np.ndarray, values: np.ndarray) -> Iterator[tuple[Any, ...]]:
    for o, v in zip(outputs.tolist(), values.tolist(), strict=True):
        yield (run, o, v, "{}", "")


def _analyse() -> None:
    """On PostgreSQL, planner statistics, as the importer refreshes them after a large
    import (SQLite's importer leaves its own: neither does it here)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
