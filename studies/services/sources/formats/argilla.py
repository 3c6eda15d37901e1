"""Argilla 2.x dataset export (``import_records --format argilla``) and export back.

Layout (https://docs.argilla.io/latest/how_to_guides/import_export/ "Export to Disk";
``argilla/src/argilla/datasets/_io/_disk.py`` and ``records/_resource.py``
``Record.to_dict`` in argilla-io/argilla): ``Dataset.to_disk(path)`` writes a folder with
``records.json`` and ``.argilla/settings.json`` (and ``.argilla/dataset.json``);
``dataset.records.to_json(file)`` writes ``records.json`` alone. ``records.json`` is a JSON
array of ``{"id", "fields": {name: text}, "metadata": {name: value}, "suggestions":
{question: {"value", "score", "agent"}}, "responses": {question: [{"value", "user_id",
"status"?}]}, "vectors", "_server_id"}``. ``settings.json`` lists the ``questions``, each
with ``name`` and ``settings`` (``{"type": "rating", "options": [{"value": 1}, ...]}``,
``{"type": "label_selection", "options": [{"value", "text"}]}``, ...).

Mapping: ``fields`` (then ``metadata``) name the document, system, source and output as
for Label Studio (see the options); each submitted response (``status`` absent or
``submitted``) is an annotator's value for the question (the aspect), keyed by
``user_id``; a record with fields ``output_a`` and ``output_b`` is pairwise, its label
answers (a, b, tie) pair lines; metadata ``annotators.<aspect>`` holds values no Argilla
question can (fractions). Suggestions with a numeric value become ``metrics``
(``<agent>:<question>``, or the question alone without an agent); metadata
``human.<aspect>`` gives a ``human`` value no annotator gave. Aspect kinds come from
``settings.json`` where present (ratings are scales over their options, label questions
binary or categorical), else from the values. Export writes the ``to_disk`` folder back:
integer values 0-10 and labels as responses of rating and label questions, other annotator
values as ``annotators.<aspect>`` metadata, ``human`` values no annotator gave as
``human.<aspect>`` metadata, metrics as suggestions.
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
from studies.services.sources.readers import fail, find_file, iter_json_items
from studies.services.sources.spec import Conversion, Format
from studies.services.sources.types import Row

SETTINGS = ".argilla/settings.json"
COUNTED = (None, "submitted")


def read(path: Path, options: dict[str, Any]) -> Conversion:
    file = find_file(path, "records.json", "*.json", "*.jsonl")
    scan = AspectScan()
    _settings(path, scan)
    for where, item in iter_json_items(file):
        _item(file, where, item, options, scan)
    aspects = scan.specs(f"Argilla export {path.name}")
    by_name = {spec.name: spec for spec in aspects}

    def records() -> Iterator[Row]:
        for where, item in iter_json_items(file):
            parsed = _item(file, where, item, options, None)
            if parsed["kind"] == "output":
                votes = parsed["annotators"]
                human = {**parsed["human"], **human_from(by_name, votes)}
                yield record(
                    parsed["doc_id"],
                    parsed["system_id"],
                    parsed["source"],
                    parsed["output"],
                    references=parsed["references"],
                    human=human,
                    annotators=votes,
                    metrics=parsed["metrics"],
                    context=parsed["context"],
                )

    def pairs() -> Iterator[Row]:
        for where, item in iter_json_items(file):
            parsed = _item(file, where, item, options, None)
            if parsed["kind"] == "pair":
                yield from parsed["pairs"]

    return Conversion(records, pairs, aspects)


def _settings(path: Path, scan: AspectScan) -> None:
    file = path / SETTINGS if path.is_dir() else path.parent / SETTINGS
    if not file.is_file():
        return
    try:
        settings = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise fail(file, "", "", f"not valid JSON ({exc})") from None
    questions = settings.get("questions") if isinstance(settings, dict) else None
    for i, question in enumerate(questions or []):
        name = question.get("name") if isinstance(question, dict) else None
        config = question.get("settings") if isinstance(question, dict) else None
        if not isinstance(name, str) or not isinstance(config, dict):
            raise fail(file, f"$.questions[{i}]", "name/settings", "missing")
        values = [o.get("value") for o in config.get("options") or [] if isinstance(o, dict)]
        ratings = [n for n in (number(v) for v in values) if n is not None]
        if config.get("type") == "rating" and ratings:
            scan.scales[name] = (min(ratings), max(ratings))
        elif config.get("type") == "label_selection" and values:
            scan.declared_labels[name] = tuple(str(v) for v in values)


def _item(
    path: Path, where: str, item: Any, options: dict[str, Any], scan: AspectScan | None
) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise fail(path, where, "", 'expected a record object {"fields": ..., "responses": ...}')
    fields, metadata = item.get("fields"), item.get("metadata") or {}
    if not isinstance(fields, dict):
        raise fail(path, where, "fields", 'missing: a record holds its texts under "fields"')
    if not isinstance(metadata, dict):
        raise fail(path, where, "metadata", "expected an object")
    data = {**metadata, **fields}
    doc = pick(data, options["doc_field"]) or item.get("id")
    if doc is None:
        raise fail(
            path, where, f"fields.{options['doc_field']}", "missing, and the record has no id"
        )
    source = text(pick(data, options["source_field"], SOURCE_FALLBACKS))
    if source is None:
        raise fail(path, where, f"fields.{options['source_field']}", "missing")
    is_pair = "output_a" in fields and "output_b" in fields
    votes = _responses(path, where, item.get("responses") or {}, is_pair, scan)
    for key, values in metadata.items():  # values no Argilla question holds (export)
        if key.startswith("annotators.") and isinstance(values, dict):
            votes.setdefault(key[len("annotators.") :], {}).update(values)
            for value in values.values():
                if scan is not None:
                    scan.see(key[len("annotators.") :], value)
    context = {
        k: v
        for k, v in metadata.items()
        if k not in KNOWN_FIELDS and not k.startswith(("human.", "annotators."))
    }
    if is_pair:
        lines = [
            pair(
                short_id(str(doc)),
                source,
                str(data.get("system_a", "a")),
                text(fields["output_a"]) or "",
                str(data.get("system_b", "b")),
                text(fields["output_b"]) or "",
                aspect=aspect,
                annotator=annotator,
                winner=winner,
                extra=context or None,
            )
            for aspect, by_user in votes.items()
            for annotator, winner in by_user.items()
        ]
        return {"kind": "pair", "pairs": lines}
    output = text(pick(data, options["output_field"], OUTPUT_FALLBACKS))
    if not output:
        raise fail(path, where, f"fields.{options['output_field']}", "missing or empty")
    human = {}
    for key, value in metadata.items():
        if key.startswith("human."):
            human[key[len("human.") :]] = value
            if scan is not None:
                scan.see(key[len("human.") :], value)
    references = data.get("references") or []
    return {
        "kind": "output",
        "doc_id": short_id(str(doc)),
        "system_id": short_id(
            str(pick(data, options["system_field"]) or options["default_system"])
        ),
        "source": source,
        "output": output,
        "references": [references]
        if isinstance(references, str)
        else [text(r) or "" for r in references],
        "annotators": votes,
        "human": human,
        "metrics": _suggestions(path, where, item.get("suggestions") or {}),
        "context": context,
    }


def _responses(
    path: Path, where: str, responses: Any, is_pair: bool, scan: AspectScan | None
) -> dict[str, dict[str, Any]]:
    if not isinstance(responses, dict):
        raise fail(path, where, "responses", "expected an object of question: [responses]")
    votes: dict[str, dict[str, Any]] = {}
    for question, answers in responses.items():
        if not isinstance(answers, list):
            raise fail(path, where, f"responses.{question}", "expected a list of responses")
        for j, answer in enumerate(answers):
            place = f"responses.{question}[{j}]"
            if not isinstance(answer, dict) or "value" not in answer:
                raise fail(path, where, place, 'expected {"value", "user_id"}')
            if answer.get("status") not in COUNTED:
                continue  # drafts and discarded answers are not judgments
            user = answer.get("user_id")
            if not isinstance(user, str) or not user:
                raise fail(path, where, f"{place}.user_id", "missing: the annotator is needed")
            value = answer["value"]
            if is_pair:
                if not isinstance(value, str) or value.lower() not in WINNER_WORDS:
                    raise fail(
                        path, where, f"{place}.value", f"expected a, b or tie, got {value!r}"
                    )
                value = WINNER_WORDS[value.lower()]
                if scan is not None:
                    scan.pairwise.add(question)
            elif isinstance(value, str) or number(value) is not None:
                if scan is not None:
                    scan.see(question, value)
            else:
                raise fail(
                    path, where, f"{place}.value", f"expected a label or a number, got {value!r}"
                )
            votes.setdefault(question, {})[user] = value
    return votes


def _suggestions(path: Path, where: str, suggestions: Any) -> dict[str, float]:
    if not isinstance(suggestions, dict):
        raise fail(path, where, "suggestions", "expected an object of question: suggestion")
    metrics = {}
    for question, suggestion in suggestions.items():
        if isinstance(suggestion, dict) and number(suggestion.get("value")) is not None:
            metrics[metric_name(suggestion.get("agent"), question)] = suggestion["value"]
    return metrics


def export(
    records: Iterable[Row], pairs: Iterable[Row], path: Path, options: dict[str, Any]
) -> None:
    """Write a ``Dataset.to_disk`` folder (``records.json``, ``.argilla/settings.json``)."""
    (path / ".argilla").mkdir(parents=True, exist_ok=True)
    ratings: dict[str, set[int]] = {}
    labels: dict[str, set[str]] = {}
    with (path / "records.json").open("w", encoding="utf-8") as fh:
        fh.write("[")
        for n, item in enumerate(_items(records, pairs, ratings, labels)):
            fh.write(("," if n else "") + "\n" + json.dumps(item, ensure_ascii=False))
        fh.write("\n]\n")
    questions = [
        {
            "name": name,
            "title": name,
            "required": False,
            "settings": {
                "type": "rating",
                "options": [{"value": v} for v in range(min(vs), max(vs) + 1)],
            },
        }
        for name, vs in sorted(ratings.items())
    ] + [
        {
            "name": name,
            "title": name,
            "required": False,
            "settings": {
                "type": "label_selection",
                "options": [{"value": v, "text": v} for v in sorted(vs)],
            },
        }
        for name, vs in sorted(labels.items())
    ]
    (path / SETTINGS).write_text(json.dumps({"questions": questions}, indent=1), encoding="utf-8")


def _items(
    records: Iterable[Row],
    pairs: Iterable[Row],
    ratings: dict[str, set[int]],
    labels: dict[str, set[str]],
) -> Iterator[dict[str, Any]]:
    for row in records:
        fields = {k: row[k] for k in ("doc_id", "system_id", "source", "output")}
        metadata: dict[str, Any] = {"references": row["references"], **(row.get("context") or {})}
        responses: dict[str, list[dict[str, Any]]] = {}
        annotators = row.get("annotators") or {}
        for aspect, values in annotators.items():
            if all(_answerable(value) for value in values.values()):
                for user, value in values.items():
                    responses.setdefault(aspect, []).append(
                        {"value": value, "user_id": user, "status": "submitted"}
                    )
                    _remember(aspect, value, ratings, labels)
            else:  # e.g. fractional scores: no rating question holds them
                metadata[f"annotators.{aspect}"] = dict(values)
        for aspect, value in (row.get("human") or {}).items():
            if aspect not in annotators:
                metadata[f"human.{aspect}"] = value
        suggestions = {
            name: {"value": v, "score": None, "agent": None}
            for name, v in (row.get("metrics") or {}).items()
        }
        yield {
            "id": f"{row['doc_id']}/{row['system_id']}",
            "fields": fields,
            "metadata": metadata,
            "suggestions": suggestions,
            "responses": responses,
            "vectors": {},
        }
    for n, line in enumerate(pairs):
        fields = {
            k: line[k] for k in ("doc_id", "source", "system_a", "output_a", "system_b", "output_b")
        }
        metadata = {
            k: v
            for k, v in line.items()
            if k not in fields and k not in ("aspect", "annotator", "winner")
        }
        labels.setdefault(line["aspect"], set()).update(("a", "b", "tie"))
        yield {
            "id": f"pair-{n}",
            "fields": fields,
            "metadata": metadata,
            "suggestions": {},
            "responses": {
                line["aspect"]: [
                    {"value": line["winner"], "user_id": line["annotator"], "status": "submitted"}
                ]
            },
            "vectors": {},
        }


def _answerable(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10
    )


def _remember(
    aspect: str, value: Any, ratings: dict[str, set[int]], labels: dict[str, set[str]]
) -> None:
    if isinstance(value, str):
        labels.setdefault(aspect, set()).add(value)
    else:
        ratings.setdefault(aspect, set()).add(value)


FORMAT = Format(
    name="argilla",
    title="Argilla",
    doc_url="https://docs.argilla.io/latest/how_to_guides/import_export/",
    read=read,
    options=FIELD_OPTIONS,
    export=export,
)
