"""An import reads and parses its file once: the validation keeps the valid items
(studies/services/imports/kept.py) and the write takes them back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.models import Document, Judgment, Output
from studies.services.imports import ImportOptions, ImportValidationError, import_file
from studies.services.imports import records as records_module
from studies.services.imports.kept import Kept
from studies.services.imports.records import read_records
from tests.conftest import record, row_counts


def options(path: Path) -> ImportOptions:
    return ImportOptions(
        dataset="kept", task="summarization", file_format="jsonl", file_name=path.name
    )


def read(path: Path) -> list[object]:
    with path.open("rb") as stream:
        return list(read_records(stream, "jsonl", max_line_bytes=1 << 20))


@pytest.mark.django_db
def test_the_file_is_parsed_once_per_line(write_jsonl, monkeypatch):
    path = write_jsonl([record("d1", f"s{i}") for i in range(5)] + [record("d2")])
    parsed: list[int] = []
    parse = records_module.parse_json

    def counting(number, where, text):  # type: ignore[no-untyped-def]
        parsed.append(number)
        return parse(number, where, text)

    monkeypatch.setattr(records_module, "parse_json", counting)
    summary = import_file(path, options(path))
    assert summary.outputs["created"] == 6
    assert sorted(parsed) == [1, 2, 3, 4, 5, 6]


@pytest.mark.django_db
def test_what_is_written_is_what_was_validated_even_if_the_file_changes(write_jsonl, monkeypatch):
    """The upload rewritten between the validation and the write (another process, a
    re-upload under the same name) cannot slip an unchecked line in."""
    from studies.services.imports import write as writing

    path = write_jsonl([record("d1", "s1"), record("d1", "s2")])
    validate = writing.validate_file

    def then_the_file_changes(path, options):  # type: ignore[no-untyped-def]
        plan = validate(path, options)
        path.write_text(json.dumps(record("d9", "s9", human={"coherence": 99.0})) + "\n")
        return plan

    monkeypatch.setattr(writing, "validate_file", then_the_file_changes)
    summary = import_file(path, options(path))
    assert summary.outputs["created"] == 2
    assert sorted(Output.objects.values_list("system_id", flat=True)) == ["s1", "s2"]
    assert not Document.objects.filter(doc_key="d9").exists()
    assert set(Judgment.objects.values_list("value", flat=True)) == {3.0, 4.0}


@pytest.mark.django_db
def test_a_line_that_repeats_a_bad_source_is_located_too(write_jsonl):
    """Lines of one document that agree with the line before them skip the source's
    digest only when that line agreed with the document's first."""
    other = {"source": "Another source."}
    path = write_jsonl(
        [record("d1", "s1"), record("d1", "s2", **other), record("d1", "s3", **other)]
    )
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        import_file(path, options(path))
    text = str(info.value)
    for line in (2, 3):
        assert f"line {line}, field 'source': doc_id 'd1' has a different source" in text
    assert row_counts() == before


@pytest.mark.django_db
def test_a_context_that_differs_only_in_number_type_is_located(write_jsonl):
    path = write_jsonl(
        [record("d1", "s1", context={"turns": 1}), record("d1", "s2", context={"turns": 1.0})]
    )
    with pytest.raises(ImportValidationError, match="line 2, field 'context'"):
        import_file(path, options(path))


@pytest.mark.django_db
def test_kept_items_come_back_in_order_across_chunks_and_from_disk(write_jsonl, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    items = read(write_jsonl([record(f"d{i // 3}", f"s{i % 3}") for i in range(25)]))
    kept = Kept(chunk=4, in_memory=256)  # chunks of 4, on disk past 256 bytes
    for item in items:
        kept.add(item)
    assert kept.count == 25
    again = list(kept)
    assert again == items
    assert list(kept) == items  # read back twice alike
    kept.close()


@pytest.mark.django_db
def test_lines_of_one_document_share_its_source_in_what_is_kept(write_jsonl):
    items = read(write_jsonl([record("d1", "s1"), record("d1", "s2"), record("d2", "s1")]))
    kept = Kept(chunk=10)
    for item in items:
        kept.add(item)
    first, second, third = list(kept)
    assert second.source == first.source and second.source is first.source
    assert second.references is first.references
    assert third.source == "Source of d2."


def test_dropped_items_are_not_given_back(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    kept = Kept(chunk=2)
    kept.add("a")
    kept.add("b")
    kept.add("c")
    kept.drop()
    kept.add("d")
    with pytest.raises(RuntimeError, match="dropped"):
        list(kept)
