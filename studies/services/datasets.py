"""Importing and exporting datasets: the one service behind the upload page, the
``import_records`` command, the import task and (later) the API.

An import reads the file twice, streaming: the first pass validates every line and
collects located errors; only when there are none does the second pass write, in one
transaction, in batches. Re-importing a file updates changed values and creates no
duplicates. Rows that are not in the file are left alone: an import only adds or updates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.validators import slug_re
from django.db import IntegrityError, connection, transaction
from django.db.models import Avg, F
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
    aspect_key,
)
from studies.permissions import owned_aspects
from studies.services import scales
from studies.services.csvfile import CsvWriter
from studies.services.records import LineError, Record, RecordError, read_records

log = logging.getLogger(__name__)
MAX_REPORTED_ERRORS = 50
# the name's rule is the model's (a slug), checked here too: a command or a worker's job
# calls the service without a form, and a database does not check a SlugField
_NAME_LENGTH = Dataset._meta.get_field("name").max_length or 100
T = TypeVar("T")


class ImportValidationError(Exception):
    """The file has problems; nothing was written. ``errors`` locates each one."""

    def __init__(self, errors: list[LineError], more: int = 0) -> None:
        self.errors = errors
        self.more = more
        lines = [str(e) for e in errors]
        if more:
            lines.append(f"... and {more} more problems")
        super().__init__("\n".join(lines))


@dataclass
class ImportOptions:
    """What to import where. Scores outside an existing aspect's scale are an error
    unless ``rescale`` states their source range (``{"informativeness": (1, 6)}``: mapped
    linearly onto the aspect's scale) or ``widen_aspects`` imports them into a wider copy
    of the aspect (``Informativeness 1–6``)."""

    dataset: str
    task: str
    file_format: str
    file_name: str
    create_aspects: bool = False
    owner: Any = None
    description: str = ""
    rescale: scales.SourceRanges = field(default_factory=dict)
    widen_aspects: bool = False


@dataclass
class ImportSummary:
    """What an import did, by kind of row."""

    dataset: str
    records: int = 0
    documents: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    outputs: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    judgments: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    metric_scores: dict[str, int] = field(default_factory=lambda: {"created": 0, "updated": 0})
    aspects_created: list[str] = field(default_factory=list)
    metric_runs: list[str] = field(default_factory=list)
    scales: list[str] = field(default_factory=list)  # created, rescaled, widened: in words
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Plan:
    """What validation learnt: how the file's names map to rows to be."""

    aspects: dict[str, Aspect | None]  # file key -> existing aspect, or None to create
    observed_range: dict[str, list[float]]  # file key -> [min, max] of its scores
    metrics: list[str]
    records: int


# --- import ---------------------------------------------------------------------------


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
    plan = _validate(path, options)
    summary = ImportSummary(dataset=options.dataset, records=plan.records)
    with transaction.atomic():
        dataset = _dataset(options)
        aspects = _aspects(plan, options, summary)
        runs = _imported_runs(dataset, plan.metrics, options.file_name, summary)
        writer = _ChunkWriter(dataset, aspects, runs, options.file_name, summary)
        writer.scale = _rescalers(plan, options, summary)
        with path.open("rb") as stream:
            for chunk in _batched(_valid_records(stream, options), cfg["IMPORT_BATCH_SIZE"]):
                writer.write(chunk)
        for run in runs.values():
            run.total = run.done = run.scores.count()
            run.save(update_fields=["total", "done"])
        dataset.bump_data_version()
    summary.seconds = round(time.perf_counter() - started, 3)
    log.info("imported %s into %s: %s", options.file_name, options.dataset, summary.as_dict())
    return summary


def _read(stream: Any, options: ImportOptions) -> Iterator[Record | RecordError]:
    cfg = settings.CONCORDIA
    limits = {
        "max_line_bytes": cfg["IMPORT_MAX_LINE_BYTES"],
        "max_metrics": cfg["IMPORT_MAX_METRICS"],
    }
    return read_records(stream, options.file_format, **limits)


def _valid_records(stream: Any, options: ImportOptions) -> Iterator[Record]:
    for item in _read(stream, options):
        if isinstance(item, RecordError):  # the file changed between the two passes
            raise ImportValidationError(item.errors)
        yield item


def _validate(path: Path, options: ImportOptions) -> _Plan:
    errors: list[LineError] = []
    more = 0

    def report(error: LineError) -> None:
        nonlocal more
        if len(errors) < MAX_REPORTED_ERRORS:
            errors.append(error)
        else:
            more += 1

    if not slug_re.match(options.dataset) or len(options.dataset) > _NAME_LENGTH:
        report(
            LineError(
                0,
                "dataset",
                f"the dataset name {options.dataset!r} must be 1 to "
                f"{_NAME_LENGTH} letters, digits, '-' or '_'",
            )
        )
    task = TaskKind.objects.filter(code=options.task).first()
    if task is None:
        known = ", ".join(TaskKind.objects.values_list("code", flat=True))
        report(LineError(0, "task", f"unknown task {options.task!r} (known: {known})"))
    existing = owned_dataset(options.dataset, options.owner)
    if existing and task and existing.task_id != task.id:
        report(
            LineError(
                0,
                "task",
                f"dataset {options.dataset!r} exists with task "
                f"{existing.task.code!r}, not {options.task!r}",
            )
        )

    lookup = _aspect_lookup(options.owner)
    aspects: dict[str, Aspect | None] = {}
    targets: dict[Any, str] = {}  # aspect (or the name it will be created with) -> file key
    observed: dict[str, list[float]] = {}
    metrics: dict[str, None] = {}
    documents: dict[str, tuple[int, bytes, bytes, bytes]] = {}
    outputs: dict[bytes, tuple[int, bytes]] = {}
    count = 0
    with path.open("rb") as stream:
        for item in _read(stream, options):
            if isinstance(item, RecordError):
                for error in item.errors:
                    report(error)
                continue
            count += 1
            _check_document(item, documents, report)
            # 16-byte digests, not the strings: memory per output stays small
            key = _digest(item.doc_id, item.system_id)
            digest = _digest(item.output)
            previous = outputs.get(key)
            if previous and previous[1] != digest:
                report(
                    LineError(
                        item.line,
                        "output",
                        f"doc_id {item.doc_id!r}, system_id "
                        f"{item.system_id!r} is already on line {previous[0]} with a different output",
                    )
                )
            elif previous is None:
                outputs[key] = (item.line, digest)
            for name, value in item.human.items():
                if name not in aspects:
                    aspect = lookup.get(name.lower()) or lookup.get(aspect_key(name))
                    if aspect is None and not options.create_aspects:
                        report(
                            LineError(
                                item.line,
                                f"human.{name}",
                                f"unknown aspect {name!r}; "
                                "create it first, or import with --create-aspects (upload page: tick 'Create unknown aspects')",
                            )
                        )
                    aspects[name] = aspect
                    observed[name] = [value, value]
                    target = aspect.pk if aspect else _created_name(name).lower()
                    if target in targets:  # one value would silently replace the other
                        report(
                            LineError(
                                item.line,
                                f"human.{name}",
                                f"names the same aspect as {targets[target]!r}; use one name",
                            )
                        )
                    targets.setdefault(target, name)
                low_high = observed[name]
                low_high[0], low_high[1] = min(low_high[0], value), max(low_high[1], value)
                problem = scales.out_of_scale(
                    name, value, aspects[name], options.rescale, options.widen_aspects
                )
                if problem:
                    report(LineError(item.line, f"human.{name}", problem))
            for name in item.metrics:
                metrics.setdefault(name)
    for name in options.rescale:
        matched = [n for n in aspects if n.lower() == name]
        if not matched:
            report(LineError(0, "rescale", f"no human score in the file is named {name!r}"))
        elif aspects[matched[0]] is None:
            report(
                LineError(
                    0,
                    "rescale",
                    f"{name!r} is not an existing aspect; an aspect the import creates "
                    "takes its scale from the file's values",
                )
            )
    if not errors and not more:
        for error in _check_new_aspects([n for n, a in aspects.items() if a is None], options):
            report(error)
    if errors or more:
        raise ImportValidationError(errors, more)
    return _Plan(aspects, observed, list(metrics), count)


def _new_aspect_fields(name: str) -> dict[str, str]:
    """Code, name and stable key of the aspect an import creates for a file's score name."""
    key = aspect_key(name)
    return {"code": key.upper()[:32], "name": _created_name(name), "key": key}


def _check_new_aspects(names: list[str], options: ImportOptions) -> list[LineError]:
    """The cap on new aspects, and no clash with a shared aspect, the owner's own or
    another new one; checked before anything is written."""
    limit = settings.CONCORDIA["IMPORT_MAX_NEW_ASPECTS"]
    if len(names) > limit:
        return [
            LineError(
                0,
                "human",
                f"the file would create {len(names)} new aspects; at most "
                f"{limit} may be created by one import (IMPORT_MAX_NEW_ASPECTS)",
            )
        ]
    errors = []
    # keys and names must be free; a code taken (e.g. two long names cut to the same 32
    # characters) is numbered when the aspect is created (_free_code)
    taken = {f: {} for f in ("key", "name")}  # value -> what holds it
    for aspect in owned_aspects(options.owner):
        for f in taken:
            taken[f][getattr(aspect, f).lower()] = f"aspect {aspect.code}"
    for name in names:
        fields = _new_aspect_fields(name)
        if not fields["key"]:
            errors.append(LineError(0, f"human.{name}", f"{name!r} cannot name an aspect"))
            continue
        for f in taken:
            value = fields[f]
            holder = taken[f].get(value.lower())
            if holder:
                errors.append(
                    LineError(
                        0,
                        f"human.{name}",
                        f"a new aspect for {name!r} would "
                        f"have the {f} {value!r} of {holder}; rename the column",
                    )
                )
                break
            taken[f][value.lower()] = f"the new aspect for {name!r}"
    return errors


def _check_document(
    item: Record, documents: dict[str, tuple[int, bytes, bytes, bytes]], report: Any
) -> None:
    digests = (
        _digest(item.source),
        _digest(json.dumps(item.references)),
        _digest(json.dumps(item.context, sort_keys=True)),
    )
    first = documents.get(item.doc_id)
    if first is None:
        documents[item.doc_id] = (item.line, *digests)
        return
    for name, before, now in zip(
        ("source", "references", "context"), first[1:], digests, strict=True
    ):
        if before != now:
            report(
                LineError(
                    item.line,
                    name,
                    f"doc_id {item.doc_id!r} has a different {name} on line {first[0]}",
                )
            )


def _digest(*parts: str) -> bytes:
    """16 bytes standing for the texts: the validator keeps these, not the texts."""
    return hashlib.blake2b("\x00".join(parts).encode("utf-8"), digest_size=16).digest()


def _aspect_lookup(owner: Any) -> dict[str, Aspect]:
    """File name (lower-cased) → aspect, among the shared aspects and the owner's own:
    codes, names, stable keys and earlier names (aliases) all match."""
    lookup: dict[str, Aspect] = {}
    # the owner's own first: a shared aspect's alias never hides them
    for aspect in owned_aspects(owner).order_by(F("owner").asc(nulls_last=True), "pk"):
        for name in sorted(aspect.file_names()):
            lookup.setdefault(name, aspect)
    return lookup


def owned_dataset(name: str, owner: Any) -> Dataset | None:
    """The owner's dataset of that name (``owner`` None: the unowned one)."""
    owner_id = getattr(owner, "pk", owner)
    query = Dataset.objects.filter(name=name).select_related("task")
    return (
        query.filter(owner_id=owner_id) if owner_id else query.filter(owner__isnull=True)
    ).first()


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


def _created_name(file_key: str) -> str:
    return file_key.replace("_", " ").strip().capitalize()


def _aspects(plan: _Plan, options: ImportOptions, summary: ImportSummary) -> dict[str, Aspect]:
    resolved: dict[str, Aspect] = {}
    task = TaskKind.objects.get(code=options.task)
    for name, aspect in plan.aspects.items():
        low, high = plan.observed_range[name]
        if aspect is None:
            scale_min, scale_max = scales.rounded_range(low, high)
            fields = _new_aspect_fields(name)
            aspect = Aspect(
                **{**fields, "code": _free_code(fields["code"], options.owner)},
                owner=options.owner,
                definition=f"Imported from {options.file_name}; edit this definition.",
                scale_min=scale_min,
                scale_max=scale_max,
                source=f"created by import of {options.file_name}",
            )
            aspect._changed_by = options.owner
            try:
                with transaction.atomic():  # a savepoint: the import goes on after a clash
                    aspect.save()
            except IntegrityError:
                aspect = _created_meanwhile(name, fields["key"], low, high, options)
            else:
                summary.aspects_created.append(aspect.code)
                summary.scales.append(
                    f"created {aspect.code} with the scale {scales.fmt_range(scale_min, scale_max)} "
                    f"from the file's {name} values ({scales.fmt_range(low, high)})"
                )
            aspect.tasks.add(task)
        elif (
            options.widen_aspects
            and name.lower() not in options.rescale
            and not scales.holds(aspect, low, high)
        ):
            aspect = _wider_aspect(aspect, low, high, options, summary, name)
        resolved[name] = aspect
    return resolved


def _created_meanwhile(
    name: str, key: str, low: float, high: float, options: ImportOptions
) -> Aspect:
    """The aspect another import of the same owner created for ``name`` between this
    import's validation and its write (two uploads at once): used when this file's
    scores fit its scale, else a located error (the whole import is rolled back)."""
    aspect = owned_aspects(options.owner).filter(owner=options.owner, key=key).first()
    field_name = f"human.{name}"
    if aspect is None:
        raise ImportValidationError(
            [
                LineError(
                    0,
                    field_name,
                    f"the aspect for {name!r} "
                    "clashed with one created at the same moment; "
                    "import the file again",
                )
            ]
        )
    if not scales.holds(aspect, low, high):
        raise ImportValidationError(
            [
                LineError(
                    0,
                    field_name,
                    (
                        f"another import created {aspect.code} at the same moment with the scale "
                        f"{scales.fmt_range(aspect.scale_min, aspect.scale_max)}, which does not hold this "
                        f"file's values ({scales.fmt_range(low, high)}); import the file again with "
                        "--rescale or --widen-aspects"
                    ),
                )
            ]
        )
    return aspect


def _free_code(code: str, owner: Any) -> str:
    """``code`` cut to the field's 32 characters, numbered if the owner's or a shared
    aspect holds it."""
    code = code[:32] or "ASPECT"
    candidate, n = code, 1
    while owned_aspects(owner).filter(code=candidate).exists():
        n += 1
        candidate = f"{code[: 31 - len(str(n))]}_{n}"
    return candidate


def _wider_aspect(
    aspect: Aspect,
    low: float,
    high: float,
    options: ImportOptions,
    summary: ImportSummary,
    file_key: str,
) -> Aspect:
    """The copy of ``aspect`` whose scale also covers ``low..high`` (made once, then
    found again by its name on a re-import)."""
    scale_min, scale_max = scales.rounded_range(
        min(low, aspect.scale_min), max(high, aspect.scale_max)
    )
    name, code = scales.wider_name(aspect.name, aspect.code, scale_min, scale_max)
    wider = owned_aspects(options.owner).filter(name=name).first()
    if wider is None:
        wider = Aspect(
            code=_free_code(code, options.owner),
            name=name,
            owner=options.owner,
            definition=aspect.definition,
            anchors=aspect.anchors,
            scale_min=scale_min,
            scale_max=scale_max,
            source=f"{aspect.code} widened by import of {options.file_name}",
        )
        wider._changed_by = options.owner
        wider.save()
        wider.tasks.set(aspect.tasks.all())
        summary.aspects_created.append(wider.code)
    elif not scales.holds(wider, low, high):  # edited since it was made
        raise ImportValidationError(
            [
                LineError(
                    0,
                    f"human.{file_key}",
                    f"the wider aspect {wider.code} exists with the scale "
                    f"{scales.fmt_range(wider.scale_min, wider.scale_max)}, which does not "
                    f"cover the file's values {scales.fmt_range(low, high)}",
                )
            ]
        )
    summary.scales.append(
        f"{file_key} ({scales.fmt_range(low, high)}) imported into {wider.code} "
        f"({scales.fmt_range(wider.scale_min, wider.scale_max)}), a wider copy of {aspect.code}"
    )
    return wider


def _rescalers(
    plan: _Plan, options: ImportOptions, summary: ImportSummary
) -> dict[str, Callable[[float], float]]:
    """File key -> the linear map of its stated source range onto its aspect's scale."""
    maps = {}
    for name, aspect in plan.aspects.items():
        source = options.rescale.get(name.lower())
        if source is None or aspect is None:
            continue
        target = (aspect.scale_min, aspect.scale_max)
        maps[name] = scales.linear(source, target)
        summary.scales.append(
            f"{name} rescaled linearly from {scales.fmt_range(*source)} "
            f"onto {aspect.code}'s scale {scales.fmt_range(*target)}"
        )
    return maps


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
    """Upserts one batch of records at a time with a handful of queries per batch."""

    def __init__(
        self,
        dataset: Dataset,
        aspects: dict[str, Aspect],
        runs: dict[str, MetricRun],
        file_name: str,
        summary: ImportSummary,
    ) -> None:
        self.dataset = dataset
        self.aspects = aspects
        self.runs = runs
        self.file_name = file_name
        self.summary = summary
        self.scale: dict[str, Callable[[float], float]] = {}  # file key -> rescaling
        self.doc_ids: dict[str, int] = {}  # documents already written by this import
        self.new_outputs: set[int] = set()  # created in the current batch: nothing to look up

    def write(self, chunk: list[Record]) -> None:
        latest = {(r.doc_id, r.system_id): r for r in chunk}  # a repeated line: the last one wins
        records = list(latest.values())
        self._documents(records)
        output_ids = self._outputs(records)
        self._judgments(records, output_ids)
        self._metric_scores(records, output_ids)

    def _documents(self, records: list[Record]) -> None:
        wanted = {r.doc_id: r for r in records if r.doc_id not in self.doc_ids}
        if not wanted:
            return
        existing = {
            d.doc_key: d for d in Document.objects.filter(dataset=self.dataset, doc_key__in=wanted)
        }
        new, changed = [], []
        for key, r in wanted.items():
            doc = existing.get(key)
            fields = {"source": r.source, "references": list(r.references), "context": r.context}
            if doc is None:
                new.append(Document(dataset=self.dataset, doc_key=key, **fields))
            elif any(getattr(doc, k) != v for k, v in fields.items()):
                for k, v in fields.items():
                    setattr(doc, k, v)
                changed.append(doc)
            else:
                self.doc_ids[key] = doc.pk
        Document.objects.bulk_create(new)
        Document.objects.bulk_update(changed, ["source", "references", "context"])
        self.summary.documents["created"] += len(new)
        self.summary.documents["updated"] += len(changed)
        for doc in [*new, *changed]:
            self.doc_ids[doc.doc_key] = doc.pk
        if any(doc.pk is None for doc in new):  # backends that do not return ids
            self.doc_ids.update(
                Document.objects.filter(dataset=self.dataset, doc_key__in=wanted).values_list(
                    "doc_key", "pk"
                )
            )

    def _outputs(self, records: list[Record]) -> dict[tuple[str, str], int]:
        doc_pks = {self.doc_ids[r.doc_id] for r in records}
        existing = {
            (o.document_id, o.system_id): o for o in Output.objects.filter(document_id__in=doc_pks)
        }
        new, changed = [], []
        for r in records:
            pk = self.doc_ids[r.doc_id]
            out = existing.get((pk, r.system_id))
            if out is None:
                new.append(Output(document_id=pk, system_id=r.system_id, text=r.output))
            elif out.text != r.output:
                out.text = r.output
                changed.append(out)
        Output.objects.bulk_create(new)
        Output.objects.bulk_update(changed, ["text"])
        self.summary.outputs["created"] += len(new)
        self.summary.outputs["updated"] += len(changed)
        if any(o.pk is None for o in new):
            existing = {
                (o.document_id, o.system_id): o
                for o in Output.objects.filter(document_id__in=doc_pks)
            }
        else:
            existing.update({(o.document_id, o.system_id): o for o in new})
        self.new_outputs = {existing[(o.document_id, o.system_id)].pk for o in new}
        return {
            (r.doc_id, r.system_id): existing[(self.doc_ids[r.doc_id], r.system_id)].pk
            for r in records
        }

    def _judgments(self, records: list[Record], output_ids: dict[tuple[str, str], int]) -> None:
        wanted = {
            (output_ids[(r.doc_id, r.system_id)], self.aspects[name].pk): (
                self.scale[name](value) if name in self.scale else value
            )
            for r in records
            for name, value in r.human.items()
        }
        if not wanted:
            return
        known = {o for o, _a in wanted} - self.new_outputs
        existing = (
            Judgment.objects.filter(
                output_id__in=known, annotator__isnull=True, import_file=self.file_name
            )
            if known
            else Judgment.objects.none()
        )
        now = timezone.now()
        self._upsert(
            Judgment,
            existing,
            wanted,
            ("output_id", "aspect_id"),
            ("output_id", "aspect_id", "value", "import_file", "created_at", "updated_at"),
            lambda key, value: (key[0], key[1], value, self.file_name, now, now),
            self.summary.judgments,
        )

    def _metric_scores(self, records: list[Record], output_ids: dict[tuple[str, str], int]) -> None:
        wanted = {
            (self.runs[name].pk, output_ids[(r.doc_id, r.system_id)]): value
            for r in records
            for name, value in r.metrics.items()
        }
        if not wanted:
            return
        known = {o for _r, o in wanted} - self.new_outputs
        existing = (
            MetricScore.objects.filter(output_id__in=known, run_id__in={run for run, _o in wanted})
            if known
            else MetricScore.objects.none()
        )
        self._upsert(
            MetricScore,
            existing,
            wanted,
            ("run_id", "output_id"),
            ("run_id", "output_id", "value", "details", "error"),
            lambda key, value: (key[0], key[1], value, "{}", ""),
            self.summary.metric_scores,
        )

    @staticmethod
    def _upsert(
        model: Any,
        existing: Any,
        wanted: dict[tuple[int, int], float],
        key_fields: tuple[str, str],
        columns: tuple[str, ...],
        build: Any,
        counts: dict[str, int],
    ) -> None:
        """Create the missing rows of ``wanted`` and update those whose value changed.

        New rows go in with one ``executemany``: hundreds of thousands of judgments would
        spend most of the import building model instances and compiling their SQL.
        """
        changed = []
        for row in existing.only("pk", *key_fields, "value"):
            key = (getattr(row, key_fields[0]), getattr(row, key_fields[1]))
            if key not in wanted:
                continue
            value = wanted.pop(key)
            if row.value != value:
                row.value = value
                changed.append(row)
        _insert(model, columns, [build(key, value) for key, value in wanted.items()])
        model.objects.bulk_update(changed, ["value"], batch_size=1000)
        counts["created"] += len(wanted)
        counts["updated"] += len(changed)


def _insert(model: Any, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """INSERT plain rows (values in ``columns`` order) with one executemany."""
    if not rows:
        return
    meta = model._meta
    quote = connection.ops.quote_name
    names = ", ".join(quote(meta.get_field(c.removesuffix("_id")).column) for c in columns)
    marks = ", ".join("%s" for _ in columns)
    sql = f"INSERT INTO {quote(meta.db_table)} ({names}) VALUES ({marks})"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 10_000):
            cursor.executemany(sql, rows[start : start + 10_000])


def _batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# --- export ---------------------------------------------------------------------------


def export_dataset(
    dataset: Dataset, file_format: str, *, chunk_size: int = 2000, raw: bool = False
) -> Iterator[str]:
    """Yield the dataset as JSONL lines or CSV rows, streaming in chunks of outputs.

    Human scores are the mean of an output's judgments per aspect (one imported
    judgment exports as itself); metric columns are named by run label, or by
    ``label:run<id>`` where runs share a label. CSV text cells that a spreadsheet would
    run as a formula get a leading ``'`` (the import takes it off again) unless ``raw``.
    """
    aspects = {
        a.pk: a.key
        for a in Aspect.objects.filter(judgments__output__document__dataset=dataset).distinct()
    }
    runs = run_columns(dataset.runs.order_by("label", "pk").values_list("pk", "label"))
    docs = Document.objects.filter(dataset=dataset)
    outputs = (
        Output.objects.filter(document__dataset=dataset)
        .select_related("document")
        .order_by("document__doc_key", "system_id")
    )
    if file_format == "csv":
        n_refs = max(
            (len(refs or []) for refs in docs.values_list("references", flat=True)), default=0
        )
        has_context = docs.filter(context__isnull=False).exists()
        yield from _csv_export(outputs, aspects, runs, n_refs, has_context, chunk_size, raw)
    elif file_format == "jsonl":
        for output, human, metrics in _rows(outputs, aspects, runs, chunk_size):
            record: dict[str, Any] = {
                "doc_id": output.document.doc_key,
                "system_id": output.system_id,
                "source": output.document.source,
                "references": output.document.references,
                "output": output.text,
                "human": human,
            }
            if metrics:
                record["metrics"] = metrics
            if output.document.context is not None:
                record["context"] = output.document.context
            yield json.dumps(record, ensure_ascii=False) + "\n"
    else:
        raise ValueError(f"Unknown export format {file_format!r}; use jsonl or csv.")


def run_columns(runs: Iterable[tuple[int, str]]) -> dict[int, str]:
    """Run id -> its export column: the label, or ``label:run<id>`` for every run whose
    label another run of the dataset shares (one column per run, never merged)."""
    pairs = list(runs)
    labels = [label for _pk, label in pairs]
    return {pk: label if labels.count(label) == 1 else f"{label}:run{pk}" for pk, label in pairs}


def _rows(
    outputs: Any, aspects: dict[int, str], runs: dict[int, str], chunk_size: int
) -> Iterator[tuple[Output, dict[str, float], dict[str, float]]]:
    for chunk in _batched(outputs.iterator(chunk_size=chunk_size), chunk_size):
        ids = [o.pk for o in chunk]
        human: dict[int, dict[str, float]] = defaultdict(dict)
        for row in (
            Judgment.objects.filter(output_id__in=ids)
            .values("output_id", "aspect_id")
            .annotate(mean=Avg("value"))
            .order_by("output_id", "aspect_id")
        ):
            human[row["output_id"]][aspects[row["aspect_id"]]] = row["mean"]
        metrics: dict[int, dict[str, float]] = defaultdict(dict)
        for run_id, output_id, value in MetricScore.objects.filter(
            output_id__in=ids, value__isnull=False
        ).values_list("run_id", "output_id", "value"):
            metrics[output_id][runs[run_id]] = value
        for output in chunk:
            yield (
                output,
                dict(sorted(human[output.pk].items())),
                dict(sorted(metrics[output.pk].items())),
            )


def _csv_export(
    outputs: Any,
    aspects: dict[int, str],
    runs: dict[int, str],
    n_refs: int,
    has_context: bool,
    chunk_size: int,
    raw: bool,
) -> Iterator[str]:
    human_keys = sorted(set(aspects.values()))
    metric_keys = sorted(set(runs.values()))
    header = [
        "doc_id",
        "system_id",
        "source",
        *[f"reference_{i + 1}" for i in range(n_refs)],
        "output",
    ]
    header += [f"human_{k}" for k in human_keys] + [f"metric_{k}" for k in metric_keys]
    if has_context:
        header.append("context")
    writer = CsvWriter(raw=raw)
    yield writer.row(header)
    for output, human, metrics in _rows(outputs, aspects, runs, chunk_size):
        refs = list(output.document.references or [])
        row: list[Any] = [output.document.doc_key, output.system_id, output.document.source]
        row += refs + [""] * (n_refs - len(refs)) + [output.text]
        row += [human.get(k) for k in human_keys] + [metrics.get(k) for k in metric_keys]
        if has_context:
            context = output.document.context
            row.append(None if context is None else json.dumps(context, ensure_ascii=False))
        yield writer.row(row)
