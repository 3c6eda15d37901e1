"""The import service on good input: counts, re-imports, updates, export round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from studies.demo_data import write_demo_jsonl
from studies.models import Dataset, Document, Judgment, MetricRun, MetricScore, Output
from studies.services.imports import ImportOptions, export_dataset, import_file
from tests.conftest import SHARED_DATA, record, row_counts

pytestmark = pytest.mark.django_db


def run_import(path: Path, dataset: str = "ds", file_format: str = "jsonl", **kw: object):  # type: ignore[no-untyped-def]
    return import_file(
        path,
        ImportOptions(
            dataset=dataset,
            task="summarization",
            file_format=file_format,
            file_name=path.name,
            **kw,
        ),
    )  # type: ignore[arg-type]


def test_import_creates_documents_outputs_judgments_and_imported_runs(write_jsonl):
    path = write_jsonl(
        [
            record("d1", "s1", metrics={"rouge1": 0.5}),
            record("d1", "s2", metrics={"rouge1": 0.25}),
            record("d2", "s1", human={"coherence": 1.5}, references=["r1", "r2"]),
        ]
    )
    summary = run_import(path)
    assert summary.documents == {"created": 2, "updated": 0}
    assert summary.outputs == {"created": 3, "updated": 0}
    assert summary.judgments == {"created": 5, "updated": 0}
    doc = Document.objects.get(doc_key="d2")
    assert doc.references == ["r1", "r2"]
    judgment = Judgment.objects.get(output__document=doc, aspect__code="COH")
    assert (judgment.value, judgment.import_file, judgment.annotator) == (1.5, "data.jsonl", None)
    run = MetricRun.objects.get(label="rouge1")
    assert (run.kind, run.status, run.done, run.total) == ("imported", "succeeded", 2, 2)
    assert sorted(run.scores.values_list("value", flat=True)) == [0.25, 0.5]


def test_reimport_creates_no_duplicates_and_updates_changed_values(write_jsonl):
    run_import(write_jsonl([record("d1", "s1", metrics={"m": 1.0}), record("d1", "s2")]))
    before = row_counts()
    again = run_import(write_jsonl([record("d1", "s1", metrics={"m": 1.0}), record("d1", "s2")]))
    assert row_counts() == before
    assert again.judgments == {"created": 0, "updated": 0}
    changed = run_import(
        write_jsonl(
            [
                record("d1", "s1", metrics={"m": 2.0}, human={"coherence": 5.0, "fluency": 4.0}),
                record("d1", "s2", output="A corrected output."),
            ]
        )
    )
    assert row_counts() == before
    assert changed.judgments == {"created": 0, "updated": 1}
    assert changed.outputs == {"created": 0, "updated": 1}
    assert changed.metric_scores == {"created": 0, "updated": 1}
    assert Judgment.objects.get(output__system_id="s1", aspect__code="COH").value == 5.0
    assert Output.objects.get(system_id="s2").text == "A corrected output."
    assert MetricScore.objects.get().value == 2.0


def test_import_in_small_batches_gives_the_same_rows(write_jsonl, settings):
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_BATCH_SIZE": 2}
    records = [record(f"d{i % 3}", f"s{i}") for i in range(7)]
    summary = run_import(write_jsonl(records))
    assert (summary.documents["created"], summary.outputs["created"]) == (3, 7)
    assert Output.objects.count() == 7


def test_csv_import_reads_references_human_and_metric_columns(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(
        "doc_id,system_id,source,reference_1,reference_2,output,human_coherence,human_fluency,metric_bleu\n"
        'd1,s1,"Source, with comma",r1,r2,"out ""quoted""",3,,0.5\n'
        'd1,s2,"Source, with comma",r1,r2,plain,4,2,\n',
        encoding="utf-8",
    )
    summary = run_import(path, file_format="csv")
    assert summary.judgments["created"] == 3  # an empty cell is a missing judgment
    assert Document.objects.get().references == ["r1", "r2"]
    assert Output.objects.get(system_id="s1").text == 'out "quoted"'
    assert MetricScore.objects.count() == 1


def test_same_aspect_from_two_files_keeps_both_judgments(write_jsonl):
    run_import(write_jsonl([record("d1")], name="a.jsonl"))
    run_import(write_jsonl([record("d1", human={"coherence": 1.0})], name="b.jsonl"))
    values = sorted(Judgment.objects.filter(aspect__code="COH").values_list("import_file", "value"))
    assert values == [("a.jsonl", 3.0), ("b.jsonl", 1.0)]


@pytest.mark.parametrize("file_format", ["jsonl", "csv"])
def test_export_then_import_reproduces_the_dataset(tmp_path, file_format):
    demo = tmp_path / "demo.jsonl"
    write_demo_jsonl(demo)
    run_import(demo, dataset="original")
    first = tmp_path / f"first.{file_format}"
    first.write_text("".join(export_dataset(Dataset.objects.get(name="original"), file_format)))
    run_import(first, dataset="copy", file_format=file_format)
    second = "".join(export_dataset(Dataset.objects.get(name="copy"), file_format))
    assert second == first.read_text()
    assert Output.objects.filter(document__dataset__name="copy").count() == 72
    assert MetricScore.objects.filter(run__dataset__name="copy").count() == 144


def test_export_jsonl_matches_the_input_records(tmp_path):
    import json

    demo = tmp_path / "demo.jsonl"
    write_demo_jsonl(demo)
    run_import(demo, dataset="original")
    exported = [
        json.loads(line) for line in export_dataset(Dataset.objects.get(name="original"), "jsonl")
    ]
    original = [json.loads(line) for line in demo.read_text().splitlines()]
    key = lambda r: (r["doc_id"], r["system_id"])  # noqa: E731
    assert sorted(exported, key=key) == sorted(original, key=key)


@pytest.mark.skipif(
    not (SHARED_DATA / "summeval.jsonl").exists(), reason="../shared/data is not here"
)
def test_summeval_imports_with_the_expected_counts_twice():
    path = SHARED_DATA / "summeval.jsonl"
    for _ in range(2):
        run_import(path, dataset="summeval")
        assert Document.objects.count() == 100
        assert Output.objects.count() == 1600
        assert Judgment.objects.count() == 6400
