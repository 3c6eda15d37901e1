"""Langfuse traces, scores and dataset runs (``import_records --format langfuse``).

Layout (https://langfuse.com/docs/api-and-data-platform/features/export-from-ui: table
batch exports as JSON/JSONL, and a single trace's "Download JSON", holding the trace with
its ``observations`` and ``scores``; the public API's list endpoints answer pages
``{"data": [...], "meta": {...}}``, https://api.reference.langfuse.com): a file or folder
of such exports, in any mix. Items are told apart by their fields: a trace ``{"id",
"name", "input", "output", "sessionId", "userId", "metadata", "release", "version", ...}``
(its ``scores`` list, if any, read too); a score ``{"id", "traceId", "observationId",
"name", "value", "stringValue", "dataType": "NUMERIC" | "CATEGORICAL" | "BOOLEAN",
"source": "ANNOTATION" | "API" | "EVAL", "authorUserId", "comment"}``; a dataset item
``{"id", "datasetId", "input", "expectedOutput", "metadata"}``; a dataset run item
``{"datasetItemId", "traceId", "datasetRunName" | "runName"}``, alone or in a dataset run
``{"name", "datasetRunItems": [...]}``.

Mapping: a trace with an output is one record. In a dataset run its document is the
dataset item (``doc_id`` the item id, ``source`` its input, ``references`` its expected
output) and its system the run name; otherwise ``doc_id`` is ``metadata.doc_id`` (the
``doc_field`` option) or a digest of the input, the system ``metadata.system_id``, the
release, the version or the trace name. Scores from the ``human_sources`` (default
``ANNOTATION``: made in Langfuse's annotation UI or queues) are ``annotators`` values keyed
by ``authorUserId``; the others (``API``, ``EVAL``: SDK scores, LLM-as-a-judge) numeric
``metrics`` (BOOLEAN as 0/1); categorical machine scores have no place as a metric and are
counted in the notes. Scores on sessions or dataset runs (no ``traceId``) are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import digest, human_from, record, short_id
from studies.services.sources.formats.common import AspectScan, metric_name, number, text
from studies.services.sources.readers import fail, find_all, iter_json_items
from studies.services.sources.spec import Conversion, Format
from studies.services.sources.types import Option, Row

OPTIONS = (
    Option("doc_field", str, "doc_id", "trace metadata key holding the document id"),
    Option("system_field", str, "system_id", "trace metadata key holding the system id"),
    Option(
        "human_sources", str, "ANNOTATION", "score sources that are human judgments (comma list)"
    ),
)
DATA_TYPES = ("NUMERIC", "CATEGORICAL", "BOOLEAN")


def _items(path: Path) -> Iterator[tuple[Path, str, Any]]:
    for file in find_all(path, "*.json", "*.jsonl", "*/*.json", "*/*.jsonl"):
        for where, item in iter_json_items(file, "data"):
            run_items = item.get("datasetRunItems") if isinstance(item, dict) else None
            if isinstance(run_items, list):  # GET /api/public/datasets/{name}/runs/{run}
                for i, run_item in enumerate(run_items):
                    yield (
                        file,
                        f"{where}.datasetRunItems[{i}]",
                        {"datasetRunName": item.get("name"), **run_item},
                    )
            else:
                yield file, where, item


def _kind(item: dict[str, Any]) -> str:
    if "traceId" in item and "name" in item and ("value" in item or "dataType" in item):
        return "score"
    if "datasetItemId" in item:
        return "run_item"
    if "expectedOutput" in item or "datasetId" in item:
        return "dataset_item"
    if "id" in item and ("output" in item or "input" in item):
        return "trace"
    return "other"


def read(path: Path, options: dict[str, Any]) -> Conversion:
    human_sources = {s.strip().upper() for s in options["human_sources"].split(",") if s.strip()}
    scores: dict[str, list[tuple[str, str, Any, bool]]] = {}  # trace -> (aspect, who, value, human)
    runs: dict[str, tuple[str, str]] = {}  # trace -> (dataset item, run name)
    items: dict[str, tuple[str | None, str | None]] = {}  # dataset item -> (input, expected)
    scan = AspectScan()
    notes: list[str] = []
    skipped = {
        "categorical machine scores": 0,
        "scores without a trace": 0,
        "traces without output": 0,
    }
    for file, where, item in _items(path):
        if not isinstance(item, dict):
            raise fail(file, where, "", "expected an object")
        kind = _kind(item)
        nested = item.get("scores") if kind == "trace" else None
        for place, score in [(where, item)] if kind == "score" else _nested(where, nested):
            parsed = _score(file, place, score, human_sources)
            if parsed is None:
                skipped["scores without a trace"] += 1
                continue
            trace, aspect, who, value, human = parsed
            if not human and number(value) is None:
                skipped["categorical machine scores"] += 1
                continue
            if human:
                scan.see(aspect, value)
            scores.setdefault(trace, []).append((aspect, who, value, human))
        if kind == "run_item":
            run_trace, item_id = item.get("traceId"), item.get("datasetItemId")
            run = item.get("datasetRunName") or item.get("runName") or item.get("datasetRunId")
            if not isinstance(run_trace, str) or not isinstance(item_id, str) or not run:
                raise fail(file, where, "traceId/datasetItemId/datasetRunName", "missing")
            runs[run_trace] = (item_id, str(run))
        elif kind == "dataset_item":
            if not isinstance(item.get("id"), str):
                raise fail(file, where, "id", "a dataset item needs its id")
            items[item["id"]] = (text(item.get("input")), text(item.get("expectedOutput")))
    aspects = scan.specs(f"Langfuse export {path.name}")
    by_name = {spec.name: spec for spec in aspects}

    def records() -> Iterator[Row]:
        for file, where, item in _items(path):
            if not isinstance(item, dict) or _kind(item) != "trace":
                continue
            output = text(item.get("output"))
            if not output:
                skipped["traces without output"] += 1
                continue
            trace_id = item["id"]
            if not isinstance(trace_id, str):
                raise fail(file, where, "id", "a trace id must be text")
            metadata: dict[str, Any] = (
                item["metadata"] if isinstance(item.get("metadata"), dict) else {}
            )
            source, references = text(item.get("input")) or "", []
            if trace_id in runs:
                doc_id, system = runs[trace_id]
                given, expected = items.get(doc_id, (None, None))
                source = given if given is not None else source
                references = [expected] if expected else []
            else:
                doc_id = str(metadata.get(options["doc_field"]) or f"p-{digest(source)}")
                system = str(
                    metadata.get(options["system_field"])
                    or item.get("release")
                    or item.get("version")
                    or item.get("name")
                    or "default"
                )
            annotators: dict[str, dict[str, Any]] = {}
            metrics: dict[str, float] = {}
            for aspect, who, value, human in scores.get(trace_id, []):
                if human:
                    annotators.setdefault(aspect, {})[who] = value
                else:
                    metrics[metric_name(aspect)] = float(value)
            yield record(
                short_id(doc_id),
                short_id(system),
                source,
                output,
                references=references,
                human=human_from(by_name, annotators),
                annotators=annotators,
                metrics=metrics,
                context={"trace_id": trace_id},
            )
        notes[:] = [f"{n} {what} skipped" for what, n in skipped.items() if n]

    return Conversion(records, aspects=aspects, notes=notes)


def _nested(where: str, scores: Any) -> list[tuple[str, Any]]:
    if scores is None:
        return []
    if not isinstance(scores, list):
        return [(f"{where}.scores", scores)]
    return [(f"{where}.scores[{i}]", score) for i, score in enumerate(scores)]


def _score(
    file: Path, where: str, score: Any, human_sources: set[str]
) -> tuple[str, str, str, Any, bool] | None:
    if not isinstance(score, dict):
        raise fail(file, where, "", "expected a score object")
    trace, name = score.get("traceId"), score.get("name")
    if trace is None:
        return None
    if not isinstance(trace, str) or not isinstance(name, str) or not name:
        raise fail(file, where, "traceId/name", "a score needs its trace id and name as text")
    data_type = score.get("dataType", "NUMERIC")
    if data_type not in DATA_TYPES:
        raise fail(
            file, where, "dataType", f"expected one of {', '.join(DATA_TYPES)}, got {data_type!r}"
        )
    if data_type == "CATEGORICAL":
        value = score.get("stringValue")
        if not isinstance(value, str):
            raise fail(file, where, "stringValue", "a categorical score needs its label")
    else:
        value = score.get("value")
        if number(value) is None:
            raise fail(file, where, "value", f"expected a number, got {value!r}")
        if data_type == "BOOLEAN":
            if value not in (0, 1):
                raise fail(file, where, "value", f"a boolean score is 0 or 1, got {value!r}")
            value = int(value)
    human = str(score.get("source", "API")).upper() in human_sources
    who = str(score.get("authorUserId") or "annotator")
    return trace, name, who, value, human


FORMAT = Format(
    name="langfuse",
    title="Langfuse",
    doc_url="https://langfuse.com/docs/api-and-data-platform/features/export-from-ui",
    read=read,
    options=OPTIONS,
)
