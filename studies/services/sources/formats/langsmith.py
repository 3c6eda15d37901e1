"""LangSmith dataset, experiment runs and feedback (``import_records --format langsmith``).

Layout (https://docs.langchain.com/langsmith/feedback-data-format,
https://docs.langchain.com/langsmith/run-data-format and the ``Example`` schema of the
langsmith SDK; exports come from the SDK, ``client.list_examples``, ``client.list_runs``
and ``client.list_feedback``, written one object per line, or from the UI's dataset and
experiment downloads): a file or folder of JSON/JSONL holding, in any mix, examples
``{"id", "dataset_id", "inputs": {...}, "outputs": {...}, "metadata"}``, runs ``{"id",
"name", "run_type", "inputs", "outputs", "reference_example_id", "session_id",
"session_name"?, "parent_run_id", "extra": {"metadata": {...}}}`` and feedback ``{"id",
"run_id", "key", "score", "value", "comment", "correction", "feedback_source": {"type":
"app" | "api" | "model", "metadata", "user_id"?}}``.

Mapping: each root run (no ``parent_run_id``) with outputs is one record: ``doc_id`` its
``reference_example_id`` (the example's inputs as ``source``, its outputs as the
reference), else ``extra.metadata.doc_id`` or a digest of the inputs; ``system_id`` the
``system`` option, ``extra.metadata.system_id``, the experiment's ``session_name`` or
``session_id``. A single-key ``inputs``/``outputs`` object gives its value as text, others
their JSON. Feedback from the ``human_sources`` (default ``app``: annotations in the UI
and annotation queues) goes to ``annotators`` (``value`` when it is a label, else
``score``), keyed by ``feedback_source.user_id`` (or ``ls_user_id``, ``created_by``);
other feedback (``model``: evaluators, ``api``: the SDK) with a numeric score to ``metrics``.
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
    Option("doc_field", str, "doc_id", "run metadata key holding the document id"),
    Option("system_field", str, "system_id", "run metadata key holding the system id"),
    Option("system", str, "", "system id for every run (e.g. the experiment's name)"),
    Option(
        "human_sources", str, "app", "feedback source types that are human judgments (comma list)"
    ),
)


def _items(path: Path) -> Iterator[tuple[Path, str, Any]]:
    for file in find_all(path, "*.jsonl", "*.json", "*/*.json", "*/*.jsonl"):
        for where, item in iter_json_items(file, "data"):
            yield file, where, item


def _kind(item: dict[str, Any]) -> str:
    if "run_id" in item and "run_type" not in item:
        return "feedback"
    if "run_type" in item or "reference_example_id" in item or "parent_run_id" in item:
        return "run"
    if "inputs" in item:
        return "example"
    return "other"


def _flat(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    return text(value)


def read(path: Path, options: dict[str, Any]) -> Conversion:
    human_sources = {s.strip().lower() for s in options["human_sources"].split(",") if s.strip()}
    feedback: dict[str, list[tuple[str, str, Any, bool]]] = {}
    examples: dict[str, tuple[str | None, str | None]] = {}
    scan = AspectScan()
    for file, where, item in _items(path):
        if not isinstance(item, dict):
            raise fail(file, where, "", "expected an object")
        kind = _kind(item)
        if kind == "feedback":
            run, parsed = _feedback(file, where, item, human_sources)
            if parsed is not None:
                feedback.setdefault(run, []).append(parsed)
                if parsed[3]:
                    scan.see(parsed[0], parsed[2])
        elif kind == "example":
            if not isinstance(item.get("id"), str):
                raise fail(file, where, "id", "an example needs its id")
            examples[item["id"]] = (_flat(item.get("inputs")), _flat(item.get("outputs")))
    aspects = scan.specs(f"LangSmith export {path.name}")
    by_name = {spec.name: spec for spec in aspects}
    notes: list[str] = []

    def records() -> Iterator[Row]:
        for file, where, item in _items(path):
            if not isinstance(item, dict) or _kind(item) != "run" or item.get("parent_run_id"):
                continue
            run_id = item.get("id")
            if not isinstance(run_id, str):
                raise fail(file, where, "id", "a run needs its id as text")
            output = _flat(item.get("outputs"))
            if not output:
                message = "runs without outputs skipped"
                if message not in notes:
                    notes.append(message)
                continue
            metadata = (item.get("extra") or {}).get("metadata") or {}
            source, references = _flat(item.get("inputs")) or "", []
            example = item.get("reference_example_id")
            if example:
                given, expected = examples.get(str(example), (None, None))
                source = given if given is not None else source
                references = [expected] if expected else []
                doc_id = str(example)
            else:
                doc_id = str(metadata.get(options["doc_field"]) or f"p-{digest(source)}")
            system = str(
                options["system"]
                or metadata.get(options["system_field"])
                or item.get("session_name")
                or item.get("session_id")
                or "default"
            )
            annotators: dict[str, dict[str, Any]] = {}
            metrics: dict[str, float] = {}
            for key, who, value, human in feedback.get(run_id, []):
                if human:
                    annotators.setdefault(key, {})[who] = value
                else:
                    metrics[metric_name(key)] = float(value)
            yield record(
                short_id(doc_id),
                short_id(system),
                source,
                output,
                references=references,
                human=human_from(by_name, annotators),
                annotators=annotators,
                metrics=metrics,
                context={"run_id": run_id},
            )

    return Conversion(records, aspects=aspects, notes=notes)


def _feedback(
    file: Path, where: str, item: dict[str, Any], human_sources: set[str]
) -> tuple[str, tuple[str, str, Any, bool] | None]:
    run, key = item.get("run_id"), item.get("key")
    if not isinstance(run, str) or not isinstance(key, str) or not key:
        raise fail(file, where, "run_id/key", "feedback needs its run id and key as text")
    source = item.get("feedback_source") or {}
    if not isinstance(source, dict):
        raise fail(file, where, "feedback_source", "expected an object")
    human = str(source.get("type", "api")).lower() in human_sources
    score, value = item.get("score"), item.get("value")
    if isinstance(score, bool):
        score = int(score)
    if score is not None and number(score) is None:
        raise fail(file, where, "score", f"expected a number, got {score!r}")
    if human:
        judged = value if isinstance(value, str) and value else score
        if judged is None:
            raise fail(
                file, where, "score/value", "human feedback with neither a score nor a label"
            )
        who = (
            source.get("user_id")
            or source.get("ls_user_id")
            or item.get("created_by")
            or "annotator"
        )
        return run, (key, str(who), judged, True)
    if score is None:
        return run, None  # a label from a machine: no metric holds it
    return run, (key, "", score, False)


FORMAT = Format(
    name="langsmith",
    title="LangSmith",
    doc_url="https://docs.langchain.com/langsmith/feedback-data-format",
    read=read,
    options=OPTIONS,
)
