"""Management commands: import_records, export_dataset, demo --setup-only."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from studies.models import Dataset, Judgment, MetricRun, Output, Study
from tests.conftest import record, row_counts

pytestmark = pytest.mark.django_db


def test_import_records_imports_and_reports_counts(write_jsonl, capsys):
    path = write_jsonl([record("d1", "s1"), record("d1", "s2"), record("d2", "s1")])
    call_command("import_records", str(path), "--dataset", "cmd", "--task", "summarization")
    out = capsys.readouterr().out
    assert "3 records into cmd" in out and "'created': 6" in out
    assert Output.objects.count() == 3 and Judgment.objects.count() == 6


def test_import_records_error_names_line_and_writes_nothing(write_jsonl):
    path = write_jsonl([record("d1"), record("d2", human={"coherence": "x"})])
    with pytest.raises(
        CommandError, match=r"nothing was imported\.\nline 2, field 'human.coherence'"
    ):
        call_command("import_records", str(path), "--dataset", "cmd", "--task", "summarization")
    assert row_counts()["Output"] == 0


def test_import_records_create_aspects_flag(write_jsonl):
    path = write_jsonl([record("d1", human={"litepyramid_recall": 0.4})])
    with pytest.raises(CommandError, match="unknown aspect 'litepyramid_recall'"):
        call_command("import_records", str(path), "--dataset", "cmd", "--task", "summarization")
    call_command(
        "import_records",
        str(path),
        "--dataset",
        "cmd",
        "--task",
        "summarization",
        "--create-aspects",
    )
    assert Judgment.objects.get().aspect.code == "LITEPYRAMID_RECALL"


def test_import_records_refuses_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command(
            "import_records",
            str(tmp_path / "nope.jsonl"),
            "--dataset",
            "x",
            "--task",
            "summarization",
        )
    odd = tmp_path / "data.xlsx"
    odd.write_bytes(b"PK")
    with pytest.raises(CommandError, match="use a .jsonl or .csv file"):
        call_command("import_records", str(odd), "--dataset", "x", "--task", "summarization")


def test_export_dataset_command_writes_a_file_that_reimports_identically(write_jsonl, tmp_path):
    path = write_jsonl([record("d1", "s1", metrics={"bleu": 0.3}), record("d2", "s1")])
    call_command("import_records", str(path), "--dataset", "one", "--task", "summarization")
    first, second = tmp_path / "one.csv", tmp_path / "two.csv"
    call_command("export_dataset", "one", "--format", "csv", "-o", str(first))
    call_command("import_records", str(first), "--dataset", "two", "--task", "summarization")
    call_command("export_dataset", "two", "--format", "csv", "-o", str(second))
    assert first.read_text() == second.read_text()
    assert MetricRun.objects.filter(label="bleu", kind="imported").count() == 2


def test_demo_setup_loads_the_synthetic_study_and_is_idempotent(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("demo", "--setup-only", "--skip-model")
    counts = row_counts()
    call_command("demo", "--setup-only", "--skip-model")
    assert row_counts() == counts
    dataset = Dataset.objects.get(name="demo-synthetic")
    assert "SYNTHETIC" in dataset.description
    assert Output.objects.filter(document__dataset=dataset).count() == 72
    study = Study.objects.get(dataset=dataset)
    assert sorted(study.aspects.values_list("code", flat=True)) == ["COH", "CON", "FLU", "REL"]
    assert study.memberships.count() == 2
