"""OpenTelemetry traces with the GenAI semantic conventions (``import_records --format otel``).

Layout: OTLP/JSON (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding), as
the Collector's file exporter writes it, one ``ExportTraceServiceRequest`` (``{"resourceSpans":
[{"resource": {"attributes"}, "scopeSpans": [{"spans": [{"traceId", "spanId", "name",
"attributes": [{"key", "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue"
| "arrayValue" | "kvlistValue"}}], "events": [{"name", "attributes"}]}]}]}]}``) or
``ExportLogsServiceRequest`` (``{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"eventName",
"traceId", "spanId", "attributes", "body"}]}]}]}``) per line, or one such request per file.
GenAI attributes (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/):
``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.response.id``, ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON:
``[{"role", "parts": [{"type": "text", "content"}]}]``), and the older ``gen_ai.prompt`` /
``gen_ai.completion`` (text, or indexed ``gen_ai.prompt.<i>.content``). Evaluations are the
``gen_ai.evaluation.result`` event (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-events/):
``gen_ai.evaluation.name`` (required), ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label``, ``gen_ai.evaluation.explanation``, ``gen_ai.response.id``;
recorded as a span event, or as a log record parented to the span (or naming its response id).

Mapping: each span with a prompt and a completion is one record: ``source`` the prompt
(the text of a lone user message, else the messages' JSON), ``output`` the completion's
text, ``system_id`` the response (else request) model, ``doc_id`` the ``doc_attribute``
(default ``concordia.doc_id``) or a digest of the prompt, so that models answering the same
prompt share a document. Evaluation results with a numeric score are judge scores:
``metrics`` named by ``gen_ai.evaluation.name``; results with only a label are counted in
the notes (a metric is a number).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import digest, record, short_id
from studies.services.sources.formats.common import metric_name, number
from studies.services.sources.readers import fail, find_all, iter_jsonl, open_text
from studies.services.sources.spec import Conversion, Format
from studies.services.sources.types import Option, Row

EVALUATION = "gen_ai.evaluation.result"
OPTIONS = (
    Option("doc_attribute", str, "concordia.doc_id", "span attribute holding the document id"),
    Option(
        "system_attribute", str, "", "span attribute holding the system id (default: the model)"
    ),
)
_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(content|role)$")


def _requests(path: Path) -> Iterator[tuple[Path, str, Any]]:
    for file in find_all(path, "*.jsonl", "*.json", "*/*.json", "*/*.jsonl"):
        with open_text(file) as fh:
            first = fh.readline()
        try:
            json.loads(first)
            single = False
        except ValueError:
            single = True  # one pretty-printed request
        if single:
            with open_text(file) as fh:
                try:
                    yield file, "$", json.load(fh)
                except ValueError as exc:
                    raise fail(file, "", "", f"not valid JSON ({exc})") from None
        else:
            for number_, request in iter_jsonl(file):
                yield file, f"line {number_}", request


def attributes(file: Path, where: str, raw: Any) -> dict[str, Any]:
    """OTLP key/value attributes as a dict of plain values."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise fail(file, where, "attributes", "expected a list of {key, value}")
    found: dict[str, Any] = {}
    for i, attribute in enumerate(raw):
        if not isinstance(attribute, dict) or not isinstance(attribute.get("key"), str):
            raise fail(file, where, f"attributes[{i}].key", "missing")
        found[attribute["key"]] = _any(
            file, where, f"attributes[{i}].value", attribute.get("value")
        )
    return found


def _any(file: Path, where: str, field: str, value: Any) -> Any:
    if not isinstance(value, dict) or len(value) != 1:
        raise fail(
            file,
            where,
            field,
            "expected one of stringValue, intValue, doubleValue, boolValue, arrayValue, kvlistValue",
        )
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        return str(inner)
    if kind == "intValue":
        try:
            return int(inner)  # int64 travels as a JSON string
        except (TypeError, ValueError):
            raise fail(file, where, field, f"intValue {inner!r} is not an integer") from None
    if kind == "doubleValue":
        try:
            return float(inner)  # a number, or "NaN"/"Infinity" as proto3 JSON writes them
        except (TypeError, ValueError):
            raise fail(file, where, field, f"doubleValue {inner!r} is not a number") from None
    if kind == "boolValue":
        return bool(inner)
    if kind == "arrayValue":
        return [_any(file, where, field, v) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return attributes(file, where, (inner or {}).get("values", []))
    raise fail(file, where, field, f"unknown value type {kind!r}")


def _spans(
    file: Path, where: str, request: Any
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    if not isinstance(request, dict):
        raise fail(file, where, "", "expected an OTLP request object")
    resource_spans = request.get("resourceSpans", [])
    if not isinstance(resource_spans, list):
        raise fail(file, where, "resourceSpans", "expected a list")
    for r, resource_span in enumerate(resource_spans):
        resource = attributes(file, where, (resource_span.get("resource") or {}).get("attributes"))
        for s, scope in enumerate(resource_span.get("scopeSpans") or []):
            for k, span in enumerate(scope.get("spans") or []):
                place = f"{where}, resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                if not isinstance(span, dict) or not isinstance(span.get("spanId"), str):
                    raise fail(file, place, "spanId", "missing")
                yield place, span, resource


def _evaluation(file: Path, where: str, attrs: dict[str, Any]) -> tuple[str, Any, Any]:
    name = attrs.get("gen_ai.evaluation.name")
    if not isinstance(name, str) or not name:
        raise fail(file, where, "gen_ai.evaluation.name", f"required on a {EVALUATION} event")
    value = attrs.get("gen_ai.evaluation.score.value")
    if value is not None and number(value) is None:
        raise fail(
            file, where, "gen_ai.evaluation.score.value", f"expected a number, got {value!r}"
        )
    return name, value, attrs.get("gen_ai.evaluation.score.label")


def _logged(path: Path) -> dict[str, list[tuple[str, Any, Any]]]:
    """Evaluation results sent as log records, by span id and by response id."""
    found: dict[str, list[tuple[str, Any, Any]]] = {}
    for file, where, request in _requests(path):
        for r, resource_log in enumerate((request or {}).get("resourceLogs") or []):
            for s, scope in enumerate(resource_log.get("scopeLogs") or []):
                for k, log in enumerate(scope.get("logRecords") or []):
                    place = f"{where}, resourceLogs[{r}].scopeLogs[{s}].logRecords[{k}]"
                    attrs = attributes(file, place, log.get("attributes"))
                    if (log.get("eventName") or attrs.get("event.name")) != EVALUATION:
                        continue
                    result = _evaluation(file, place, attrs)
                    for key in (log.get("spanId"), attrs.get("gen_ai.response.id")):
                        if key:
                            found.setdefault(str(key), []).append(result)
    return found


def read(path: Path, options: dict[str, Any]) -> Conversion:
    logged = _logged(path)
    notes: list[str] = []

    def records() -> Iterator[Row]:
        labels_only = 0
        for file, where, request in _requests(path):
            for place, span, resource in _spans(file, where, request):
                attrs = attributes(file, place, span.get("attributes"))
                prompt, completion = _texts(attrs, "prompt"), _texts(attrs, "completion")
                if prompt is None or not completion:
                    continue  # not a GenAI call with its content recorded
                results = [
                    _evaluation(
                        file,
                        f"{place}.events[{e}]",
                        attributes(file, f"{place}.events[{e}]", event.get("attributes")),
                    )
                    for e, event in enumerate(span.get("events") or [])
                    if isinstance(event, dict) and event.get("name") == EVALUATION
                ]
                results += logged.get(span["spanId"], []) + logged.get(
                    str(attrs.get("gen_ai.response.id", "")), []
                )
                metrics = {}
                for name, value, _label in results:
                    if value is None:
                        labels_only += 1
                    else:
                        metrics[metric_name(name)] = float(value)
                system = (
                    (
                        attrs.get(options["system_attribute"])
                        if options["system_attribute"]
                        else None
                    )
                    or attrs.get("gen_ai.response.model")
                    or attrs.get("gen_ai.request.model")
                    or resource.get("service.name")
                    or "default"
                )
                doc = attrs.get(options["doc_attribute"]) or f"p-{digest(prompt)}"
                yield record(
                    short_id(str(doc)),
                    short_id(str(system)),
                    prompt,
                    completion,
                    metrics=metrics,
                    # no per-span context: a context is the document's (the prompt's), the
                    # same on every output of it
                )
        notes[:] = (
            [f"{labels_only} evaluation results with a label but no score skipped"]
            if labels_only
            else []
        )

    return Conversion(records, notes=notes)


def _texts(attrs: dict[str, Any], side: str) -> str | None:
    """The prompt or completion of a span, from whichever convention recorded it."""
    messages = attrs.get("gen_ai.input.messages" if side == "prompt" else "gen_ai.output.messages")
    if messages is not None:
        return _messages(messages, side)
    if isinstance(attrs.get(f"gen_ai.{side}"), str):
        return str(attrs[f"gen_ai.{side}"])
    indexed: dict[int, str] = {}
    for key, value in attrs.items():
        match = _INDEXED.match(key)
        if match and match.group(1) == side and match.group(3) == "content":
            indexed[int(match.group(2))] = str(value)
    return "\n\n".join(indexed[i] for i in sorted(indexed)) if indexed else None


def _messages(raw: Any, side: str) -> str:
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return str(raw)
    if not isinstance(messages, list):
        return raw if isinstance(raw, str) else json.dumps(raw)
    texts = [
        part.get("content", "")
        for message in messages
        if isinstance(message, dict)
        for part in message.get("parts") or []
        if isinstance(part, dict) and part.get("type") == "text"
    ]
    if side == "completion" or (len(messages) == 1 and len(texts) == 1):
        return "\n\n".join(str(t) for t in texts)
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


FORMAT = Format(
    name="otel",
    title="OpenTelemetry (OTLP/JSON, GenAI conventions)",
    doc_url="https://opentelemetry.io/docs/specs/semconv/gen-ai/",
    read=read,
    options=OPTIONS,
)
