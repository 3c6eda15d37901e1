"""Langfuse, LangSmith and OpenTelemetry adapters on files written in each tool's
documented export format: what they emit, and a located error for each of five
malformed variants (with nothing written)."""

from __future__ import annotations

import copy

import pytest

from studies.services.sources import convert
from tests.studies.sources.conftest import dump, located
from tests.studies.sources.tracing_exports import (
    LANGFUSE_MALFORMED,
    LANGFUSE_SCORES,
    LANGFUSE_TRACES,
    LANGSMITH_FEEDBACK,
    LANGSMITH_MALFORMED,
    LANGSMITH_RUNS,
    OTEL_MALFORMED,
    langfuse_folder,
    langsmith_folder,
    otel_broken,
    otel_logs,
    otel_traces,
)


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
