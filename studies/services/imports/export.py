"""Exporting a dataset in the import's own formats (JSONL, CSV), streaming in chunks of
outputs: an export imports again as the same dataset."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Avg

from studies.models import Aspect, Dataset, Document, Judgment, MetricScore, Output
from studies.services.csvfile import CsvWriter
from studies.services.imports.options import _batched


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
