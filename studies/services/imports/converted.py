"""Importing what :mod:`studies.services.sources` converts: a published benchmark
(``load_benchmark NAME --into DATASET``, its page and API route) or a labelling or tracing
tool's export (``import_records FILE --format label-studio``, the upload page's *Format*,
the API's ``format``), through the same validating import as a Concordia file.

The conversion is streamed to a records file and a pairs file in a private folder first:
a malformed export stops there with its located problem and nothing written. The two files
are then imported in one transaction (both or neither), the aspects the import creates get
the source's definitions, and the licence and citation are recorded on the dataset.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from studies.models import Aspect, Dataset, TaskKind, label_text
from studies.models.aspects import aspect_key
from studies.services.imports.aspects import free_code
from studies.services.imports.errors import LineError
from studies.services.imports.options import (
    ImportOptions,
    ImportSummary,
    ImportValidationError,
)
from studies.services.imports.validate import new_aspect_fields, owned_dataset
from studies.services.imports.write import import_file
from studies.services.lookup import aspect_names, find_aspect
from studies.services.sources import FORMATS as ADAPTERS
from studies.services.sources import (
    ConvertedDataset,
    LicenceNotAccepted,
    SourceError,
    convert,
    write_jsonl,
)

CONCORDIA = "concordia"  # the import layout itself (JSONL or CSV, told by the file name)
IMPORT_FORMATS = (CONCORDIA, *sorted(ADAPTERS))
FORMAT_LABELS = {
    CONCORDIA: "Concordia JSONL / CSV",
    "label-studio": "Label Studio (JSON export)",
    "argilla": "Argilla (dataset export)",
    "langfuse": "Langfuse (scores / dataset run export)",
    "langsmith": "LangSmith (dataset + feedback export)",
    "otel": "OpenTelemetry (OTLP/JSON gen_ai spans)",
}
FORMAT_CHOICES = [(code, FORMAT_LABELS.get(code, code)) for code in IMPORT_FORMATS]


def is_adapter(file_format: str) -> bool:
    return file_format in ADAPTERS


def import_any(path: Path | str, options: ImportOptions) -> ImportSummary:
    """Import ``path`` in ``options.file_format``: a Concordia layout (jsonl, csv) as is,
    a tool's export (label-studio, argilla, langfuse, langsmith, otel) through its adapter."""
    if not is_adapter(options.file_format):
        return import_file(path, options)
    try:
        converted = convert(options.file_format, path)
    except SourceError as exc:
        raise _located(exc) from exc
    except (KeyError, ValueError) as exc:
        raise ImportValidationError([LineError(0, "", str(exc))]) from exc
    return import_converted(converted, options)


def load_benchmark(
    name: str,
    options: ImportOptions,
    *,
    source: Path | str | None = None,
    revision: str | None = None,
    accept_licence: bool = False,
    loader_options: dict[str, Any] | None = None,
) -> ImportSummary:
    """Convert benchmark ``name`` (files at ``source``, else fetched at ``revision`` into
    the data folder) and import it into ``options.dataset``. Raises LicenceNotAccepted for
    a non-commercial licence without ``accept_licence``, ImportValidationError (nothing
    written) for a malformed file."""
    try:
        converted = convert(
            name,
            source,
            accept_licence=accept_licence,
            revision=revision,
            cache_dir=Path(settings.DATA_DIR) / "benchmarks",
            **(loader_options or {}),
        )
    except LicenceNotAccepted:
        raise
    except SourceError as exc:
        raise _located(exc) from exc
    except (KeyError, ValueError) as exc:
        raise ImportValidationError([LineError(0, "", str(exc))]) from exc
    return import_converted(converted, options)


def import_converted(converted: ConvertedDataset, options: ImportOptions) -> ImportSummary:
    """Write ``converted`` out, then import its records and pairs in one transaction."""
    folder = Path(settings.DATA_DIR) / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="convert-", dir=folder) as tmp:
        records_path = Path(tmp) / "records.jsonl"
        pairs_path = Path(tmp) / "pairs.jsonl"
        try:
            n_records, n_pairs = write_jsonl(converted, records_path, pairs_path)
        except SourceError as exc:
            raise _located(exc) from exc
        if not n_records and not n_pairs:
            raise ImportValidationError(
                [LineError(0, "", f"{converted.title}: the export holds no records")]
            )
        base = dataclasses.replace(options, file_format="jsonl")
        with transaction.atomic():
            created = _declared_aspects(converted, options) if options.create_aspects else []
            summary = ImportSummary(dataset=options.dataset)
            if n_records:
                summary = import_file(records_path, base)
            if n_pairs:
                _add(summary, import_file(pairs_path, base))
            summary.aspects_created = [*created, *summary.aspects_created]
            _describe(converted, options, summary)
    summary.notes = [*converted.notes, *summary.notes]
    return summary


def _declared_aspects(converted: ConvertedDataset, options: ImportOptions) -> list[str]:
    """Create the source's aspects that match none of the owner's or the shared ones, with
    their kind, labels and definition (the import would only guess them from the values);
    the codes created. Inside the import's transaction: a file with errors keeps none."""
    names = aspect_names(options.owner)
    task = TaskKind.objects.get(code=options.task)
    created = []
    for spec in converted.aspects:
        if find_aspect(names, spec.name) is not None:
            continue
        fields = new_aspect_fields(spec.name)
        aspect = Aspect(
            **{**fields, "code": free_code(fields["code"], options.owner)},
            owner=options.owner,
            definition=spec.definition,
            source=spec.source or converted.title,
            kind=spec.kind,
        )
        if spec.kind == "scale":
            aspect.scale_min, aspect.scale_max = float(spec.low), float(spec.high)  # type: ignore[arg-type]
        else:
            aspect.labels = [label_text(label) for label in spec.labels]
            aspect.ordered = spec.ordered
            if spec.kind == "binary":
                aspect.positive = label_text(spec.positive)
        aspect._changed_by = options.owner
        aspect.save()
        aspect.tasks.add(task)
        names = aspect_names(options.owner)
        created.append(aspect.code)
    return created


def _located(exc: SourceError) -> ImportValidationError:
    """The importer's located error for a converter's problem (file, place, field)."""
    problem = exc.problem
    where = ", ".join(p for p in (Path(problem.file).name, problem.where) if p)
    return ImportValidationError(
        [LineError(_line(problem.where), problem.field, f"{where}: {problem.message}")]
    )


def _line(where: str) -> int:
    """The line number of a problem located as ``line 7`` (0 for other places)."""
    match = re.match(r"line (\d+)", where)
    return int(match.group(1)) if match else 0


def _add(total: ImportSummary, more: ImportSummary) -> None:
    total.records += more.records
    for group in ("documents", "outputs", "judgments", "metric_scores", "pairwise_judgments"):
        for key, value in getattr(more, group).items():
            getattr(total, group)[key] += value
    for group in ("aspects_created", "metric_runs", "scales", "merged", "notes"):
        getattr(total, group).extend(
            x for x in getattr(more, group) if x not in getattr(total, group)
        )
    total.seconds += more.seconds


def _describe(converted: ConvertedDataset, options: ImportOptions, summary: ImportSummary) -> None:
    """Record the source (licence, citation, provenance) on the dataset, and give the
    aspects this import created the source's definitions."""
    dataset = owned_dataset(options.dataset, options.owner)
    if dataset is None:
        return
    meta = converted.metadata()
    Dataset.objects.filter(pk=dataset.pk).update(source_info=meta)
    if not dataset.description and converted.title:
        Dataset.objects.filter(pk=dataset.pk).update(description=converted.title)
    created = set(summary.aspects_created)
    for spec in converted.aspects:
        aspect = Aspect.objects.filter(
            key=aspect_key(spec.name), owner=options.owner, code__in=created
        ).first()
        if aspect is None:
            continue
        aspect.definition = spec.definition
        aspect._changed_by = options.owner
        aspect.source = (spec.source or converted.title)[:255]
        aspect.save(update_fields=["definition", "source"])
