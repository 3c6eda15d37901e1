"""Ids and score names are read Unicode-normalised (NFC) and trimmed: spellings that read
alike are one document, one system, one score, merged with a note in the import summary;
where they cannot be merged (another source, another output, two stored rows that read
alike) the import refuses with a located error and writes nothing. Before, NFD "café"
and NFC "café", or "d1" and " d1", silently became separate documents (issue 36)."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from studies.models import Dataset, Document, Output
from studies.services.imports import ImportOptions, ImportValidationError, import_file
from tests.conftest import record, row_counts

pytestmark = pytest.mark.django_db
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def run(path: Any, owner: Any, name: str = "ids", fmt: str = "jsonl") -> Any:
    options = ImportOptions(
        dataset=name, task="summarization", file_format=fmt, file_name=path.name, owner=owner
    )
    return import_file(path, options)


def keys(name: str = "ids") -> tuple[list[str], list[tuple[str, str]]]:
    dataset = Dataset.objects.get(name=name)
    docs = sorted(dataset.documents.values_list("doc_key", flat=True))
    outputs = sorted(
        Output.objects.filter(document__dataset=dataset).values_list(
            "document__doc_key", "system_id"
        )
    )
    return docs, outputs


def test_spellings_that_read_alike_in_one_file_are_merged_with_a_note(write_jsonl, cast):
    assert NFC != NFD
    path = write_jsonl(
        [
            record(NFC, "s1"),
            record(NFD, "s2", source=f"Source of {NFC}.", references=[f"Reference of {NFC}."]),
            record(" d2", "s1 "),
            record("d2", "s2", source="Source of  d2.", references=["Reference of  d2."]),
            record("d3", " s9", human={" coherence ": 3.0}),
        ]
    )
    summary = run(path, cast["owner"])
    assert keys() == (
        [NFC, "d2", "d3"],
        [(NFC, "s1"), (NFC, "s2"), ("d2", "s1"), ("d2", "s2"), ("d3", "s9")],
    )
    merged = "\n".join(summary.merged)
    assert (
        f"doc_id {NFC!r} was written 2 ways, merged: {NFC!r} (line 1), {NFD!r} (line 2)" in merged
    )
    assert "doc_id 'd2' was written 2 ways, merged: ' d2' (line 3), 'd2' (line 4)" in merged
    assert "system_id 's1' was written 2 ways, merged: 's1' (line 1), 's1 ' (line 3)" in merged
    assert (
        "human score 'coherence' was written 2 ways, merged: 'coherence' (line 1), "
        "' coherence ' (line 5)"
    ) in merged
    assert (
        "1 id or name trimmed or Unicode-normalised (NFC), e.g. line 5: system_id ' s9' read as 's9'"
        in merged
    )
    judgment = Dataset.objects.get().documents.get(doc_key="d3").outputs.get().judgments.get()
    assert (judgment.aspect.key, judgment.value) == ("coherence", 3.0)


def test_spellings_that_meet_but_disagree_are_a_located_error(write_jsonl, cast):
    path = write_jsonl(
        [
            record(NFC, "s1"),
            record(NFD, "s2", source="Another source."),
            record("d2", "s1", output="One output."),
            record("d2", " s1", output="Another output."),
            record("d3", "s1", human={"coherence": 3.0, "coherence ": 4.0}),
        ]
    )
    with pytest.raises(ImportValidationError) as caught:
        run(path, cast["owner"])
    errors = {(e.line, e.field): e.message for e in caught.value.errors}
    assert errors[(2, "source")] == (
        f"doc_id {NFC!r} has a different source on line 1 (this line writes doc_id {NFD!r})"
    )
    assert errors[(4, "output")].endswith(
        "is already on line 3 with a different output (this line writes system_id ' s1')"
    )
    assert errors[(5, "human.coherence ")] == "names the same score as 'coherence'; keep one"
    assert not Dataset.objects.exists()


def stored(owner: Any, docs: dict[str, list[str]]) -> Dataset:
    """A dataset as an import before this rule left it: ids stored as written."""
    from studies.models import TaskKind

    dataset = Dataset.objects.create(
        name="ids", owner=owner, task=TaskKind.objects.get(code="summarization")
    )
    for key, systems in docs.items():
        doc = Document.objects.create(dataset=dataset, doc_key=key, source=f"Source of {key}.")
        for system in systems:
            Output.objects.create(document=doc, system_id=system, text=f"Old {system}.")
    return dataset


def test_stored_spellings_are_renamed_to_merge_with_the_file(write_jsonl, cast):
    stored(cast["owner"], {"d1 ": ["s1 ", "s2"], "d2": ["s1 "], NFD: ["s2"]})
    path = write_jsonl(
        [
            record("d1", "s1", source="Source of d1 .", references=[]),
            record(NFC, "s2", source=f"Source of {NFD}.", references=[]),
        ]
    )
    summary = run(path, cast["owner"])
    assert keys() == (
        [NFC, "d1", "d2"],
        [(NFC, "s2"), ("d1", "s1"), ("d1", "s2"), ("d2", "s1")],  # s1 renamed everywhere
    )
    assert summary.outputs == {"created": 0, "updated": 2}  # merged, not duplicated
    assert summary.documents["created"] == 0
    assert sorted(summary.merged) == sorted(
        [
            "doc_id 'd1 ' already in the dataset renamed 'd1', merged with the file's",
            f"doc_id {NFD!r} already in the dataset renamed {NFC!r}, merged with the file's",
            "system_id 's1 ' already in the dataset renamed 's1', merged with the file's",
        ]
    )


def test_two_stored_rows_that_read_alike_refuse_the_import_naming_both(write_jsonl, cast):
    stored(cast["owner"], {"d1": ["s1"], "d1 ": ["s2"], "d2": ["s1", "s1 "]})
    before = row_counts()
    for rows, field, names in (
        ([record("d1", "s3")], "doc_id", "2 documents already in the dataset ('d1' and 'd1 ')"),
        (
            [record("d3", "s1")],
            "system_id",
            "2 outputs of 'd2' already in the dataset ('s1' and 's1 ')",
        ),
    ):
        with pytest.raises(ImportValidationError) as caught:
            run(write_jsonl(rows), cast["owner"])
        (error,) = caught.value.errors
        assert (error.line, error.field) == (0, field) and names in error.message, error
        assert row_counts() == before


def test_a_csv_file_is_read_the_same_way(tmp_path, cast):
    path = tmp_path / "ids.csv"
    path.write_text(
        f"doc_id,system_id,source,output, human_coherence \n{NFD},s1,S,O1,3\n {NFC} ,s2 ,S,O2,4\n",
        encoding="utf-8",
    )
    summary = run(path, cast["owner"], fmt="csv")
    assert keys() == ([NFC], [(NFC, "s1"), (NFC, "s2")])
    assert f"doc_id {NFC!r} was written 2 ways, merged: {NFD!r} (line 2), ' {NFC} ' (line 3)" in (
        summary.merged
    )
