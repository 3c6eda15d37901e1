"""Label Studio and Argilla adapters on files written in each tool's documented export
format: what they emit, a located error for each of five malformed variants (and nothing
written), and the round trip through each tool's format."""

from __future__ import annotations

import json

import pytest

from studies.services.sources import FORMATS, convert
from tests.studies.sources.annotation_exports import (
    ARGILLA_MALFORMED,
    ARGILLA_RECORDS,
    ARGILLA_SETTINGS,
    LS_MALFORMED,
    LS_TASKS,
    ROUND_TRIP_PAIRS,
    ROUND_TRIP_RECORDS,
    argilla_broken,
    argilla_folder,
    ls_broken,
)
from tests.studies.sources.conftest import dump, located


def test_label_studio_export_gives_annotators_by_completed_by_metrics_and_pairs(tmp_path):
    dataset = convert("label-studio", dump(tmp_path / "project-1.json", LS_TASKS))
    (row,) = dataset.records()
    assert (row["doc_id"], row["system_id"], row["source"], row["output"]) == (
        "d1",
        "s1",
        "src",
        "out",
    )
    assert row["references"] == ["ref"]
    assert row["annotators"] == {
        "fluency": {"10": 4, "ann@example.org": 2},
        "faithful": {"10": "yes", "ann@example.org": "no"},
    }
    assert row["human"] == {"fluency": 3.0}  # the two faithful labels tie: no majority
    assert row["metrics"] == {"judge-v1:score": 0.7, "judge-v1:fluency": 3}
    first, second = dataset.pairs()
    assert (first["annotator"], first["winner"], first["system_b"], first["output_b"]) == (
        "10",
        "b",
        "s2",
        "y",
    )
    assert (second["annotator"], second["winner"], second["aspect"]) == ("11", "tie", "preference")
    faithful, fluency, preference = dataset.aspects
    assert (faithful.kind, faithful.labels, faithful.positive) == ("binary", ("no", "yes"), "yes")
    assert (fluency.kind, fluency.low, fluency.high) == ("scale", 2, 4)
    assert (preference.name, preference.kind) == ("preference", "categorical")


@pytest.mark.parametrize(
    ("case", "change", "where", "field"), LS_MALFORMED, ids=[c[0] for c in LS_MALFORMED]
)
def test_label_studio_malformed_export_is_located(tmp_path, case, change, where, field):
    error = located("label-studio", dump(tmp_path / "export.json", ls_broken(change)))
    assert error.problem.file == "export.json" and error.problem.field == field
    assert where is None or error.problem.where == where


def test_label_studio_file_that_is_not_json_is_located(tmp_path):
    path = tmp_path / "export.json"
    path.write_text("[\n" + json.dumps(LS_TASKS[0]) + ',\n{"id": 2, "data": ')
    error = located("label-studio", path)
    assert error.problem.where == "line 3" and "not valid JSON" in error.problem.message


@pytest.mark.parametrize("name", ["label-studio", "argilla"])
def test_export_then_import_gives_back_the_records_and_pairs(tmp_path, name):
    target = tmp_path / ("export.json" if name == "label-studio" else "argilla-dataset")
    if name == "argilla":
        target.mkdir()
    FORMATS[name].export(iter(ROUND_TRIP_RECORDS), iter(ROUND_TRIP_PAIRS), target, {})
    dataset = convert(name, target)
    assert list(dataset.records()) == ROUND_TRIP_RECORDS
    assert list(dataset.pairs()) == ROUND_TRIP_PAIRS


def test_argilla_to_disk_folder_gives_submitted_responses_by_user_and_suggestions(tmp_path):
    dataset = convert("argilla", argilla_folder(tmp_path, ARGILLA_RECORDS))
    (row,) = dataset.records()
    assert (row["doc_id"], row["system_id"], row["source"], row["output"]) == (
        "x",
        "gpt",
        "Summarise X.",
        "X in short.",
    )
    assert row["annotators"] == {
        "quality": {"u1": 4, "u2": 2},
        "faithful": {"u1": "yes"},
    }  # the draft is no judgment
    assert row["human"] == {"quality": 3.0, "faithful": "yes"}
    assert row["metrics"] == {"judge:quality": 3}
    (line,) = dataset.pairs()
    assert (line["system_a"], line["system_b"], line["winner"], line["annotator"]) == (
        "gpt",
        "llama",
        "b",
        "u1",
    )
    specs = {a.name: a for a in dataset.aspects}
    assert (specs["quality"].kind, specs["quality"].low, specs["quality"].high) == ("scale", 1, 5)
    assert (specs["faithful"].kind, specs["faithful"].positive) == ("binary", "yes")


@pytest.mark.parametrize(
    ("case", "change", "where", "field"), ARGILLA_MALFORMED, ids=[c[0] for c in ARGILLA_MALFORMED]
)
def test_argilla_malformed_export_is_located(tmp_path, case, change, where, field):
    dump(tmp_path / "ds" / ".argilla" / "settings.json", ARGILLA_SETTINGS)
    path = tmp_path / "ds" / "records.json"
    path.write_text(json.dumps(argilla_broken(change)))  # one line, as json.dump writes it
    error = located("argilla", tmp_path / "ds")
    assert (error.problem.file, error.problem.where, error.problem.field) == (
        "records.json",
        where,
        field,
    )
