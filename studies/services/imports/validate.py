"""The first pass of an import: read the whole file, streaming, and validate every line,
collecting located errors; nothing is written. What it learns (how the file's names map
to aspects and runs) is a :class:`Plan` for the write, which also keeps the valid items
(:mod:`.kept`): the write takes them back instead of reading and parsing the file again."""

from __future__ import annotations

import hashlib
import json
import math
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
from studies.services.imports.kept import Kept
from studies.services.imports.labels import NewKind, Observed, new_kind, stored_value
from studies.services.imports.options import ImportOptions, ImportValidationError
from studies.services.imports.pairs import PAIRS, PairRecord, is_pairs_file
from studies.services.imports.records import LineError, Record, RecordError, read_records
from studies.services.lookup import aspect_names, find_aspect

MAX_REPORTED_ERRORS = 50
MAX_RATERS_LISTED = 1000  # raters (and keys left out) counted one by one per name
# the name's rule is the model's (a slug), checked here too: a command or a worker's job
# calls the service without a form, and a database does not check a SlugField
_NAME_LENGTH = Dataset._meta.get_field("name").max_length or 100


@dataclass
class Plan:
    """What validation learnt: how the file's names map to rows to be."""

    aspects: dict[str, Aspect | None]  # file key -> existing aspect, or None to create
    observed_range: dict[str, tuple[float, float]]  # file key -> (min, max) of its scores
    metrics: list[str]
    records: int
    notes: list[str] = field(default_factory=list)  # ids merged or normalised, in words
    renames: StoredRenames = field(default_factory=StoredRenames)
    kinds: dict[str, NewKind] = field(default_factory=dict)  # file key -> what to create
    per_annotator: set[str] = field(default_factory=set)  # file keys given by rater
    said: list[str] = field(default_factory=list)  # human not used, keys left out: in words
    valued: set[str] = field(default_factory=set)  # file keys given values (not pairs only)
    kept: Kept = field(default_factory=Kept)  # the file's items, in order, for the write


class _Values:
    """The human values of a file, checked against their aspects as they come: what each
    name was given (to choose a new aspect's kind), the problems of ``human`` values (kept
    back: they are dropped when the file gives the aspect per annotator), and the
    judgments each rater gave."""

    def __init__(self, options: ImportOptions, report: Any, more: Any) -> None:
        self.options, self.report, self.more = options, report, more
        self.human: dict[str, Observed] = {}
        self.rated: dict[str, Observed] = {}
        self.held: dict[str, list[LineError]] = {}  # human.<name>'s problems, kept back
        self.held_more: dict[str, int] = {}
        self.raters: dict[str, dict[str, int]] = {}  # name -> rater -> judgments
        self.codes: dict[int, dict[str, int]] = {}  # a label aspect's label -> value
        # name -> the numbers it may take without a problem (a scale aspect's, the stated
        # source range, any number when widening); None: labels, or an aspect to create
        self.bounds: dict[str, tuple[float, float] | None] = {}

    def check(self, name: str, aspect: Aspect | None, value: Any, line: int, rater: str) -> None:
        """One value of ``name`` (``rater``: whose, or "" for ``human``)."""
        store = self.rated if rater else self.human
        seen = store.get(name)
        if seen is None:
            seen = store[name] = Observed()
            self.bounds[name] = self._bounds(name, aspect)
        seen.add(value, line)
        if rater:
            given = self.raters.setdefault(name, {})
            if rater in given or len(given) < MAX_RATERS_LISTED:
                given[rater] = given.get(rater, 0) + 1
        bounds = self.bounds[name]
        if bounds is not None and value.__class__ is float and bounds[0] <= value <= bounds[1]:
            return  # the common case: a number the scale holds
        if aspect is None:
            return  # to be created: its kind comes from every value (finish)
        if aspect.kind != Aspect.Kind.SCALE or isinstance(value, str):
            codes = self.codes.get(aspect.pk)
            if codes is None:
                codes = self.codes[aspect.pk] = aspect.label_codes()
            problem = stored_value(value, aspect, codes)[1]
        else:
            options = self.options
            problem = scales.out_of_scale(
                name, value, aspect, options.rescale, options.widen_aspects
            )
        if not problem:
            return
        where = f"annotators.{name}.{rater}" if rater else f"human.{name}"
        error = LineError(line, where, problem)
        if rater:
            self.report(error)
        elif len(self.held.setdefault(name, [])) < MAX_REPORTED_ERRORS:
            self.held[name].append(error)
        else:
            self.held_more[name] = self.held_more.get(name, 0) + 1

    def _bounds(self, name: str, aspect: Aspect | None) -> tuple[float, float] | None:
        """The range of numbers :func:`.scales.out_of_scale` lets through for ``name``."""
        if aspect is None or aspect.kind != Aspect.Kind.SCALE:
            return None
        source = self.options.rescale.get(name.lower())
        if source is not None:
            return source[0], source[1]
        if self.options.widen_aspects:
            return -math.inf, math.inf
        return aspect.scale_min, aspect.scale_max

    def finish(self, aspects: dict[str, Aspect | None], plan: Plan) -> None:
        """Report what was kept back, choose the new aspects' kinds, say in words what
        the summary should (``human`` values not used, the raters)."""
        for name, errors in self.held.items():
            if name not in self.rated:
                for error in errors:
                    self.report(error)
                self.more(self.held_more.get(name, 0))
        for name, aspect in aspects.items():
            seen = self.rated.get(name) or self.human.get(name) or Observed()
            plan.observed_range[name] = seen.range
            if aspect is not None:
                continue
            kind, problem, line = new_kind(seen)
            if kind is None:
                given = "annotators" if name in self.rated else "human"
                self.report(LineError(line, f"{given}.{name}", problem))
            else:
                plan.kinds[name] = kind
        plan.per_annotator = set(self.rated)
        plan.valued = set(self.rated) | set(self.human)
        for name in sorted(self.rated):
            given = self.raters.get(name, {})
            shown = ", ".join(sorted(given)[:10]) + (", ..." if len(given) > 10 else "")
            count = sum(given.values())
            plan.said.append(
                f"{name}: {count:,} judgments by {len(given)}"
                f"{'+' if len(given) >= MAX_RATERS_LISTED else ''} annotators ({shown})"
            )
            unused = self.human.get(name)
            if unused is not None:
                plan.said.append(
                    f"human.{name} was not used ({unused.count:,} values): the file gives "
                    f"{name} per annotator (annotators.{name}), imported as their judgments"
                )


def _read(stream: Any, options: ImportOptions) -> Iterator[Record | PairRecord | RecordError]:
    cfg = settings.CONCORDIA
    limits = {
        "max_line_bytes": cfg["IMPORT_MAX_LINE_BYTES"],
        "max_metrics": cfg["IMPORT_MAX_METRICS"],
    }
    pairs = is_pairs_file(stream, options.file_format, limits["max_line_bytes"])
    return read_records(stream, options.file_format, **limits, layout=PAIRS if pairs else None)


def validate_file(path: Path, options: ImportOptions) -> Plan:
    """Validate every line of ``path``; the :class:`Plan` of its write, with its items
    kept (``plan.kept``: close it once written). Raises ImportValidationError."""
    errors: list[LineError] = []
    more = 0
    kept = Kept()

    def report(error: LineError) -> None:
        nonlocal more
        kept.drop()  # nothing will be written
        if len(errors) < MAX_REPORTED_ERRORS:
            errors.append(error)
        else:
            more += 1

    def count_more(n: int) -> None:
        nonlocal more
        if n:
            kept.drop()
        more += n

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
    values = _Values(options, report, count_more)
    metrics: dict[str, None] = {}
    documents: dict[str, tuple[int, bytes, bytes, bool]] = {}
    outputs: dict[bytes, tuple[int, bytes]] = {}
    pairs: dict[bytes, tuple[int, str]] = {}  # a pair's judgment -> (line, winner)
    ignored: dict[str, int] = {}  # keys left out -> lines
    spellings = Spellings()
    systems: set[str] = set()
    last_document: list[Any] = [None, None, None]  # see _check_document
    count = 0

    def aspect_of(name: str, where: str, line: int) -> Aspect | None:
        """The aspect a file's name means (None: one to create), reported once if unknown."""
        if name in aspects:
            return aspects[name]
        aspect = find_aspect(lookup, name)
        if aspect is None and not options.create_aspects:
            report(
                LineError(
                    line,
                    where,
                    f"unknown aspect {name!r}; "
                    "create it first, or import with --create-aspects (upload page: tick 'Create unknown aspects')",
                )
            )
        aspects[name] = aspect
        target = aspect.pk if aspect else _created_name(name).lower()
        if target in targets:  # one value would silently replace the other
            report(
                LineError(
                    line, where, f"names the same aspect as {targets[target]!r}; use one name"
                )
            )
        targets.setdefault(target, name)
        return aspect

    def see_output(item: Record, field_name: str) -> None:
        first = documents.get(item.doc_id)
        spellings.see(item, (first[0], first[3]) if first else None)
        systems.add(item.system_id)
        _check_document(item, documents, report, last_document)
        # 16-byte digests, not the strings: memory per output stays small
        key = _digest(item.doc_id, item.system_id)
        digest = _digest(item.output)
        previous = outputs.get(key)
        if previous and previous[1] != digest:
            report(
                LineError(
                    item.line,
                    field_name,
                    f"doc_id {item.doc_id!r}, system_id "
                    f"{item.system_id!r} is already on line {previous[0]} with a different "
                    f"output{_as_written(item)}",
                )
            )
        elif previous is None:
            outputs[key] = (item.line, digest)

    check = values.check
    with path.open("rb") as stream:
        for item in _read(stream, options):
            if isinstance(item, RecordError):
                for error in item.errors:
                    report(error)
                continue
            count += 1
            for name in item.ignored:
                if name in ignored or len(ignored) < MAX_RATERS_LISTED:
                    ignored[name] = ignored.get(name, 0) + 1
            if isinstance(item, PairRecord):
                see_output(item.a, "output_a")
                see_output(item.b, "output_b")
                aspect_of(item.aspect, "aspect", item.line)
                _check_pair(item, pairs, report)
                kept.add(item)
                continue
            see_output(item, "output")
            for name, value in item.human.items():
                if name in aspects:  # the common case: no name to format
                    check(name, aspects[name], value, item.line, "")
                else:
                    check(name, aspect_of(name, f"human.{name}", item.line), value, item.line, "")
            for name, given in item.annotators.items():
                aspect = aspect_of(name, f"annotators.{name}", item.line)
                for rater, value in sorted(given.items()):
                    check(name, aspect, value, item.line, rater)
            for name in item.metrics:
                metrics.setdefault(name)
            kept.add(item)
    plan = Plan(aspects, {}, list(metrics), count, kept=kept)
    values.finish(aspects, plan)
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
        elif aspects[matched[0]].is_labelled:  # type: ignore[union-attr]
            report(LineError(0, "rescale", f"{name!r} is an aspect of labels, not a scale"))
    renames, clashes = stored_spellings(existing, set(documents), systems)
    for error in clashes:
        report(error)
    if not errors and not more:
        for error in _check_new_aspects([n for n, a in aspects.items() if a is None], options):
            report(error)
    if errors or more:
        raise ImportValidationError(errors, more)
    plan.notes, plan.renames = spellings.notes(), renames
    if ignored:
        listed = ", ".join(f"{name} ({n:,} lines)" for name, n in sorted(ignored.items()))
        plan.said.append(f"keys left out (not part of the import format): {listed}")
    return plan


def _check_pair(item: PairRecord, pairs: dict[bytes, tuple[int, str]], report: Any) -> None:
    """A judgment of a pair given twice (same sides, aspect and annotator) with another
    winner is an error; given twice alike, it is one judgment."""
    key = _digest(item.doc_id, item.a.system_id, item.b.system_id, item.aspect.lower(), item.rater)
    previous = pairs.get(key)
    if previous is None:
        pairs[key] = (item.line, item.winner)
    elif previous[1] != item.winner:
        who = f"annotator {item.rater!r}" if item.rater else "the file"
        report(
            LineError(
                item.line,
                "winner",
                f"{who} judged this pair on {item.aspect!r} already on line {previous[0]}, "
                f"with the winner {previous[1]!r}",
            )
        )


def new_aspect_fields(name: str) -> dict[str, str]:
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
    # characters) is numbered when the aspect is created (free_code)
    taken = {f: {} for f in ("key", "name")}  # value -> what holds it
    for aspect in owned_aspects(options.owner):
        for f in taken:
            taken[f][getattr(aspect, f).lower()] = f"aspect {aspect.code}"
    for name in names:
        fields = new_aspect_fields(name)
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
    item: Record,
    documents: dict[str, tuple[int, bytes, bytes, bool]],
    report: Any,
    last: list[Any],
) -> None:
    """A document's lines agree on its source and context. References may differ: the
    document takes its first line's, an output whose line gives others keeps its own
    (an output that is itself one of the references, scored against the others).
    ``last``: the doc_id, source and context (as JSON) of the latest line that agreed
    with its document's first: a line like it needs no digest (lines of a document
    usually follow each other)."""
    context = None if item.context is None else json.dumps(item.context, sort_keys=True)
    if item.doc_id == last[0] and item.source == last[1] and context == last[2]:
        return
    digests = (_digest(item.source), _digest("null" if context is None else context))
    first = documents.get(item.doc_id)
    if first is None:  # and whether it spelled its doc_id as it is read
        clean = not any(where == "doc_id" for where, _raw, _read in item.spelled)
        documents[item.doc_id] = (item.line, *digests, clean)
        last[:] = item.doc_id, item.source, context
        return
    agrees = True
    for name, before, now in zip(("source", "context"), first[1:3], digests, strict=True):
        if before != now:
            agrees = False
            report(
                LineError(
                    item.line,
                    name,
                    f"doc_id {item.doc_id!r} has a different {name} on line {first[0]}"
                    f"{_as_written(item)}",
                )
            )
    if agrees:
        last[:] = item.doc_id, item.source, context


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
