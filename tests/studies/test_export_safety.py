"""CSV exports a spreadsheet cannot turn into formulas, and one column per run."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from studies.models import Dataset, MetricRun, MetricScore, Output
from studies.services.datasets import ImportOptions, export_dataset, import_file
from studies.services.records import neutralise_cell, restore_cell
from studies.services.tables import to_csv
from tests.conftest import record

pytestmark = pytest.mark.django_db

HOSTILE = {
    "doc_id": '=HYPERLINK("http://x")',
    "system_id": "+sys",
    "source": "-2+3",
    "references": ["@SUM(A1)", "\tcmd", "\rcr", "'=quoted already", "plain"],
    "output": "=1+1",
}


def run_import(path: Path, dataset: str, file_format: str = "jsonl") -> None:
    import_file(
        path,
        ImportOptions(
            dataset=dataset, task="summarization", file_format=file_format, file_name=path.name
        ),
    )


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def hostile(write_jsonl) -> Dataset:
    rows = [
        record(**HOSTILE, human={"coherence": 2.0}, metrics={"delta": -0.5}),  # type: ignore[arg-type]
        record("plain", "s1", context={"k": -1}, metrics={"delta": 0.25}),
    ]
    run_import(write_jsonl(rows), "hostile")
    return Dataset.objects.get(name="hostile")


def test_csv_export_neutralises_formula_text_but_not_numbers(hostile):
    rows = csv_rows("".join(export_dataset(hostile, "csv")))
    row = next(r for r in rows if r["system_id"] != "s1")
    assert row["doc_id"] == '\'=HYPERLINK("http://x")'
    assert (row["system_id"], row["source"], row["output"]) == ("'+sys", "'-2+3", "'=1+1")
    assert [row[f"reference_{i}"] for i in range(1, 6)] == [
        "'@SUM(A1)",
        "'\tcmd",
        "'\rcr",
        "''=quoted already",
        "plain",
    ]
    assert row["metric_delta"] == "-0.5" and row["human_coherence"] == "2.0"
    plain = next(r for r in rows if r["system_id"] == "s1")
    assert plain["context"] == '{"k": -1}' and plain["doc_id"] == "plain"
    for cell in (
        value for r in rows for key, value in r.items() if not key.startswith(("metric_", "human_"))
    ):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell


def test_raw_csv_writes_cells_as_stored(hostile, tmp_path):
    rows = csv_rows("".join(export_dataset(hostile, "csv", raw=True)))
    row = next(r for r in rows if r["system_id"] != "s1")
    assert (row["doc_id"], row["output"]) == (HOSTILE["doc_id"], "=1+1")
    target = tmp_path / "raw.csv"
    call_command("export_dataset", "hostile", "--format", "csv", "--raw-csv", "-o", str(target))
    assert target.read_bytes().decode() == "".join(export_dataset(hostile, "csv", raw=True))
    call_command("export_dataset", "hostile", "--format", "csv", "-o", str(target))
    assert "'=1+1" in target.read_bytes().decode()


def test_export_url_neutralises_unless_raw(client, cast, hostile):
    from django.urls import reverse

    hostile.owner = cast["owner"]
    hostile.save()
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-export", args=[hostile.pk, "csv"])
    safe = csv_rows(b"".join(client.get(url).streaming_content).decode())
    raw = csv_rows(b"".join(client.get(url + "?raw=1").streaming_content).decode())
    assert "'=1+1" in [r["output"] for r in safe] and "=1+1" not in [r["output"] for r in safe]
    assert "=1+1" in [r["output"] for r in raw]


def test_neutralised_csv_imports_back_to_the_original_text(hostile, tmp_path):
    path = tmp_path / "copy.csv"
    path.write_text("".join(export_dataset(hostile, "csv")), encoding="utf-8", newline="")
    run_import(path, "copy", "csv")
    copy = Dataset.objects.get(name="copy")
    assert list(export_dataset(copy, "jsonl")) == list(export_dataset(hostile, "jsonl"))
    assert Output.objects.filter(document__dataset=copy, text="=1+1").exists()


def test_raw_csv_import_loses_only_the_quote_of_a_quoted_formula(hostile, tmp_path):
    """The importer takes one ' off a cell that starts with ' and then a formula
    character, so a raw export round-trips except for such cells (use the default CSV
    or JSONL for exact round trips)."""
    path = tmp_path / "raw.csv"
    path.write_text("".join(export_dataset(hostile, "csv", raw=True)), encoding="utf-8", newline="")
    run_import(path, "copy", "csv")
    copy = Dataset.objects.get(name="copy")
    expected = "".join(export_dataset(hostile, "jsonl")).replace("'=quoted", "=quoted")
    assert "".join(export_dataset(copy, "jsonl")) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("'=+-@\t\rab1 "), max_size=8))
def test_restore_undoes_neutralise_exactly(text):
    safe = neutralise_cell(text)
    assert restore_cell(safe) == text
    assert not safe.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_correlation_csv_neutralises_labels_but_not_values():
    cell = {
        "value": -0.25,
        "low": -0.5,
        "high": 0.1,
        "n_outputs": 4,
        "p_vs_best": None,
        "coverage_outputs": 4,
        "coverage_documents": 1,
        "judged_outputs": 4,
        "judged_documents": 1,
        "coverage": 1.0,
        "partial": False,
        "n_shared_with_best": None,
    }
    result = {
        "columns": [{"aspect": {"code": "=COH"}, "cells": [cell, cell]}],
        "runs": [
            {"label": "@evil", "metric": "m", "model": "-m", "setting": "", "dimension": ""},
            {"label": "a\rb", "metric": "+m", "model": None, "setting": "", "dimension": ""},
        ],
    }
    safe = list(csv.reader(io.StringIO(to_csv(result), newline="")))
    assert safe[0][5] == "'=COH" and safe[1][:3] == ["'@evil", "m", "'-m"]
    assert safe[1][5:8] == ["-0.250000", "-0.500000", "0.100000"]
    assert safe[2][:3] == ["a\rb", "'+m", ""] and len(safe) == 3
    raw = list(csv.reader(io.StringIO(to_csv(result, raw=True), newline="")))
    assert raw[0][5] == "=COH" and raw[1][0] == "@evil" and raw[2][1] == "+m"


def test_runs_sharing_a_label_export_as_separate_columns_and_round_trip(write_jsonl, tmp_path):
    run_import(
        write_jsonl(
            [
                record("d1", "s1", metrics={"rouge1": 0.5}),
                record("d1", "s2", metrics={"rouge1": 0.25}),
            ]
        ),
        "shared",
    )
    dataset = Dataset.objects.get(name="shared")
    imported = MetricRun.objects.get(dataset=dataset, label="rouge1")
    computed = MetricRun.objects.create(
        dataset=dataset, metric="rouge1", label="rouge1", status=MetricRun.Status.SUCCEEDED
    )
    for output in Output.objects.filter(document__dataset=dataset):
        MetricScore.objects.create(
            run=computed, output=output, value=1.0 if output.system_id == "s1" else 0.0
        )
    for file_format in ("jsonl", "csv"):
        text = "".join(export_dataset(dataset, file_format))
        if file_format == "jsonl":
            metrics = [json.loads(line)["metrics"] for line in text.splitlines()]
            assert metrics == [
                {f"rouge1:run{imported.pk}": 0.5, f"rouge1:run{computed.pk}": 1.0},
                {f"rouge1:run{imported.pk}": 0.25, f"rouge1:run{computed.pk}": 0.0},
            ]
        else:
            header = text.splitlines()[0].split(",")
            assert f"metric_rouge1:run{imported.pk}" in header
            assert f"metric_rouge1:run{computed.pk}" in header
        path = tmp_path / f"shared.{file_format}"
        path.write_text(text, encoding="utf-8")
        run_import(path, f"copy-{file_format}", file_format)
        copy = Dataset.objects.get(name=f"copy-{file_format}")
        assert "".join(export_dataset(copy, file_format)) == text
