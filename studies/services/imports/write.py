"""Importing a dataset file: validate it completely (:mod:`.validate`), then write the
items it kept (:mod:`.kept`) in one transaction, in batches, with a handful of queries per
batch."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from studies.models import (
    Aspect,
    Dataset,
    Document,
    ImportedPreference,
    Judgment,
    MetricRun,
    MetricScore,
    Output,
    TaskKind,
    label_text,
)
from studies.services import queue
from studies.services.imports.aspects import rescalers, resolve_aspects
from studies.services.imports.merge import Target, insert, insert_outputs, merge, update_by_pk
from studies.services.imports.options import (
    ImportOptions,
    ImportSummary,
    ImportValidationError,
    batched,
)
from studies.services.imports.pairs import PairRecord
from studies.services.imports.records import LineError, Record
from studies.services.imports.validate import Plan, validate_file

log = logging.getLogger(__name__)
_KEEP = object()  # an output's stored references stay (its line gives none)


def import_file(path: Path | str, options: ImportOptions) -> ImportSummary:
    """Validate ``path`` completely, then write it in one transaction.

    Raises :class:`ImportValidationError` (nothing written) when any line is bad.
    """
    started = time.perf_counter()
    path = Path(path)
    cfg = settings.CONCORDIA
    if path.stat().st_size > cfg["IMPORT_MAX_FILE_BYTES"]:
        raise ImportValidationError(
            [LineError(0, "", f"the file is larger than {cfg['IMPORT_MAX_FILE_BYTES']} bytes")]
        )
    plan = validate_file(path, options)
    try:
        summary = _write(plan, options)
    finally:
        plan.kept.close()
    summary.seconds = round(time.perf_counter() - started, 3)
    log.info("imported %s into %s: %s", options.file_name, options.dataset, summary.as_dict())
    return summary


def _write(plan: Plan, options: ImportOptions) -> ImportSummary:
    """Write the validated items of ``plan`` in one transaction."""
    cfg = settings.CONCORDIA
    summary = ImportSummary(dataset=options.dataset, records=plan.records)
    summary.merged = plan.notes + plan.renames.notes()
    summary.notes = plan.said
    with transaction.atomic():
        dataset = _dataset(options)
        plan.renames.apply(dataset)  # stored ids spelled otherwise, merged with the file's
        aspects = resolve_aspects(plan, options, summary)
        runs = _imported_runs(dataset, plan.metrics, options.file_name, summary)
        writer = _ChunkWriter(dataset, aspects, runs, options.file_name, summary, plan)
        writer.scale = rescalers(plan, options, summary)
        slow = cfg["TEST_SLOW_CHUNK_SECONDS"]  # tests only: time to cut the database mid-import
        for chunk in batched(plan.kept, cfg["IMPORT_BATCH_SIZE"]):
            if slow:
                time.sleep(slow)
            writer.write(chunk)
        for run in runs.values():
            run.total = run.done = run.scores.count()
            run.save(update_fields=["total", "done"])
        # always: an unchanged file uploaded again is a new import job, a new judgment
        # source for the pages' source control (cached per data version)
        dataset.bump_data_version()
        transaction.on_commit(lambda: _refresh_statistics(summary), robust=True)
        queue.send_on_commit(queue.WRITE_SNAPSHOT, dataset.pk)  # the numbers, columnar
    return summary


def _refresh_statistics(summary: ImportSummary) -> None:
    """On PostgreSQL, analyse the tables this import grew as autovacuum would a minute or
    so later (its default threshold: 50 rows plus a tenth of the table), now.

    Without statistics PostgreSQL takes an ``IN`` list of a batch's ids to match the whole
    table and walks the dataset's or the run's index instead, once per batch: a re-import
    right after a large import would read every score of the run for every batch.
    """
    if connection.vendor != "postgresql":
        return
    created = {
        Document: summary.documents["created"],
        Output: summary.outputs["created"],
        Judgment: summary.judgments["created"],
        MetricScore: summary.metric_scores["created"],
        ImportedPreference: summary.pairwise_judgments["created"],
    }
    with connection.cursor() as cursor:
        for model, rows in created.items():
            table = connection.ops.quote_name(model._meta.db_table)
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
            (known,) = cursor.fetchone()  # -1: never analysed
            if rows >= 50 + 0.1 * max(known, 0):
                cursor.execute(f"ANALYZE {table}")


def _dataset(options: ImportOptions) -> Dataset:
    """The owner's dataset of that name, created if new: never another owner's."""
    dataset, _ = Dataset.objects.get_or_create(
        name=options.dataset,
        owner=options.owner,
        defaults={
            "task": TaskKind.objects.get(code=options.task),
            "description": options.description,
        },
    )
    return dataset


def _imported_runs(
    dataset: Dataset, names: list[str], file_name: str, summary: ImportSummary
) -> dict[str, MetricRun]:
    runs: dict[str, MetricRun] = {}
    for name in names:
        run, _ = MetricRun.objects.get_or_create(
            dataset=dataset,
            label=name,
            kind=MetricRun.Kind.IMPORTED,
            defaults={
                "metric": name,
                "status": MetricRun.Status.SUCCEEDED,
                "config": {"imported_from": file_name},
                "provenance": {"source": "import", "file": file_name},
            },
        )
        runs[name] = run
        summary.metric_runs.append(name)
    return runs


class _ChunkWriter:
    """Upserts one batch of records at a time with a handful of queries per batch.

    Each batch looks up only its own rows, through an index keyed by the batch (document
    keys, document ids, output ids), so a batch costs the same whatever the table holds;
    existing rows come back as plain tuples, compared in Python, and only the rows whose
    value differs are written: a re-import of an unchanged file writes no row.

    A record's human values go in as judgments of the file (rater "") unless the file
    gives the aspect per annotator (then each rater's value is a judgment of its own); a
    label is stored as its position in the aspect's labels. A pairs file's lines write
    their two outputs, then the pairwise judgments.
    """

    def __init__(
        self,
        dataset: Dataset,
        aspects: dict[str, Aspect],
        runs: dict[str, MetricRun],
        file_name: str,
        summary: ImportSummary,
        plan: Plan | None = None,
    ) -> None:
        self.dataset = dataset
        self.aspects = aspects
        self.runs = runs
        self.file_name = file_name
        self.summary = summary
        self.per_annotator = plan.per_annotator if plan else set()  # human.<key> not used
        self.codes = {  # file key -> label -> stored value, for label aspects
            name: aspect.label_codes() for name, aspect in aspects.items() if aspect.is_labelled
        }
        self.scale: dict[str, Callable[[float], float]] = {}  # file key -> rescaling
        self.doc_ids: dict[str, int] = {}  # documents already written by this import
        self.doc_refs: dict[str, list[str] | None] = {}  # their references (None: kept)
        self.new_outputs: set[int] = set()  # created in the current batch: nothing to look up

    def write(self, chunk: list[Record] | list[PairRecord]) -> None:
        pairs = [item for item in chunk if isinstance(item, PairRecord)]
        sides = [side for pair in pairs for side in (pair.a, pair.b)]
        # a repeated line: the last one wins
        latest = {(r.doc_id, r.system_id): r for r in sides or chunk}  # type: ignore[union-attr]
        records = list(latest.values())
        new_docs = self._documents(records)
        output_ids = self._outputs(records, new_docs)
        if pairs:
            self._pairwise(pairs, output_ids)
            return
        self._judgments(records, output_ids)
        self._metric_scores(records, output_ids)

    def _documents(self, records: list[Record]) -> set[int]:
        """Create or update the batch's documents not seen yet; the ids of those created.
        A record without references (None: a pair's line that gives none) leaves the
        stored document's references and context as they are."""
        wanted: dict[str, Record] = {}  # a document's first line gives its references
        for r in records:
            if r.doc_id not in self.doc_ids:
                wanted.setdefault(r.doc_id, r)
        if not wanted:
            return set()
        found = Document.objects.filter(dataset=self.dataset, doc_key__in=wanted).order_by()
        existing = {
            key: (pk, (source, references, context))
            for pk, key, source, references, context in found.values_list(
                "pk", "doc_key", "source", "references", "context"
            )
        }
        new, changed = [], []
        for key, r in wanted.items():
            stored = existing.get(key)
            fields = {
                "source": r.source,
                "references": list(r.references or ()),
                "context": r.context,
            }
            if r.references is None and stored is not None:  # keep the document's own
                fields["references"], fields["context"] = stored[1][1], stored[1][2]
            self.doc_refs[key] = None if r.references is None else fields["references"]
            if stored is None:
                new.append(Document(dataset=self.dataset, doc_key=key, **fields))
                continue
            pk = stored[0]
            self.doc_ids[key] = pk
            if stored[1] != tuple(fields.values()):
                context = fields["context"]
                changed.append(
                    (
                        pk,
                        fields["source"],
                        json.dumps(fields["references"]),
                        None if context is None else json.dumps(context),
                    )
                )
        Document.objects.bulk_create(new)
        update_by_pk(Document, ("source", "references", "context"), changed)
        self.summary.documents["created"] += len(new)
        self.summary.documents["updated"] += len(changed)
        if any(doc.pk is None for doc in new):  # backends that do not return ids
            created = Document.objects.filter(dataset=self.dataset, doc_key__in=wanted)
            self.doc_ids.update(created.order_by().values_list("doc_key", "pk"))
        else:
            self.doc_ids.update((doc.doc_key, doc.pk) for doc in new)
        return {self.doc_ids[doc.doc_key] for doc in new}

    def _outputs(self, records: list[Record], new_docs: set[int]) -> dict[tuple[str, str], int]:
        # a document created in this batch has no outputs yet: nothing to look up
        doc_pks = {self.doc_ids[r.doc_id] for r in records} - new_docs
        existing = self._existing_outputs(doc_pks)
        new, changed = [], []
        for r in records:
            key = (self.doc_ids[r.doc_id], r.system_id)
            own = self._own_references(r)
            if key not in existing:
                new.append((key[0], r.system_id, r.output, None if own is _KEEP else own))
                continue
            pk, text, stored = existing[key]
            if own is _KEEP:
                own = stored
            if text != r.output or stored != own:
                changed.append((pk, r.output, None if own is None else json.dumps(own)))
        created = insert_outputs(new) if new else []
        update_by_pk(Output, ("text", "references"), changed)
        self.summary.outputs["created"] += len(new)
        self.summary.outputs["updated"] += len(changed)
        existing.update({(doc, system): (pk, "", None) for pk, doc, system in created})
        self.new_outputs = {pk for pk, _doc, _system in created}
        return {
            (r.doc_id, r.system_id): existing[(self.doc_ids[r.doc_id], r.system_id)][0]
            for r in records
        }

    def _own_references(self, r: Record) -> list[str] | None | object:
        """The references an output keeps as its own: None when its line's are its
        document's; ``_KEEP`` (the stored ones stay) when its line gives none."""
        refs = self.doc_refs[r.doc_id]
        if r.references is None or refs is None:
            return _KEEP
        mine = list(r.references)
        return None if mine == refs else mine

    @staticmethod
    def _existing_outputs(doc_pks: set[int]) -> dict[tuple[int, str], tuple[int, str, Any]]:
        """(document id, system id) -> (output id, text, own references) of those
        documents' outputs."""
        if not doc_pks:
            return {}
        rows = Output.objects.filter(document_id__in=doc_pks).order_by()
        return {
            (doc, system): (pk, text, references)
            for pk, doc, system, text, references in rows.values_list(
                "pk", "document_id", "system_id", "text", "references"
            )
        }

    def _stored(self, name: str, value: float | str) -> float:
        """What a judgment stores for a file's value of ``name`` (validated already)."""
        codes = self.codes.get(name)
        if codes is not None:
            return float(codes[label_text(value)])
        return self.scale[name](value) if name in self.scale else value  # type: ignore[arg-type]

    def _judgments(self, records: list[Record], output_ids: dict[tuple[str, str], int]) -> None:
        # by output, aspect, then rater: within an output and an aspect the judgments are
        # written (their ids given) in the raters' order, as files of one rater each
        # imported in that order would be
        skip, plain = self.per_annotator, not self.codes and not self.scale
        aspects = {name: aspect.pk for name, aspect in self.aspects.items()}
        wanted: dict[tuple[int, int, str], float] = {}
        for r in records:
            output = output_ids[(r.doc_id, r.system_id)]
            for name, value in r.human.items():
                if name in skip:
                    continue
                stored = value if plain else self._stored(name, value)
                wanted[(output, aspects[name], "")] = stored  # type: ignore[assignment]
            for name, given in r.annotators.items():
                aspect = self.aspects[name].pk
                for rater in sorted(given):
                    wanted[(output, aspect, rater)] = self._stored(name, given[rater])
        now = _stamp()
        self._write(
            JUDGMENTS,
            wanted,
            lambda key, value: (*key, value, self.file_name, now, now),
            self.summary.judgments,
            now,
            fixed={"import_file": self.file_name},
        )

    def _pairwise(self, pairs: list[PairRecord], output_ids: dict[tuple[str, str], int]) -> None:
        """Upsert the batch's pairwise judgments (the winner is the value compared)."""
        wanted: dict[tuple[int, int, int, str], str] = {}
        for pair in pairs:
            a = output_ids[(pair.a.doc_id, pair.a.system_id)]
            b = output_ids[(pair.b.doc_id, pair.b.system_id)]
            wanted[(a, b, self.aspects[pair.aspect].pk, pair.rater)] = pair.winner
        now = _stamp()
        self._write(
            PREFERENCES,
            wanted,
            lambda key, winner: (*key, winner, self.file_name, now, now),
            self.summary.pairwise_judgments,
            now,
            fixed={"import_file": self.file_name},
        )

    def _metric_scores(self, records: list[Record], output_ids: dict[tuple[str, str], int]) -> None:
        wanted = {
            (output_ids[(r.doc_id, r.system_id)], self.runs[name].pk): value
            for r in records
            for name, value in r.metrics.items()
        }
        self._write(
            SCORES,
            wanted,
            lambda key, value: (*key, value, "{}", ""),
            self.summary.metric_scores,
        )

    def _write(
        self,
        target: Target,
        wanted: dict[Any, Any],
        build: Any,
        counts: dict[str, int],
        now: Any = None,
        fixed: dict[str, Any] | None = None,
    ) -> None:
        """Write the batch's rows ``wanted`` (key -> value; a key starts with its output
        id): those of outputs this batch created go straight in (nothing to compare
        with); the others through one set-based merge (:func:`.merge.merge`), which
        creates the missing rows and updates those whose value differs, without reading
        a stored row back into Python."""
        fresh, known = [], []
        for key, value in wanted.items():
            if key[0] in self.new_outputs:
                fresh.append(build(key, value))
            else:
                known.append((*key, value))
        insert(target.model, target.keys + target.values + INSERTED[target.model], fresh)
        if fixed:
            target = replace(target, fixed=fixed)
        created, updated = merge(target, known, now)
        counts["created"] += len(fresh) + created
        counts["updated"] += updated


def _stamp() -> Any:
    """Now, as the database stores it: adapted once for a batch's rows, not once per
    value (SQLite's driver formats each datetime it is given)."""
    return connection.ops.adapt_datetimefield_value(timezone.now())


# the columns a new row of each table is built with after its key and value (``build``)
INSERTED: dict[Any, tuple[str, ...]] = {
    Judgment: ("import_file", "created_at", "updated_at"),
    ImportedPreference: ("import_file", "created_at", "updated_at"),
    MetricScore: ("details", "error"),
}
JUDGMENTS = Target(
    Judgment,
    keys=("output_id", "aspect_id", "rater"),
    values=("value",),
    only="annotator_id IS NULL",
    stamped=True,
)
PREFERENCES = Target(
    ImportedPreference,
    keys=("output_a_id", "output_b_id", "aspect_id", "rater"),
    values=("winner",),
    stamped=True,
)
SCORES = Target(
    MetricScore,
    keys=("output_id", "run_id"),
    values=("value",),
    inserted={"details": "{}", "error": ""},
)
