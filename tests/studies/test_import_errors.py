"""Each class of malformed input gives a located error and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.services.imports import ImportOptions, ImportValidationError, import_file
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


@pytest.mark.parametrize(
    ("columns", "values", "expected"),
    [
        (
            "human_coherence,human_coherence",
            "3,4",
            "field 'human_coherence': duplicate column: 'human_coherence' appears twice "
            "(columns 6 and 7)",
        ),
        (
            "human_coherence,human_Coherence",
            "3,4",
            "field 'human_Coherence': duplicate column: 'human_coherence' and 'human_Coherence' "
            "(columns 6 and 7) name the same scores",
        ),
        (
            "metric_rouge1,metric_rouge1",
            "0.25,0.5",
            "field 'metric_rouge1': duplicate column: 'metric_rouge1' appears twice "
            "(columns 6 and 7)",
        ),
        (
            "reference",
            "r2",
            "field 'reference': duplicate column: 'reference' appears twice (columns 4 and 6)",
        ),
    ],
)
def test_a_duplicate_csv_column_names_line_1_and_both_columns(tmp_path, columns, values, expected):
    """Two columns for one value: the second would silently replace the first (3 -> 4)."""
    path = tmp_path / "twice.csv"
    path.write_text(
        f"doc_id,system_id,source,reference,output,{columns}\nd1,s1,src,ref,out,{values}\n"
    )
    error = assert_rejected(path, f"line 1, {expected}", file_format="csv")
    assert len(error.errors) == 1


def test_all_errors_are_reported_at_once(write_jsonl):
    bad = [record(f"d{i}", human={"coherence": "bad"}) for i in range(5)]
    error = assert_rejected(write_jsonl(bad), "line 1")
    assert [e.line for e in error.errors] == [1, 2, 3, 4, 5]


def test_error_report_is_capped(write_jsonl):
    error = assert_rejected(write_jsonl(["{"] * 60), "and 10 more problems")
    assert len(error.errors) == 50


# --- structure of a line: duplicate keys, ids as text, what no database can store --------


def test_duplicate_top_level_key_names_the_line_and_key(write_jsonl):
    line = json.dumps(record("d2"))[:-1] + ', "output": "Second output."}'
    assert_rejected(
        write_jsonl([record("d1"), line]),
        "line 2, field 'output': duplicate key: it appears more than once in the same object",
    )


@pytest.mark.parametrize("group", ["human", "metrics"])
def test_duplicate_key_inside_scores_names_the_nested_key(write_jsonl, group):
    line = (
        '{"doc_id": "d1", "system_id": "s1", "source": "x", "output": "y", '
        f'"{group}": {{"coherence": 1, "coherence": 5}}}}'
    )
    assert_rejected(write_jsonl([line]), f"line 1, field '{group}.coherence': duplicate key")


def test_duplicate_key_deep_in_the_context_is_located(write_jsonl):
    line = json.dumps(record("d1"))[:-1] + ', "context": {"turns": [{"a": 1, "a": 2}]}}'
    assert_rejected(write_jsonl([line]), "line 1, field 'context.turns[0].a': duplicate key")


@pytest.mark.parametrize("value", [1, 1.0, 10**30])
@pytest.mark.parametrize("name", ["doc_id", "system_id"])
def test_numeric_id_is_rejected_with_a_hint_to_quote_it(write_jsonl, name, value):
    assert_rejected(
        write_jsonl([record("d0"), record(**{"doc": "d1", name: value})]),  # type: ignore[arg-type]
        f"line 2, field '{name}': expected text, got the number {json.dumps(value)}; "
        f'write ids in quotes ("{json.dumps(value)}")',
    )


def test_quoted_numeric_ids_match_the_same_ids_in_csv(write_jsonl, tmp_path):
    from studies.models import Output

    run_import(write_jsonl([record("1", "7")]))
    path = tmp_path / "same.csv"
    path.write_text(
        "doc_id,system_id,source,reference,output\n1,7,Source of 1.,Reference of 1.,New.\n"
    )
    run_import(path, file_format="csv")
    assert [(o.document.doc_key, o.system_id, o.text) for o in Output.objects.all()] == [
        ("1", "7", "New.")
    ]


def test_ten_thousand_levels_of_nesting_are_located(write_jsonl):
    deep = '{"doc_id": "d1", "system_id": "s", "source": "x", "output": "y", "context": '
    deep += "[" * 10_000 + "]" * 10_000 + "}"
    assert_rejected(write_jsonl([record("d0"), deep]), "line 2: invalid JSON: nested deeper than")


def test_moderate_nesting_beyond_the_limit_is_located(write_jsonl):
    deep = json.dumps(record("d1"))[:-1] + ', "context": ' + "[" * 200 + "]" * 200 + "}"
    assert_rejected(write_jsonl([deep]), "line 1, field 'context")


@pytest.mark.parametrize("field", ["output", "source", "doc_id"])
def test_lone_surrogate_is_located(write_jsonl, field):
    line = json.dumps(record("d1", **{field: "bad \ud800 text"}))
    assert "\\ud800" in line
    error = assert_rejected(write_jsonl([record("d0"), line]), f"line 2, field '{field}'")
    assert "lone surrogate (\\ud800 at position 5)" in str(error)


def test_nul_in_a_jsonl_string_is_located(write_jsonl):
    line = json.dumps(record("d1", references=["ok", "a\x00b"]))
    assert "\\u0000" in line
    assert_rejected(
        write_jsonl([line]),
        "line 1, field 'references[1]': contains a NUL character (\\u0000 at position 2)",
    )


def test_nul_byte_in_a_csv_cell_is_located(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes(
        b"doc_id,system_id,source,reference,output\nd1,s1,src,ref,fine\nd2,s1,src,ref,bro\x00ken\n"
    )
    assert_rejected(path, "line 3, field 'output': contains a NUL character", file_format="csv")


def test_an_integer_beyond_a_float_is_not_a_number(write_jsonl):
    line = json.dumps(record("d1"))[:-1] + ', "metrics": {"m": 1' + "0" * 400 + "}}"
    assert_rejected(write_jsonl([line]), "line 1, field 'metrics.m': expected a number")


def test_metric_name_longer_than_a_run_can_hold_is_rejected(write_jsonl):
    assert_rejected(
        write_jsonl([record("d1", metrics={"m" * 65: 0.5})]),
        "field 'metrics." + "m" * 65 + "': name must be letters, digits, _ . : - (at most 64)",
    )


def test_two_names_for_one_aspect_are_rejected(write_jsonl):
    assert_rejected(
        write_jsonl([record("d1", human={"coherence": 3.0, "COH": 4.0})]),
        "line 1, field 'human.COH': names the same aspect as 'coherence'",
    )
    assert_rejected(
        write_jsonl([record("d1", human={"new_one": 3.0, "New_one": 4.0})]),
        "names the same aspect as 'new_one'",
        create_aspects=True,
    )


def test_created_aspects_whose_codes_would_collide_get_distinct_codes(write_jsonl):
    from studies.models import Aspect

    long_a, long_b = "x" * 40 + "a", "x" * 40 + "b"
    run_import(write_jsonl([record("d1", human={long_a: 1.0, long_b: 2.0})]), create_aspects=True)
    codes = sorted(Aspect.objects.filter(code__startswith="XXX").values_list("code", flat=True))
    assert codes == ["X" * 32, "X" * 30 + "_2"]


def test_error_messages_escape_what_a_database_cannot_store(write_jsonl):
    line = '{"doc_id": "d1", "system_id": "s", "source": "x", "output": "y", "a\\u0000\\ud800": 1}'
    error = assert_rejected(write_jsonl([line]), "line 1")
    assert "\x00" not in str(error) and "\ud800" not in str(error)
    assert "a\\u0000\\ud800" in str(error)


@pytest.mark.parametrize("name", ["<script>alert(1)</script>", "two words", "", "x" * 101])
def test_a_dataset_name_that_is_not_a_slug_is_rejected_by_the_service(write_jsonl, name):
    """Commands and workers call the service without the upload form's check."""
    path = write_jsonl([record("d1")])
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        import_file(
            path,
            ImportOptions(
                dataset=name, task="summarization", file_format="jsonl", file_name=path.name
            ),
        )
    assert "field 'dataset': the dataset name" in str(info.value)
    assert row_counts() == before


def test_a_line_with_thousands_of_metrics_is_refused_at_the_first_past_the_cap(write_jsonl):
    """One 100 KB line would otherwise create 5,001 metric runs."""
    metrics = {f"m{i}": 0.5 for i in range(5001)}
    path = write_jsonl([record("d1", metrics=metrics)])
    assert path.stat().st_size > 50_000
    error = assert_rejected(
        path,
        "line 1, field 'metrics.m100': the file names more than 100 metrics; one import takes "
        "at most 100 metrics (IMPORT_MAX_METRICS)",
    )
    assert len(error.errors) == 1


def test_metrics_past_the_cap_over_several_lines_are_located(write_jsonl, settings):
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_METRICS": 3}
    lines = [
        record("d1", metrics={"a": 1.0, "b": 1.0}),
        record("d2", metrics={"b": 1.0, "c": 1.0}),
        record("d3", metrics={"a": 1.0, "d": 1.0, "e": 1.0}),
        record("d4", metrics={"f": 1.0}),
    ]
    error = assert_rejected(write_jsonl(lines), "line 3, field 'metrics.d': the file names more")
    assert len(error.errors) == 1


def test_a_csv_with_thousands_of_metric_columns_is_refused_on_its_header(tmp_path):
    names = [f"metric_m{i}" for i in range(5001)]
    path = tmp_path / "wide.csv"
    path.write_text(
        "doc_id,system_id,source,output," + ",".join(names) + "\n"
        "d1,s1,src,out," + ",".join(["0.5"] * len(names)) + "\n"
    )
    assert_rejected(
        path,
        "line 1, field 'metric_m100': the file has 5001 metric columns; one import takes at "
        "most 100 metrics (IMPORT_MAX_METRICS)",
        file_format="csv",
    )


def test_a_file_with_as_many_metrics_as_the_cap_imports(write_jsonl, settings):
    from studies.models import MetricRun

    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_METRICS": 5}
    run_import(write_jsonl([record("d1", metrics={f"m{i}": 0.5 for i in range(5)})]))
    assert MetricRun.objects.count() == 5
