"""Langfuse, LangSmith and OpenTelemetry adapters on files written in each tool's
documented export format: what they emit, and a located error for each of five
malformed variants (with nothing written)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from studies.services.sources import convert
from tests.studies.sources.conftest import dump, located

# --- Langfuse -------------------------------------------------------------------------------

LANGFUSE_TRACES = [
    {
        "id": "t1",
        "name": "qa-bot",
        "input": {"question": "What is X?"},
        "output": "X is Y.",
        "metadata": {"doc_id": "q1", "system_id": "v1"},
        "release": "r5",
    },
    {
        "id": "t2",
        "name": "qa-bot",
        "input": "ignored: the dataset item is the input",
        "output": "X is Z.",
        "metadata": {},
        "scores": [
            {
                "id": "s9",
                "traceId": "t2",
                "name": "helpfulness",
                "value": 2,
                "dataType": "NUMERIC",
                "source": "ANNOTATION",
                "authorUserId": "u2",
            }
        ],
    },
]
LANGFUSE_SCORES = [
    {
        "id": "s1",
        "traceId": "t1",
        "name": "helpfulness",
        "value": 4,
        "dataType": "NUMERIC",
        "source": "ANNOTATION",
        "authorUserId": "u1",
    },
    {
        "id": "s2",
        "traceId": "t1",
        "name": "faithful",
        "value": 0,
        "stringValue": "yes",
        "dataType": "CATEGORICAL",
        "source": "ANNOTATION",
        "authorUserId": "u1",
    },
    {
        "id": "s3",
        "traceId": "t1",
        "name": "judge_relevance",
        "value": 0.8,
        "dataType": "NUMERIC",
        "source": "EVAL",
    },
    {
        "id": "s4",
        "traceId": "t1",
        "name": "thumbs",
        "value": 1,
        "dataType": "BOOLEAN",
        "source": "API",
    },
    {
        "id": "s5",
        "traceId": "t1",
        "name": "tone",
        "value": 0,
        "stringValue": "polite",
        "dataType": "CATEGORICAL",
        "source": "EVAL",
    },
    {
        "id": "s6",
        "traceId": None,
        "sessionId": "sess",
        "name": "csat",
        "value": 5,
        "dataType": "NUMERIC",
        "source": "API",
    },
]
LANGFUSE_DATASET = [
    {
        "id": "item1",
        "datasetId": "ds1",
        "input": "What is X, really?",
        "expectedOutput": "X is Z.",
        "metadata": {},
    },
]
LANGFUSE_RUN = {  # GET /api/public/datasets/{name}/runs/{run}
    "id": "dr1",
    "name": "run-2024-10",
    "datasetRunItems": [
        {"id": "ri1", "datasetRunId": "dr1", "datasetItemId": "item1", "traceId": "t2"},
    ],
}


def langfuse_folder(tmp_path: Path, traces=LANGFUSE_TRACES, scores=LANGFUSE_SCORES) -> Path:
    dump(tmp_path / "lf" / "traces.json", traces)
    dump(
        tmp_path / "lf" / "scores.jsonl",
        [{"data": scores[:3], "meta": {"page": 1}}, {"data": scores[3:], "meta": {"page": 2}}],
        lines=True,
    )
    dump(tmp_path / "lf" / "dataset.jsonl", LANGFUSE_DATASET, lines=True)
    dump(tmp_path / "lf" / "run.json", LANGFUSE_RUN)
    return tmp_path / "lf"


def test_langfuse_traces_scores_and_dataset_runs_become_records(tmp_path):
    dataset = convert("langfuse", langfuse_folder(tmp_path))
    first, second = dataset.records()
    assert (first["doc_id"], first["system_id"], first["output"]) == ("q1", "v1", "X is Y.")
    assert first["source"] == '{"question": "What is X?"}'
    assert first["annotators"] == {"helpfulness": {"u1": 4}, "faithful": {"u1": "yes"}}
    assert first["metrics"] == {"judge_relevance": 0.8, "thumbs": 1.0}
    assert (second["doc_id"], second["system_id"], second["source"]) == (
        "item1",
        "run-2024-10",
        "What is X, really?",
    )
    assert second["references"] == ["X is Z."] and second["annotators"] == {
        "helpfulness": {"u2": 2}
    }
    assert dataset.notes == [
        "1 categorical machine scores skipped",
        "1 scores without a trace skipped",
    ]


LANGFUSE_MALFORMED = [
    ("numeric score not a number", "scores", lambda s, t: s[0].update(value="high"), "value"),
    ("unknown data type", "scores", lambda s, t: s[1].update(dataType="PERCENT"), "dataType"),
    ("boolean not 0 or 1", "scores", lambda s, t: s[3].update(value=2), "value"),
    ("categorical without label", "scores", lambda s, t: s[1].pop("stringValue"), "stringValue"),
    (
        "nested score without name",
        "traces",
        lambda s, t: t[1]["scores"][0].pop("name"),
        "traceId/name",
    ),
]


@pytest.mark.parametrize(
    ("case", "where", "change", "field"), LANGFUSE_MALFORMED, ids=[c[0] for c in LANGFUSE_MALFORMED]
)
def test_langfuse_malformed_export_is_located(tmp_path, case, where, change, field):
    scores, traces = copy.deepcopy(LANGFUSE_SCORES), copy.deepcopy(LANGFUSE_TRACES)
    change(scores, traces)
    error = located("langfuse", langfuse_folder(tmp_path, traces, scores))
    assert error.problem.file == ("scores.jsonl" if where == "scores" else "traces.json")
    assert error.problem.field == field
    assert error.problem.where.startswith("line " if where == "scores" else "$[1]")


# --- LangSmith ------------------------------------------------------------------------------

LANGSMITH_EXAMPLES = [
    {
        "id": "ex1",
        "dataset_id": "ds",
        "inputs": {"question": "Capital of France?"},
        "outputs": {"answer": "Paris"},
        "metadata": {},
    }
]
LANGSMITH_RUNS = [
    {
        "id": "run1",
        "name": "Target",
        "run_type": "chain",
        "inputs": {"question": "Capital of France?"},
        "outputs": {"output": "Paris."},
        "reference_example_id": "ex1",
        "session_id": "exp-uuid",
        "session_name": "gpt-4o-baseline",
        "parent_run_id": None,
        "extra": {"metadata": {}},
    },
    {
        "id": "run1-child",
        "name": "llm",
        "run_type": "llm",
        "inputs": {},
        "outputs": {"x": 1},
        "parent_run_id": "run1",
        "extra": {},
    },
]
LANGSMITH_FEEDBACK = [
    {
        "id": "f1",
        "run_id": "run1",
        "key": "correctness",
        "score": 1,
        "value": None,
        "comment": "ok",
        "feedback_source": {"type": "app", "metadata": {}, "user_id": "user-7"},
    },
    {
        "id": "f2",
        "run_id": "run1",
        "key": "tone",
        "score": None,
        "value": "friendly",
        "feedback_source": {"type": "app", "metadata": {}, "user_id": "user-8"},
    },
    {
        "id": "f3",
        "run_id": "run1",
        "key": "conciseness",
        "score": 0.25,
        "value": None,
        "feedback_source": {"type": "model", "metadata": {"__run": {"run_id": "eval-run"}}},
    },
]


def langsmith_folder(tmp_path: Path, feedback=LANGSMITH_FEEDBACK, runs=LANGSMITH_RUNS) -> Path:
    dump(tmp_path / "ls" / "examples.jsonl", LANGSMITH_EXAMPLES, lines=True)
    dump(tmp_path / "ls" / "runs.jsonl", runs, lines=True)
    dump(tmp_path / "ls" / "feedback.jsonl", feedback, lines=True)
    return tmp_path / "ls"


def test_langsmith_root_runs_with_example_and_feedback_become_records(tmp_path):
    dataset = convert("langsmith", langsmith_folder(tmp_path))
    (row,) = dataset.records()
    assert (row["doc_id"], row["system_id"], row["source"], row["output"]) == (
        "ex1",
        "gpt-4o-baseline",
        "Capital of France?",
        "Paris.",
    )
    assert row["references"] == ["Paris"]
    assert row["annotators"] == {"correctness": {"user-7": 1}, "tone": {"user-8": "friendly"}}
    assert row["metrics"] == {"conciseness": 0.25}
    assert {a.name: a.kind for a in dataset.aspects} == {
        "correctness": "binary",
        "tone": "categorical",
    }


LANGSMITH_MALFORMED = [
    (
        "feedback without key",
        lambda f, r: f[0].pop("key"),
        "feedback.jsonl",
        "line 1",
        "run_id/key",
    ),
    (
        "score not a number",
        lambda f, r: f[2].update(score="good"),
        "feedback.jsonl",
        "line 3",
        "score",
    ),
    (
        "source not an object",
        lambda f, r: f[1].update(feedback_source="app"),
        "feedback.jsonl",
        "line 2",
        "feedback_source",
    ),
    (
        "human feedback empty",
        lambda f, r: f[0].update(score=None),
        "feedback.jsonl",
        "line 1",
        "score/value",
    ),
    ("run id not text", lambda f, r: r[0].update(id=17), "runs.jsonl", "line 1", "id"),
]


@pytest.mark.parametrize(
    ("case", "change", "file", "where", "field"),
    LANGSMITH_MALFORMED,
    ids=[c[0] for c in LANGSMITH_MALFORMED],
)
def test_langsmith_malformed_export_is_located(tmp_path, case, change, file, where, field):
    feedback, runs = copy.deepcopy(LANGSMITH_FEEDBACK), copy.deepcopy(LANGSMITH_RUNS)
    change(feedback, runs)
    error = located("langsmith", langsmith_folder(tmp_path, feedback, runs))
    assert (error.problem.file, error.problem.where, error.problem.field) == (file, where, field)


# --- OpenTelemetry --------------------------------------------------------------------------


def attr(key: str, value: Any) -> dict[str, Any]:
    kind = {str: "stringValue", float: "doubleValue", int: "intValue", bool: "boolValue"}[
        type(value)
    ]
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def evaluation(name: str, value: float | None = None, label: str | None = None) -> dict[str, Any]:
    attributes = [attr("gen_ai.evaluation.name", name)]
    if value is not None:
        attributes.append(attr("gen_ai.evaluation.score.value", value))
    if label is not None:
        attributes.append(attr("gen_ai.evaluation.score.label", label))
    return {"timeUnixNano": "1", "name": "gen_ai.evaluation.result", "attributes": attributes}


def otel_traces() -> dict[str, Any]:
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Tell a joke."}]}])
    answer = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Knock knock."}],
                "finish_reason": "stop",
            }
        ]
    )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "joke-app")]},
                "scopeSpans": [
                    {
                        "scope": {"name": "openai"},
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "chat gpt-4o",
                                "kind": 3,
                                "attributes": [
                                    attr("gen_ai.operation.name", "chat"),
                                    attr("gen_ai.request.model", "gpt-4o"),
                                    attr("gen_ai.response.model", "gpt-4o-2024-08-06"),
                                    attr("gen_ai.usage.input_tokens", 12),
                                    attr("gen_ai.input.messages", user),
                                    attr("gen_ai.output.messages", answer),
                                ],
                                "events": [
                                    evaluation("relevance", 0.9),
                                    evaluation("safety", label="pass"),
                                ],
                            },
                            {
                                "traceId": "5b8efff798038103d269b633813fc60d",
                                "spanId": "eee19b7ec3c1b175",
                                "name": "completion",
                                "attributes": [
                                    attr("gen_ai.request.model", "llama-3-8b"),
                                    attr("gen_ai.prompt", "Tell a joke."),
                                    attr("gen_ai.completion", "Why did the chicken..."),
                                ],
                            },
                            {
                                "traceId": "5b8efff798038103d269b633813fc60d",
                                "spanId": "aaa",
                                "name": "GET /",
                                "attributes": [attr("http.method", "GET")],
                            },
                        ],
                    }
                ],
            }
        ]
    }


def otel_logs() -> dict[str, Any]:
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": []},
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "2",
                                "eventName": "gen_ai.evaluation.result",
                                "traceId": "5b8efff798038103d269b633813fc60d",
                                "spanId": "eee19b7ec3c1b175",
                                "attributes": evaluation("faithfulness", 1.0)["attributes"],
                            },
                        ]
                    }
                ],
            }
        ]
    }


def test_otel_gen_ai_spans_become_records_and_evaluation_results_judge_scores(tmp_path):
    dump(tmp_path / "otel" / "traces.jsonl", [otel_traces()], lines=True)
    dump(tmp_path / "otel" / "logs.json", otel_logs())
    dataset = convert("otel", tmp_path / "otel")
    first, second = dataset.records()
    assert (first["system_id"], first["source"], first["output"]) == (
        "gpt-4o-2024-08-06",
        "Tell a joke.",
        "Knock knock.",
    )
    assert first["metrics"] == {"relevance": 0.9}
    assert (second["system_id"], second["output"], second["metrics"]) == (
        "llama-3-8b",
        "Why did the chicken...",
        {"faithfulness": 1.0},
    )
    assert first["doc_id"] == second["doc_id"]  # the same prompt: one document, two systems
    assert dataset.notes == ["1 evaluation results with a label but no score skipped"]


def otel_broken(change) -> dict[str, Any]:
    traces = otel_traces()
    change(traces["resourceSpans"][0]["scopeSpans"][0]["spans"])
    return traces


OTEL_MALFORMED = [
    ("attribute without key", lambda s: s[0]["attributes"][0].pop("key"), "attributes[0].key"),
    (
        "int that is not one",
        lambda s: s[0]["attributes"][3]["value"].update(intValue="twelve"),
        "attributes[3].value",
    ),
    (
        "evaluation without name",
        lambda s: s[0]["events"][0]["attributes"].pop(0),
        "gen_ai.evaluation.name",
    ),
    (
        "score value not a number",
        lambda s: s[0]["events"][0]["attributes"].__setitem__(
            1, attr("gen_ai.evaluation.score.value", "high")
        ),
        "gen_ai.evaluation.score.value",
    ),
    ("span without id", lambda s: s[1].pop("spanId"), "spanId"),
    (
        "double that is not one",
        lambda s: s[0]["events"][0]["attributes"][1].update(value={"doubleValue": "high"}),
        "attributes[1].value",
    ),
]


@pytest.mark.parametrize(
    ("case", "change", "field"), OTEL_MALFORMED, ids=[c[0] for c in OTEL_MALFORMED]
)
def test_otel_malformed_export_is_located(tmp_path, case, change, field):
    path = dump(
        tmp_path / "otel" / "traces.jsonl", [otel_traces(), otel_broken(change)], lines=True
    )
    error = located("otel", path)
    assert error.problem.file == "traces.jsonl" and error.problem.field == field
    assert error.problem.where.startswith("line 2, resourceSpans[0].scopeSpans[0].spans[")
