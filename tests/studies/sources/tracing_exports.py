"""Langfuse, LangSmith and OpenTelemetry exports as each tool writes them (its documented
format), and their malformed variants: what the adapters' tests and the import wiring's tests read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.studies.sources.conftest import dump

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
