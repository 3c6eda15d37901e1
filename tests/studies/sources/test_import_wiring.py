"""The converters wired into the importer: ``import_records --format <tool>`` (and the job
the upload page and the API create) imports a tool's export, a malformed one stops with
its located problem and nothing written; ``load_benchmark NAME --into DATASET`` imports a
benchmark with its licence and citation on the dataset, refusing a non-commercial licence
unless accepted."""

from __future__ import annotations

import copy
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from studies.models import Aspect, Dataset, Document, ImportedPreference, Judgment, Output
from studies.services.imports import ImportOptions, ImportValidationError
from studies.services.imports.converted import import_any
from tests.conftest import SHARED_DATA, row_counts
from tests.studies.sources import annotation_exports as ann
from tests.studies.sources import tracing_exports as tr
from tests.studies.sources.conftest import dump, shared, three_ratings

pytestmark = pytest.mark.django_db


def _ls(tmp: Path, change: Any) -> Path:
    return dump(tmp / "export.json", ann.ls_broken(change))


def _argilla(tmp: Path, change: Any) -> Path:
    dump(tmp / "ds" / ".argilla" / "settings.json", ann.ARGILLA_SETTINGS)
    (tmp / "ds" / "records.json").write_text(json.dumps(ann.argilla_broken(change)))
    return tmp / "ds"


def _langfuse(tmp: Path, change: Any) -> Path:
    scores, traces = copy.deepcopy(tr.LANGFUSE_SCORES), copy.deepcopy(tr.LANGFUSE_TRACES)
    change(scores, traces)
    return tr.langfuse_folder(tmp, traces, scores)


def _langsmith(tmp: Path, change: Any) -> Path:
    feedback, runs = copy.deepcopy(tr.LANGSMITH_FEEDBACK), copy.deepcopy(tr.LANGSMITH_RUNS)
    change(feedback, runs)
    return tr.langsmith_folder(tmp, feedback, runs)


def _otel(tmp: Path, change: Any) -> Path:
    return dump(
        tmp / "otel" / "traces.jsonl", [tr.otel_traces(), tr.otel_broken(change)], lines=True
    )


# (format, builder, the malformed variants: (change, field)) from the converters' tests
CASES = [
    ("label-studio", _ls, [(c[1], c[3]) for c in ann.LS_MALFORMED]),
    ("argilla", _argilla, [(c[1], c[3]) for c in ann.ARGILLA_MALFORMED]),
    ("langfuse", _langfuse, [(c[2], c[3]) for c in tr.LANGFUSE_MALFORMED]),
    ("langsmith", _langsmith, [(c[1], c[4]) for c in tr.LANGSMITH_MALFORMED]),
    ("otel", _otel, [(c[1], c[2]) for c in tr.OTEL_MALFORMED]),
]
MALFORMED = [
    pytest.param(name, build, change, field, id=f"{name}-{k}")
    for name, build, variants in CASES
    for k, (change, field) in enumerate(variants)
]


def options(file_format: str, name: str = "tool") -> ImportOptions:
    return ImportOptions(
        dataset=name,
        task="custom",
        file_format=file_format,
        file_name=f"{file_format}-export",
        create_aspects=True,
    )


def test_every_adapter_has_five_malformed_variants():
    assert all(len(variants) >= 5 for _n, _b, variants in CASES)


@pytest.mark.parametrize(("name", "build", "change", "field"), MALFORMED)
def test_malformed_export_is_located_and_nothing_is_written(tmp_path, name, build, change, field):
    before = row_counts()
    with pytest.raises(ImportValidationError) as caught:
        import_any(build(tmp_path, change), options(name))
    (error,) = caught.value.errors
    assert error.field == field
    assert str(error).count(":") >= 1 and (
        error.line or "line " in error.message or "$" in str(error)
    )
    assert row_counts() == before
    assert not ImportedPreference.objects.exists()


@pytest.mark.parametrize("name", ["label-studio", "argilla", "langfuse", "langsmith", "otel"])
def test_well_formed_export_is_imported_once_and_again_without_duplicates(tmp_path, name):
    path = dict((n, b) for n, b, _v in CASES)[name](tmp_path, lambda *a: None)
    first = import_any(path, options(name))
    counts = row_counts()
    assert first.records > 0 and counts["Output"] > 0
    again = import_any(path, options(name))
    assert row_counts() == counts  # idempotent
    assert again.outputs["created"] == 0 and again.judgments["created"] == 0
    info = Dataset.objects.get(name="tool").source_info
    assert info["licence"]["spdx"] == "user data"


def test_import_records_command_takes_the_format(tmp_path):
    path = _ls(tmp_path, lambda tasks: None)
    out = StringIO()
    args = ["--task", "custom", "--format", "label-studio", "--create-aspects"]
    call_command("import_records", str(path), "--dataset", "ls", *args, stdout=out)
    assert Output.objects.filter(document__dataset__name="ls").exists()
    broken = _ls(tmp_path / "b", ann.LS_MALFORMED[0][1])
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_records", str(broken), "--dataset", "ls2", *args)
    assert not Dataset.objects.filter(name="ls2").exists()


def test_non_commercial_benchmark_is_refused_without_accepting_its_licence(tmp_path):
    with pytest.raises(CommandError, match="accept-licence"):
        call_command("load_benchmark", "chatbot-arena", "--from", str(tmp_path), "--into", "ca")
    assert not Dataset.objects.filter(name="ca").exists()


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is not beside the repository")
def test_load_benchmark_summeval_into_a_dataset_reproduces_the_shared_counts(tmp_path, client):
    lines = shared("summeval.jsonl")
    with (tmp_path / "model_annotations.aligned.paired.jsonl").open("w") as fh:
        for line in lines:
            ratings = {a: three_ratings(v) for a, v in line["human"].items()}
            row = {
                "id": line["doc_id"],
                "model_id": line["system_id"],
                "decoded": line["output"],
                "references": line["references"],
                "text": line["source"],
                "expert_annotations": [{a: r[i] for a, r in ratings.items()} for i in range(3)],
                "turker_annotations": [{a: 3 for a in ratings} for _ in range(5)],
            }
            fh.write(json.dumps(row) + "\n")
    out = StringIO()
    call_command("load_benchmark", "summeval", "--from", str(tmp_path), "--into", "se", stdout=out)
    dataset = Dataset.objects.get(name="se")
    assert Document.objects.filter(dataset=dataset).count() == len({x["doc_id"] for x in lines})
    assert Output.objects.filter(document__dataset=dataset).count() == len(lines) == 1600
    raters = set(
        Judgment.objects.filter(output__document__dataset=dataset).values_list("rater", flat=True)
    )
    assert {"expert1", "expert2", "expert3"} <= raters
    assert dataset.source_info["licence"]["spdx"] == "MIT"
    assert "fabbri2021summeval" in dataset.source_info["citation"]
    coherence = (
        Aspect.objects.get(key="coherence", owner=None)
        if Aspect.objects.filter(key="coherence", owner=None).count() == 1
        else None
    )
    assert coherence is None or coherence.definition
    # again: nothing new
    call_command("load_benchmark", "summeval", "--from", str(tmp_path), "--into", "se", stdout=out)
    assert Output.objects.filter(document__dataset=dataset).count() == 1600
