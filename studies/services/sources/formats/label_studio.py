"""Label Studio JSON export (``import_records --format label-studio``) and export back.

Layout (https://labelstud.io/guide/task_format "Label Studio JSON format of annotated
tasks"; result values per tag: https://labelstud.io/tags/choices, /tags/rating,
/tags/number, /tags/pairwise): a JSON array of tasks ``{"id", "data": {...},
"annotations": [{"id", "completed_by", "was_cancelled", "result": [{"from_name",
"to_name", "type", "value"}]}], "predictions": [{"model_version", "score", "result":
[...]}]}``. ``completed_by`` is the annotator's user id (an integer; some exports give an
object with ``id`` and ``email``). Result values: ``choices`` ``{"choices": [label]}``,
``rating`` ``{"rating": n}``, ``number`` ``{"number": x}``, ``pairwise`` ``{"selected":
"left" | "right"}``; other types (text areas, regions) are skipped.

Mapping: ``data`` names the document, system, source and output (``doc_id``,
``system_id``, ``source``, ``output`` by default; see the options), so a per-output task
becomes one record whose ``annotators`` hold each non-cancelled annotation's values by
``from_name`` (the aspect), keyed by ``completed_by``; a task with ``output_a`` and
``output_b`` (and ``system_a``/``system_b``) is pairwise, its ``pairwise`` results (or
``choices`` of a, b, tie) one pair line per annotator. Prediction ratings and numbers
become ``metrics`` (``<model_version>:<from_name>``, or ``from_name`` alone when the
prediction has no model version), a prediction's ``score`` ``<model_version>:score``. The
aspects' kinds come from the values seen: choices between yes/no-like labels are binary,
other choices categorical, ratings and numbers scales. Export writes the same layout back
(numbers as ``number``, labels as ``choices``, a as ``left``, b as ``right``, tie as the
choice ``tie``), so reading an export gives back the records and pairs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import human_from, pair, record, short_id
from studies.services.sources.formats.common import (
    FIELD_OPTIONS,
    KNOWN_FIELDS,
    OUTPUT_FALLBACKS,
    SOURCE_FALLBACKS,
    WINNER_WORDS,
    AspectScan,
    metric_name,
    number,
    pick,
    text,
)
from studies.services.sources.readers import fail, grouped, iter_json_items
from studies.services.sources.spec import Conversion, Format
from studies.services.sources.types import Row

VALUE_KEYS = {"choices": "choices", "rating": "rating", "number": "number", "pairwise": "selected"}
SIDES = {"left": "a", "right": "b"}


def read(path: Path, options: dict[str, Any]) -> Conversion:
    scan = AspectScan()
    for where, task in iter_json_items(path):
        _task(path, where, task, options, scan)
    aspects = scan.specs(f"Label Studio export {path.name}")
    by_name = {spec.name: spec for spec in aspects}

    def records() -> Iterator[Row]:
        for where, task in iter_json_items(path):
            parsed = _task(path, where, task, options, None)
            if parsed["kind"] == "output":
                yield record(
                    parsed["doc_id"],
                    parsed["system_id"],
                    parsed["source"],
                    parsed["output"],
                    references=parsed["references"],
                    human=human_from(by_name, parsed["annotators"]),
                    annotators=parsed["annotators"],
                    metrics=parsed["metrics"],
                    context=parsed["context"],
                )

    def pairs() -> Iterator[Row]:
        for where, task in iter_json_items(path):
            parsed = _task(path, where, task, options, None)
            if parsed["kind"] == "pair":
                yield from parsed["pairs"]

    return Conversion(records, pairs, aspects)


def _task(
    path: Path, where: str, task: Any, options: dict[str, Any], scan: AspectScan | None
) -> dict[str, Any]:
    """One task, checked; values go to ``scan`` on the first pass."""
    if not isinstance(task, dict):
        raise fail(path, where, "", 'expected a task object {"data": ..., "annotations": [...]}')
    data = task.get("data")
    if not isinstance(data, dict):
        raise fail(path, where, "data", 'missing: a task holds its fields under "data"')
    doc = pick(data, options["doc_field"]) or task.get("id")
    if doc is None:
        raise fail(path, where, f"data.{options['doc_field']}", "missing, and the task has no id")
    source = text(pick(data, options["source_field"], SOURCE_FALLBACKS))
    if source is None:
        raise fail(path, where, f"data.{options['source_field']}", "missing")
    is_pair = all(name in data for name in ("output_a", "output_b"))
    votes: dict[str, dict[str, Any]] = {}
    for j, annotation in enumerate(task.get("annotations") or []):
        place = f"annotations[{j}]"
        if not isinstance(annotation, dict):
            raise fail(path, where, place, "expected an annotation object")
        if annotation.get("was_cancelled"):
            continue
        annotator = _annotator(path, where, place, annotation.get("completed_by"))
        results = annotation.get("result")
        if not isinstance(results, list):
            raise fail(path, where, f"{place}.result", "expected a list of results")
        for k, result in enumerate(results):
            found = _value(path, where, f"{place}.result[{k}]", result, is_pair)
            if found is None:
                continue
            aspect, value = found
            votes.setdefault(aspect, {})[annotator] = value
            if scan is not None and is_pair:
                scan.pairwise.add(aspect)
            elif scan is not None:
                scan.see(aspect, value)
    context = {
        k: v for k, v in data.items() if k not in KNOWN_FIELDS and k not in _option_fields(options)
    }
    if isinstance(data.get("context"), dict):
        context = {**data["context"], **context}
    if is_pair:
        lines = [
            pair(
                short_id(str(doc)),
                source,
                str(data.get("system_a", "a")),
                text(data["output_a"]) or "",
                str(data.get("system_b", "b")),
                text(data["output_b"]) or "",
                aspect=aspect,
                annotator=annotator,
                winner=winner,
                extra=context or None,
            )
            for aspect, by_annotator in votes.items()
            for annotator, winner in by_annotator.items()
        ]
        return {"kind": "pair", "pairs": lines}
    output = text(pick(data, options["output_field"], OUTPUT_FALLBACKS))
    if not output:
        raise fail(path, where, f"data.{options['output_field']}", "missing or empty")
    references = data.get("references") or []
    if isinstance(references, str):
        references = [references]
    return {
        "kind": "output",
        "doc_id": short_id(str(doc)),
        "system_id": short_id(
            str(pick(data, options["system_field"]) or options["default_system"])
        ),
        "source": source,
        "output": output,
        "references": [text(r) or "" for r in references],
        "annotators": votes,
        "metrics": _metrics(path, where, task.get("predictions") or []),
        "context": context,
    }


def _option_fields(options: dict[str, Any]) -> set[str]:
    return {options[o.name] for o in FIELD_OPTIONS if o.name.endswith("_field")}


def _annotator(path: Path, where: str, place: str, completed_by: Any) -> str:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("email") or completed_by.get("id")
    if (
        isinstance(completed_by, bool)
        or not isinstance(completed_by, int | str)
        or completed_by == ""
    ):
        raise fail(
            path, where, f"{place}.completed_by", "missing: the annotator's user id is needed"
        )
    return str(completed_by)


def _value(
    path: Path, where: str, place: str, result: Any, is_pair: bool
) -> tuple[str, Any] | None:
    if not isinstance(result, dict):
        raise fail(path, where, place, "expected a result object")
    kind, aspect, value = result.get("type"), result.get("from_name"), result.get("value")
    if kind not in VALUE_KEYS:
        return None  # text areas, regions: not a judgment Concordia stores
    if not isinstance(aspect, str) or not aspect:
        raise fail(path, where, f"{place}.from_name", "missing: it names the aspect")
    if not isinstance(value, dict) or VALUE_KEYS[kind] not in value:
        raise fail(path, where, f"{place}.value.{VALUE_KEYS[kind]}", f"missing for a {kind} result")
    raw = value[VALUE_KEYS[kind]]
    if kind == "choices":
        if not isinstance(raw, list) or len(raw) != 1 or not isinstance(raw[0], str):
            raise fail(
                path, where, f"{place}.value.choices", f"expected one chosen label, got {raw!r}"
            )
        if is_pair:
            if raw[0].lower() not in WINNER_WORDS:
                raise fail(path, where, f"{place}.value.choices", f"{raw[0]!r} is not a, b or tie")
            return aspect, WINNER_WORDS[raw[0].lower()]
        return aspect, raw[0]
    if kind == "pairwise":
        if not is_pair:
            raise fail(
                path,
                where,
                f"{place}.type",
                "a pairwise result on a task without output_a and output_b",
            )
        if raw not in SIDES:
            raise fail(
                path, where, f"{place}.value.selected", f"expected left or right, got {raw!r}"
            )
        return aspect, SIDES[raw]
    if number(raw) is None:
        raise fail(path, where, f"{place}.value.{kind}", f"expected a number, got {raw!r}")
    if is_pair:
        raise fail(path, where, f"{place}.type", f"a {kind} result on a pairwise task")
    return aspect, raw


def _metrics(path: Path, where: str, predictions: Any) -> dict[str, float]:
    metrics: dict[str, float] = {}
    if not isinstance(predictions, list):
        raise fail(path, where, "predictions", "expected a list")
    for p, prediction in enumerate(predictions):
        if not isinstance(prediction, dict):
            raise fail(path, where, f"predictions[{p}]", "expected an object")
        version = prediction.get("model_version") or None
        if number(prediction.get("score")) is not None:
            metrics[metric_name(version or "prediction", "score")] = float(prediction["score"])
        for result in prediction.get("result") or []:
            if isinstance(result, dict) and result.get("type") in ("rating", "number"):
                raw = (result.get("value") or {}).get(result["type"])
                found = number(raw)
                if found is not None and result.get("from_name"):
                    metrics[metric_name(version, result["from_name"])] = found
    return metrics


def export(
    records: Iterable[Row], pairs: Iterable[Row], path: Path, options: dict[str, Any]
) -> None:
    """Write records and pairs as a Label Studio JSON export (one task per output, one
    per judged system pair), streaming."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for count, task in enumerate(_tasks(records, pairs), start=1):
            task["id"] = count
            fh.write(("," if count > 1 else "") + "\n" + json.dumps(task, ensure_ascii=False))
        fh.write("\n]\n")


def _tasks(records: Iterable[Row], pairs: Iterable[Row]) -> Iterator[dict[str, Any]]:
    for row in records:
        data = {k: row[k] for k in ("doc_id", "system_id", "source", "output", "references")}
        if row.get("context"):
            data["context"] = row["context"]
        by_annotator: dict[str, list[dict[str, Any]]] = {}
        annotators = dict(row.get("annotators") or {})
        for aspect, value in (row.get("human") or {}).items():
            annotators.setdefault(aspect, {"human": value})
        for aspect, values in annotators.items():
            for annotator, value in values.items():
                by_annotator.setdefault(annotator, []).append(_result(aspect, value))
        task: dict[str, Any] = {
            "data": data,
            "annotations": [_annotation(a, r) for a, r in by_annotator.items()],
        }
        if row.get("metrics"):
            task["predictions"] = [
                {"result": [_result(name, v) for name, v in row["metrics"].items()]}
            ]
        yield task
    keyed = (([line["doc_id"], line["system_a"], line["system_b"]], line) for line in pairs)
    for _key, lines in grouped(keyed):
        first = lines[0]
        data = {
            k: first[k]
            for k in ("doc_id", "source", "system_a", "output_a", "system_b", "output_b")
        }
        data.update(
            {
                k: v
                for k, v in first.items()
                if k not in data and k not in ("aspect", "annotator", "winner")
            }
        )
        by_annotator = {}
        for line in lines:
            result = (
                {
                    "from_name": line["aspect"],
                    "to_name": "output_a,output_b",
                    "type": "pairwise",
                    "value": {"selected": "left" if line["winner"] == "a" else "right"},
                }
                if line["winner"] != "tie"
                else _result(line["aspect"], "tie")
            )
            by_annotator.setdefault(line["annotator"], []).append(result)
        yield {"data": data, "annotations": [_annotation(a, r) for a, r in by_annotator.items()]}


def _result(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {
            "from_name": name,
            "to_name": "output",
            "type": "choices",
            "value": {"choices": [value]},
        }
    return {"from_name": name, "to_name": "output", "type": "number", "value": {"number": value}}


def _annotation(annotator: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    completed_by: Any = int(annotator) if annotator.isdigit() else {"email": annotator}
    return {"completed_by": completed_by, "was_cancelled": False, "result": results}


FORMAT = Format(
    name="label-studio",
    title="Label Studio",
    doc_url="https://labelstud.io/guide/task_format",
    read=read,
    options=FIELD_OPTIONS,
    export=export,
)
