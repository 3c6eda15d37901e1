"""Each class of malformed input gives a located error and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.services.datasets import ImportOptions, ImportValidationError, import_file
from tests.conftest import record, row_counts

pytestmark = pytest.mark.django_db


def run_import(path: Path, *, create_aspects: bool = False, file_format: str = "jsonl") -> None:
    import_file(
        path,
        ImportOptions(
            dataset="bad",
            task="summarization",
            file_format=file_format,
            file_name=path.name,
            create_aspects=create_aspects,
        ),
    )


def assert_rejected(path: Path, expected: str, **kwargs: object) -> ImportValidationError:
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        run_import(path, **kwargs)  # type: ignore[arg-type]
    assert expected in str(info.value), str(info.value)
    assert row_counts() == before
    return info.value


def test_invalid_json_names_the_line(write_jsonl):
    path = write_jsonl([record("d1"), '{"doc_id": "d2", "system_id": ', record("d3")])
    error = assert_rejected(path, "line 2")
    assert "invalid JSON" in str(error)


def test_missing_field_names_line_and_field(write_jsonl):
    bad = record("d2")
    del bad["output"]
    assert_rejected(
        write_jsonl([record("d1"), bad]), "line 2, field 'output': missing required field"
    )


def test_non_numeric_score_names_line_and_field(write_jsonl):
    bad = record("d3", human={"coherence": "high"})
    assert_rejected(
        write_jsonl([record("d1"), record("d2"), bad]),
        "line 3, field 'human.coherence': expected a number, got 'high'",
    )


def test_nan_score_is_rejected(write_jsonl):
    assert_rejected(
        write_jsonl(
            [
                '{"doc_id": "d", "system_id": "s", "source": "x", "output": "y", '
                '"human": {"coherence": NaN}}'
            ]
        ),
        "line 1",
    )


def test_unknown_aspect_is_rejected_without_create_aspects(write_jsonl):
    path = write_jsonl([record("d1", human={"sparkle": 2.0})])
    assert_rejected(path, "line 1, field 'human.sparkle': unknown aspect 'sparkle'")


def test_unknown_aspect_is_created_with_create_aspects(write_jsonl):
    from studies.models import Aspect, Judgment

    run_import(
        write_jsonl([record("d1", human={"sparkle": 2.0}), record("d2", human={"sparkle": 7.0})]),
        create_aspects=True,
    )
    aspect = Aspect.objects.get(code="SPARKLE")
    assert (aspect.scale_min, aspect.scale_max, aspect.version) == (2.0, 7.0, 1)
    assert Judgment.objects.filter(aspect=aspect).count() == 2


def test_duplicate_output_with_conflicting_text_names_both_lines(write_jsonl):
    path = write_jsonl(
        [record("d1", "s1"), record("d2", "s1"), record("d1", "s1", output="Other text.")]
    )
    assert_rejected(
        path,
        "line 3, field 'output': doc_id 'd1', system_id 's1' is already on line 1 "
        "with a different output",
    )


def test_duplicate_output_with_identical_text_is_merged(write_jsonl):
    from studies.models import Output

    run_import(write_jsonl([record("d1", "s1"), record("d1", "s1")]))
    assert Output.objects.count() == 1


def test_document_with_two_sources_is_rejected(write_jsonl):
    path = write_jsonl([record("d1", "s1"), record("d1", "s2", source="Another source.")])
    assert_rejected(path, "line 2, field 'source': doc_id 'd1' has a different source on line 1")


def test_empty_file_is_rejected(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert_rejected(path, "the file is empty")
    path.write_bytes(b"\n  \n")
    assert_rejected(path, "the file is empty")


def test_empty_csv_with_header_only_is_rejected(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("doc_id,system_id,source,reference,output,human_coherence\n")
    assert_rejected(path, "a header but no records", file_format="csv")


def test_wrong_encoding_names_the_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    lines = [
        json.dumps(record("d1")),
        json.dumps(record("d2", output="Caf\u00e9 cr\u00e8me"), ensure_ascii=False),
    ]
    path.write_bytes(lines[0].encode() + b"\n" + lines[1].encode("latin-1") + b"\n")
    assert_rejected(path, "line 2: not valid UTF-8")


def test_line_over_the_size_limit_is_rejected_and_later_lines_still_checked(write_jsonl, settings):
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_LINE_BYTES": 2048}
    huge = record("d2", output="x" * 5000)
    bad = record("d3", human={"coherence": "?"})
    error = assert_rejected(
        write_jsonl([record("d1"), huge, bad]), "line 2: line is longer than 2048 bytes"
    )
    assert "line 3, field 'human.coherence'" in str(error)


def test_unknown_field_is_rejected(write_jsonl):
    assert_rejected(
        write_jsonl([record("d1", humna={"coherence": 1})]), "line 1, field 'humna': unknown field"
    )


def test_wrong_task_for_existing_dataset_is_rejected(write_jsonl):
    run_import(write_jsonl([record("d1")]))
    path = write_jsonl([record("d2")], name="more.jsonl")
    before = row_counts()
    with pytest.raises(
        ImportValidationError, match="exists with task 'summarization', not 'dialogue'"
    ):
        import_file(
            path,
            ImportOptions(dataset="bad", task="dialogue", file_format="jsonl", file_name=path.name),
        )
    assert row_counts() == before


def test_csv_non_numeric_metric_names_row_and_column(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(
        "doc_id,system_id,source,reference,output,human_coherence,metric_rouge1\n"
        "d1,s1,src,ref,out,3,0.5\n"
        "d1,s2,src,ref,out2,4,n/a\n"
    )
    assert_rejected(
        path, "line 3, field 'metrics.rouge1': expected a number, got 'n/a'", file_format="csv"
    )


def test_csv_missing_column_is_reported(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("doc_id,source,reference,output\nd1,src,ref,out\n")
    assert_rejected(path, "field 'system_id': missing required column", file_format="csv")


def test_all_errors_are_reported_at_once(write_jsonl):
    bad = [record(f"d{i}", human={"coherence": "bad"}) for i in range(5)]
    error = assert_rejected(write_jsonl(bad), "line 1")
    assert [e.line for e in error.errors] == [1, 2, 3, 4, 5]


def test_error_report_is_capped(write_jsonl):
    error = assert_rejected(write_jsonl(["{"] * 60), "and 10 more problems")
    assert len(error.errors) == 50
