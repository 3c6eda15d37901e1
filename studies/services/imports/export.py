"""Exporting a dataset in the import's own formats (JSONL, CSV), streaming in chunks of
outputs: an export imports again as the same dataset.

``human`` holds per aspect the mean of an output's judgments (a scale aspect) or their
majority label (a binary or categorical one; left out on a tie); the judgments of raters
an import file named go out one by one too, under ``annotators`` (CSV:
``human_<aspect>@<rater>``), each label as its text, so they import again as the same
raters. A rater name two files share on one aspect is written ``<rater> (<file>)``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Avg, Q

from studies.models import Aspect, Dataset, Document, Judgment, MetricScore, Output
from studies.services.csvfile import CsvWriter
from studies.services.imports.options import batched

# a served G-Eval run's column beside its scores: the bound on the probability of the
# labels outside the endpoint's top-k (read as 0) where a score has any, else empty
FLAG_SUFFIX = ":outside_top_k_bound"


def export_dataset(
    dataset: Dataset, file_format: str, *, chunk_size: int = 2000, raw: bool = False
) -> Iterator[str]:
    """Yield the dataset as JSONL lines or CSV rows, streaming in chunks of outputs.

    Human scores are the mean of an output's judgments per aspect (one imported
    judgment exports as itself); metric columns are named by run label, or by
    ``label:run<id>`` where runs share a label. CSV text cells that a spreadsheet would
    run as a formula get a leading ``'`` (the import takes it off again) unless ``raw``.
    A served G-Eval run with scores read from the endpoint's top-k alone adds a column
    (a key) ``label`` + :data:`FLAG_SUFFIX`: the bound on what its unread labels hold.
    """
    found = Aspect.objects.filter(judgments__output__document__dataset=dataset).distinct()
    aspects = {a.pk: a.key for a in found}
    labelled = {a.pk: a for a in found if a.is_labelled}
    raters = _rater_columns(dataset, aspects)
    runs = run_columns(dataset.runs.order_by("label", "pk").values_list("pk", "label"))
    docs = Document.objects.filter(dataset=dataset)
    outputs = (
        Output.objects.filter(document__dataset=dataset)
        .select_related("document")
        .order_by("document__doc_key", "system_id")
    )
    if file_format == "csv":
        own = outputs.filter(references__isnull=False).values_list("references", flat=True)
        n_refs = max(
            (len(refs or []) for refs in [*docs.values_list("references", flat=True), *own]),
            default=0,
        )
        has_context = docs.filter(context__isnull=False).exists()
        yield from _csv_export(
            outputs, (aspects, labelled, raters), runs, n_refs, has_context, chunk_size, raw
        )
    elif file_format == "jsonl":
        for output, human, metrics, rated in _rows(
            outputs, (aspects, labelled, raters), runs, chunk_size
        ):
            record: dict[str, Any] = {
                "doc_id": output.document.doc_key,
                "system_id": output.system_id,
                "source": output.document.source,
                "references": output.reference_texts(),
                "output": output.text,
                "human": human,
            }
            if rated:
                annotators: dict[str, dict[str, Any]] = {}
                for (key, rater), value in rated.items():
                    annotators.setdefault(key, {})[rater] = value
                record["annotators"] = annotators
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


Raters = dict[tuple[int, str, str], tuple[str, str]]  # (aspect, file, rater) -> column
Human = tuple[dict[int, str], dict[int, Aspect], Raters]  # keys, label aspects, raters


def _rater_columns(dataset: Dataset, aspects: dict[int, str]) -> Raters:
    """(aspect id, import file, rater) -> (aspect key, rater as written) of the dataset's
    judgments by a rater an import file named."""
    found = (
        Judgment.objects.filter(output__document__dataset=dataset)
        .exclude(rater="")
        .values_list("aspect_id", "import_file", "rater")
        .distinct()
        .order_by("aspect_id", "rater", "import_file")
    )
    rows = list(found)
    files = defaultdict(set)
    for aspect, file, rater in rows:
        files[(aspect, rater)].add(file)
    return {
        (aspect, file, rater): (
            aspects[aspect],
            rater if len(files[(aspect, rater)]) == 1 else f"{rater} ({file})",
        )
        for aspect, file, rater in rows
    }


def _majority(labels: list[str]) -> str | None:
    """The label most judgments give (None on a tie)."""
    counts = Counter(labels).most_common(2)
    return counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else None


def _rows(
    outputs: Any, human_columns: Human, runs: dict[int, str], chunk_size: int
) -> Iterator[tuple[Output, dict[str, Any], dict[str, Any], dict[tuple[str, str], Any]]]:
    aspects, labelled, raters = human_columns
    for chunk in batched(outputs.iterator(chunk_size=chunk_size), chunk_size):
        ids = [o.pk for o in chunk]
        human: dict[int, dict[str, Any]] = defaultdict(dict)
        for row in (
            Judgment.objects.filter(output_id__in=ids)
            .exclude(aspect_id__in=list(labelled))
            .values("output_id", "aspect_id")
            .annotate(mean=Avg("value"))
            .order_by("output_id", "aspect_id")
        ):
            human[row["output_id"]][aspects[row["aspect_id"]]] = row["mean"]
        rated: dict[int, dict[tuple[str, str], Any]] = defaultdict(dict)
        if labelled or raters:
            given: dict[tuple[int, int], list[str]] = defaultdict(list)
            for output, aspect, value, file, rater in (
                Judgment.objects.filter(output_id__in=ids)
                .filter(Q(aspect_id__in=list(labelled)) | ~Q(rater=""))
                .values_list("output_id", "aspect_id", "value", "import_file", "rater")
                .order_by("output_id", "aspect_id", "pk")
            ):
                shown = labelled[aspect].label_of(value) if aspect in labelled else value
                if aspect in labelled:
                    given[(output, aspect)].append(str(shown))
                if rater:
                    rated[output][raters[(aspect, file, rater)]] = shown
            for (output, aspect), labels in given.items():
                majority = _majority(labels)
                if majority is not None:
                    human[output][aspects[aspect]] = majority
        metrics: dict[int, dict[str, Any]] = defaultdict(dict)
        for run_id, output_id, value in MetricScore.objects.filter(
            output_id__in=ids, value__isnull=False
        ).values_list("run_id", "output_id", "value"):
            metrics[output_id][runs[run_id]] = value
        for run_id, output_id, details in MetricScore.objects.filter(
            output_id__in=ids, value__isnull=False, details__has_key="outside_top_k"
        ).values_list("run_id", "output_id", "details"):
            # read from a served endpoint's top-k alone: the most the labels outside hold
            metrics[output_id][f"{runs[run_id]}{FLAG_SUFFIX}"] = details.get("outside_bound")
        for output in chunk:
            yield (
                output,
                dict(sorted(human[output.pk].items())),
                dict(sorted(metrics[output.pk].items())),
                dict(sorted(rated[output.pk].items())),
            )


def _csv_export(
    outputs: Any,
    human_columns: Human,
    runs: dict[int, str],
    n_refs: int,
    has_context: bool,
    chunk_size: int,
    raw: bool,
) -> Iterator[str]:
    aspects, _labelled, raters = human_columns
    human_keys = sorted(set(aspects.values()))
    rater_keys = sorted(set(raters.values()))
    metric_keys = sorted(set(runs.values()))
    flagged = set(
        MetricScore.objects.filter(
            run_id__in=list(runs), value__isnull=False, details__has_key="outside_top_k"
        ).values_list("run_id", flat=True)
    )
    metric_keys += sorted(f"{runs[run_id]}{FLAG_SUFFIX}" for run_id in flagged)
    header = [
        "doc_id",
        "system_id",
        "source",
        *[f"reference_{i + 1}" for i in range(n_refs)],
        "output",
    ]
    header += [f"human_{k}" for k in human_keys] + [f"human_{k}@{r}" for k, r in rater_keys]
    header += [f"metric_{k}" for k in metric_keys]
    if has_context:
        header.append("context")
    writer = CsvWriter(raw=raw)
    yield writer.row(header)
    for output, human, metrics, rated in _rows(outputs, human_columns, runs, chunk_size):
        refs = output.reference_texts()
        row: list[Any] = [output.document.doc_key, output.system_id, output.document.source]
        row += refs + [""] * (n_refs - len(refs)) + [output.text]
        row += [human.get(k) for k in human_keys] + [rated.get(k) for k in rater_keys]
        row += [metrics.get(k) for k in metric_keys]
        if has_context:
            context = output.document.context
            row.append(None if context is None else json.dumps(context, ensure_ascii=False))
        yield writer.row(row)
