"""Pairwise preference files (the ``*_pairs.jsonl`` layout, and CSV with the same
columns): each line one annotator's preference, imported as an ``ImportedPreference``;
the two outputs created or matched like any output (a side without a system id gets one
from its text); located errors with nothing written; idempotent re-imports."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from studies.models import Document, ImportedPreference, Output
from studies.services.imports import ImportOptions, ImportValidationError, import_file
from studies.services.imports.pairs import derived_system_id
from tests.conftest import record, row_counts

pytestmark = pytest.mark.django_db


def run_import(path: Path, dataset: str = "prefs", **kw: object):  # type: ignore[no-untyped-def]
    fmt = "csv" if path.suffix == ".csv" else "jsonl"
    options = ImportOptions(
        dataset=dataset, task="summarization", file_format=fmt, file_name=path.name, **kw
    )
    return import_file(path, options)  # type: ignore[arg-type]


def pair(doc: str, a: str, b: str, winner: str, annotator: object = "ann1", **kw: object):  # type: ignore[no-untyped-def]
    line: dict[str, object] = {
        "doc_id": doc,
        "source": f"Instruction {doc}.",
        "system_a": a,
        "output_a": f"Answer of {a} to {doc}.",
        "system_b": b,
        "output_b": f"Answer of {b} to {doc}.",
        "aspect": "coherence",
        "annotator": annotator,
        "winner": winner,
    }
    line.update(kw)
    return line


def preferences() -> list[tuple[str, str, str, str, str]]:
    rows = ImportedPreference.objects.values_list(
        "output_a__document__doc_key",
        "output_a__system_id",
        "output_b__system_id",
        "rater",
        "winner",
    )
    return sorted(rows)


def test_pairs_import_as_preferences_of_matched_or_created_outputs(write_jsonl):
    outputs = write_jsonl([record("q1", "m1", output="Answer of m1 to q1.")], name="outs.jsonl")
    run_import(outputs)  # m1's output exists, with references
    lines = [
        pair("q1", "m1", "m2", "b"),
        pair("q1", "m1", "m2", "tie", annotator="ann2"),
        pair("q2", "m2", "m3", "a", annotator=7, subset="Natural"),
    ]
    summary = run_import(write_jsonl(lines, name="prefs_pairs.jsonl"))
    assert summary.pairwise_judgments == {"created": 3, "updated": 0}
    assert summary.outputs == {"created": 3, "updated": 0}  # m1 of q1 matched
    assert preferences() == [
        ("q1", "m1", "m2", "ann1", "b"),
        ("q1", "m1", "m2", "ann2", "tie"),
        ("q2", "m2", "m3", "7", "a"),
    ]
    # a pairs line without references leaves the document's as they were
    assert Document.objects.get(doc_key="q1").references == ["Reference of q1."]
    assert "subset (1 lines)" in " ".join(summary.notes)
    before = row_counts()
    again = run_import(write_jsonl(lines, name="prefs_pairs.jsonl"))
    assert row_counts() == before and again.pairwise_judgments == {"created": 0, "updated": 0}
    lines[0] = pair("q1", "m1", "m2", "a")
    changed = run_import(write_jsonl(lines, name="prefs_pairs.jsonl"))
    assert changed.pairwise_judgments == {"created": 0, "updated": 1}


def test_sides_without_system_ids_get_ids_from_their_text_stable_across_imports(write_jsonl):
    line = pair("q1", "", "", "a", output_a="First answer.", output_b="Second answer.")
    del line["system_a"]
    path = write_jsonl([line], name="anon.jsonl")
    run_import(path)
    expected = {derived_system_id("First answer."), derived_system_id("Second answer.")}
    assert set(Output.objects.values_list("system_id", flat=True)) == expected
    assert all(s.startswith("text-") and len(s) == 21 for s in expected)
    run_import(path)
    assert Output.objects.count() == 2 and ImportedPreference.objects.count() == 1


def test_an_empty_output_is_a_pair_side_too(write_jsonl):
    run_import(write_jsonl([pair("q1", "m1", "m2", "b", output_b="")], name="e.jsonl"))
    assert Output.objects.get(system_id="m2").text == ""


def test_a_csv_pairs_file_imports_as_the_jsonl_one(tmp_path):
    path = tmp_path / "prefs.csv"
    columns = ["doc_id", "source", "system_a", "output_a", "system_b", "output_b", "aspect"]
    columns += ["annotator", "winner", "motivation_app"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        line = pair("q1", "m1", "m2", "b", motivation_app="Grammarly")
        writer.writerow([line[c] for c in columns])
    summary = run_import(path)
    assert summary.pairwise_judgments["created"] == 1
    assert preferences() == [("q1", "m1", "m2", "ann1", "b")]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            pair("q2", "m1", "m2", "maybe"),
            "line 2, field 'winner': 'maybe' is not one of a, b, tie",
        ),
        (
            pair("q2", "m1", "m1", "a"),
            "line 2, field 'system_b': names the same output as system_a",
        ),
        (
            pair("q2", "", "", "a", output_b="Answer of  to q2."),
            "line 2, field 'output_b': is the same text as output_a",
        ),
        (
            pair("q2", "m1", "m2", "a", annotator=["ann1"]),
            "line 2, field 'annotator': a rater id must be a text or a number, got a list",
        ),
        (
            pair("q2", "m1", "m2", "a", annotator=1.5),
            "line 2, field 'annotator': a rater id must be a text or a whole number",
        ),
        (pair("q1", "m1", "m2", "a"), "line 2, field 'winner': annotator 'ann1' judged this pair"),
        (pair("q2", "m1", "m2", "a", aspect="nonesuch"), "line 2, field 'aspect': unknown aspect"),
        (
            pair("q2", "m1", "m2", "a", output_a="Another answer.", doc_id="q1"),
            "line 2, field 'output_a': doc_id 'q1', system_id 'm1' is already on line 1",
        ),
    ],
)
def test_a_bad_pair_is_located_and_nothing_is_written(write_jsonl, line, expected):
    path = write_jsonl([pair("q1", "m1", "m2", "b"), line], name="bad_pairs.jsonl")
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        run_import(path)
    assert expected in str(info.value), str(info.value)
    assert row_counts() == before
