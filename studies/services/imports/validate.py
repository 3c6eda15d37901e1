"""The first pass of an import: read the whole file, streaming, and validate every line,
collecting located errors; nothing is written. What it learns (how the file's names map
to aspects and runs) is a :class:`_Plan` for the second pass."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.validators import slug_re

import studies.services.imports.scales as scales
from studies.models import Aspect, Dataset, TaskKind, aspect_key
from studies.permissions import owned_aspects
from studies.services.imports.ids import Spellings, StoredRenames, stored_spellings
from studies.services.imports.options import ImportOptions, ImportValidationError
from studies.services.imports.records import LineError, Record, RecordError, read_records
from studies.services.lookup import aspect_names, find_aspect

MAX_REPORTED_ERRORS = 50
# the name's rule is the model's (a slug), checked here too: a command or a worker's job
# calls the service without a form, and a database does not check a SlugField
_NAME_LENGTH = Dataset._meta.get_field("name").max_length or 100


@dataclass
class _Plan:
    """What validation learnt: how the file's names map to rows to be."""

    aspects: dict[str, Aspect | None]  # file key -> existing aspect, or None to create
    observed_range: dict[str, list[float]]  # file key -> [min, max] of its scores
    metrics: list[str]
    records: int
    notes: list[str] = field(default_factory=list)  # ids merged or normalised, in words
    renames: StoredRenames = field(default_factory=StoredRenames)


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

    lookup = aspect_names(options.owner)
    aspects: dict[str, Aspect | None] = {}
    targets: dict[Any, str] = {}  # aspect (or the name it will be created with) -> file key
    observed: dict[str, list[float]] = {}
    metrics: dict[str, None] = {}
    documents: dict[str, tuple[int, bytes, bytes, bytes, bool]] = {}
    outputs: dict[bytes, tuple[int, bytes]] = {}
    spellings = Spellings()
    systems: set[str] = set()
    count = 0
    with path.open("rb") as stream:
        for item in _read(stream, options):
            if isinstance(item, RecordError):
                for error in item.errors:
                    report(error)
                continue
            count += 1
            first = documents.get(item.doc_id)
            spellings.see(item, (first[0], first[4]) if first else None)
            systems.add(item.system_id)
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
                        f"{item.system_id!r} is already on line {previous[0]} with a different "
                        f"output{_as_written(item)}",
                    )
                )
            elif previous is None:
                outputs[key] = (item.line, digest)
            for name, value in item.human.items():
                if name not in aspects:
                    aspect = find_aspect(lookup, name)
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
    renames, clashes = stored_spellings(existing, set(documents), systems)
    for error in clashes:
        report(error)
    if not errors and not more:
        for error in _check_new_aspects([n for n, a in aspects.items() if a is None], options):
            report(error)
    if errors or more:
        raise ImportValidationError(errors, more)
    return _Plan(aspects, observed, list(metrics), count, spellings.notes(), renames)


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
    item: Record, documents: dict[str, tuple[int, bytes, bytes, bytes, bool]], report: Any
) -> None:
    digests = (
        _digest(item.source),
        _digest(json.dumps(item.references)),
        _digest(json.dumps(item.context, sort_keys=True)),
    )
    first = documents.get(item.doc_id)
    if first is None:  # and whether it spelled its doc_id as it is read
        clean = not any(where == "doc_id" for where, _raw, _read in item.spelled)
        documents[item.doc_id] = (item.line, *digests, clean)
        return
    for name, before, now in zip(
        ("source", "references", "context"), first[1:4], digests, strict=True
    ):
        if before != now:
            report(
                LineError(
                    item.line,
                    name,
                    f"doc_id {item.doc_id!r} has a different {name} on line {first[0]}"
                    f"{_as_written(item)}",
                )
            )


def _as_written(item: Record) -> str:
    """How the line wrote its ids, when not as they are read (ids.py: they were merged)."""
    ids = [f"{where} {raw!r}" for where, raw, _read in item.spelled if where.endswith("_id")]
    return f" (this line writes {' and '.join(ids)})" if ids else ""


def _digest(*parts: str) -> bytes:
    """16 bytes standing for the texts: the validator keeps these, not the texts."""
    return hashlib.blake2b("\x00".join(parts).encode("utf-8"), digest_size=16).digest()


def owned_dataset(name: str, owner: Any) -> Dataset | None:
    """The owner's dataset of that name (``owner`` None: the unowned one)."""
    owner_id = getattr(owner, "pk", owner)
    query = Dataset.objects.filter(name=name).select_related("task")
    return (
        query.filter(owner_id=owner_id) if owner_id else query.filter(owner__isnull=True)
    ).first()


def _created_name(file_key: str) -> str:
    return file_key.replace("_", " ").strip().capitalize()
