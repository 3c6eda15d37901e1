"""The floor of an import: the same file written straight into the tables without a
check (``json.loads`` per line, then ``COPY`` on PostgreSQL, ``executemany`` in one
transaction on SQLite), as ``bench/scale.py``'s bulk loader writes its study. The import
benchmark prints each import's time over this one as ``x bulk``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BATCH = 50_000


def _insert(table: str, columns: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> None:
    from django.db import connection

    quote = connection.ops.quote_name
    names = ", ".join(quote(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {quote(table)} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        sql = f"INSERT INTO {quote(table)} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                cursor.executemany(sql, batch)
                batch = []
        if batch:
            cursor.executemany(sql, batch)


def bulk_once(path: Path, dataset_name: str) -> int:
    """Load ``path`` (the generated layout: human scores, metrics) into a new dataset."""
    from django.db import connection, transaction
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
    from studies.services.lookup import aspect_names, find_aspect

    names = aspect_names(None)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name=dataset_name, task=TaskKind.objects.get(code="summarization")
        )
        docs: dict[str, tuple[str, str]] = {}
        with path.open("rb") as f:
            for line in f:
                r = json.loads(line)
                docs.setdefault(r["doc_id"], (r["source"], json.dumps(r["references"])))
        _insert(
            Document._meta.db_table,
            ("dataset_id", "doc_key", "source", "references"),
            ((dataset.pk, key, s, refs) for key, (s, refs) in docs.items()),
        )
        doc_ids = dict(dataset.documents.values_list("doc_key", "pk"))

        def lines() -> Iterable[dict[str, Any]]:
            with path.open("rb") as f:
                for line in f:
                    yield json.loads(line)

        _insert(
            Output._meta.db_table,
            ("document_id", "system_id", "text"),
            ((doc_ids[r["doc_id"]], r["system_id"], r["output"]) for r in lines()),
        )
        out_ids = {
            (d, s): pk
            for pk, d, s in Output.objects.filter(document__dataset=dataset).values_list(
                "pk", "document_id", "system_id"
            )
        }
        aspects: dict[str, Aspect] = {}
        runs: dict[str, int] = {}
        judgments, scores = [], []
        for r in lines():
            o = out_ids[(doc_ids[r["doc_id"]], r["system_id"])]
            for name, value in r.get("human", {}).items():
                if name not in aspects:
                    aspects[name] = find_aspect(names, name)  # type: ignore[assignment]
                judgments.append((o, aspects[name].pk, value, path.name, now, now, ""))
            for name, value in r.get("metrics", {}).items():
                if name not in runs:
                    run = MetricRun.objects.create(
                        dataset=dataset, metric=name, label=name, kind="imported"
                    )
                    runs[name] = run.pk
                scores.append((runs[name], o, value, "{}", ""))
        _insert(
            Judgment._meta.db_table,
            ("output_id", "aspect_id", "value", "import_file", "created_at", "updated_at", "rater"),
            judgments,
        )
        _insert(
            MetricScore._meta.db_table, ("run_id", "output_id", "value", "details", "error"), scores
        )
        dataset.bump_data_version()
    return len(out_ids)
