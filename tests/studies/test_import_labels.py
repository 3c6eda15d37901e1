"""Labels and per-annotator data in one import file: binary and categorical values stored
as their label's position, each rater's value a judgment of its own (JSONL
``annotators``, CSV ``human_<aspect>@<rater>``), ``human`` not used where the file gives
the aspect per annotator (and the summary says so), the aspects ``--create-aspects``
makes, located errors with nothing written, idempotent re-imports, export round trips."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from studies.models import Aspect, Dataset, Judgment, Output
from studies.services.imports import (
    ImportOptions,
    ImportValidationError,
    export_dataset,
    import_file,
)
from tests.conftest import record, row_counts

pytestmark = pytest.mark.django_db


def run_import(path: Path, dataset: str = "labels", **kw: object):  # type: ignore[no-untyped-def]
    fmt = "csv" if path.suffix == ".csv" else "jsonl"
    options = ImportOptions(
        dataset=dataset, task="summarization", file_format=fmt, file_name=path.name, **kw
    )
    return import_file(path, options)  # type: ignore[arg-type]


def consistency() -> Aspect:
    aspect = Aspect(
        code="CONS",
        name="Consistent",
        definition="Is every fact supported?",
        kind="binary",
        labels=["fail", "pass"],
        positive="pass",
    )
    aspect.full_clean()
    aspect.save()
    return aspect


def rated(doc: str, system: str, **raters: str) -> dict[str, object]:
    human = {"consistent": "pass", "coherence": 3}
    return record(doc, system, human=human, annotators={"consistent": raters})


def judgments(aspect: str) -> dict[tuple[str, str], float]:
    rows = Judgment.objects.filter(aspect__code=aspect).values_list(
        "output__system_id", "rater", "value"
    )
    return {(system, rater): value for system, rater, value in rows}


def test_each_raters_label_is_a_judgment_and_human_is_not_used(write_jsonl):
    consistency()
    path = write_jsonl(
        [rated("d1", "s1", ann1="fail", ann2="pass"), rated("d1", "s2", ann1="pass")]
    )
    summary = run_import(path)
    assert judgments("CONS") == {("s1", "ann1"): 0.0, ("s1", "ann2"): 1.0, ("s2", "ann1"): 1.0}
    assert Judgment.objects.filter(aspect__code="COH", rater="").count() == 2  # human: used
    assert "consistent: 3 judgments by 2 annotators (ann1, ann2)" in summary.notes
    assert any(n.startswith("human.consistent was not used (2 values)") for n in summary.notes), (
        summary.notes
    )
    assert summary.judgments == {"created": 5, "updated": 0}
    again = run_import(path)  # idempotent
    assert again.judgments == {"created": 0, "updated": 0}
    changed = write_jsonl(
        [rated("d1", "s1", ann1="pass", ann2="pass"), rated("d1", "s2", ann1="pass")]
    )
    assert run_import(changed).judgments == {"created": 0, "updated": 1}
    assert judgments("CONS")[("s1", "ann1")] == 1.0


def test_csv_rater_columns_import_as_the_jsonl_annotators(tmp_path):
    consistency()
    path = tmp_path / "raters.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        header = ["doc_id", "system_id", "source", "output"]
        writer.writerow(
            header + ["human_consistent@ann1", "human_Consistent@ann2", "human_coherence"]
        )
        writer.writerow(["d1", "s1", "Src.", "Out 1.", "fail", "pass", "3"])
        writer.writerow(["d1", "s2", "Src.", "Out 2.", "pass", "", "4"])
    summary = run_import(path)
    assert judgments("CONS") == {("s1", "ann1"): 0.0, ("s1", "ann2"): 1.0, ("s2", "ann1"): 1.0}
    assert summary.judgments["created"] == 5


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            rated("d1", "s1", ann1="fail", ann2="maybe"),
            "line 2, field 'annotators.consistent.ann2': 'maybe' is not one of fail, pass",
        ),
        (
            record("d1", "s1", annotators={"nonesuch": {"a": 1}}),
            "line 2, field 'annotators.nonesuch': unknown aspect 'nonesuch'",
        ),
        (
            record("d1", "s1", annotators={"consistent": ["fail", "pass"]}),
            "line 2, field 'annotators.consistent': expected an object {\"rater\": value}",
        ),
        (
            record("d1", "s1", annotators={"consistent": {" ": "fail"}}),
            "line 2, field 'annotators.consistent. ': a rater id must not be empty",
        ),
        (
            record("d1", "s1", annotators={"consistent": {"ann1": ["fail"]}}),
            "line 2, field 'annotators.consistent.ann1': expected a number or a label",
        ),
        (
            record("d1", "s1", annotators={"coherence": {"ann1": "high"}}),
            "line 2, field 'annotators.coherence.ann1': expected a number, got 'high' "
            "(COH is a scale aspect, 1–5)",
        ),
        (
            record("d1", "s1", annotators={"coherence": {"ann1": 7}}),
            "line 2, field 'annotators.coherence.ann1': 7 is outside the aspect's scale 1–5",
        ),
        (
            record("d1", "s1", human={"consistent": 2}),
            "line 2, field 'human.consistent': '2' is not one of fail, pass",
        ),
        (
            record("d1", "s1", humna={"consistent": "pass"}),
            "line 2, field 'humna': unknown field",
        ),
    ],
)
def test_a_bad_value_is_located_and_nothing_is_written(write_jsonl, line, expected):
    consistency()
    path = write_jsonl([record("d0", "s0", human={"consistent": "pass"}), line])
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        run_import(path)
    assert expected in str(info.value), str(info.value)
    assert row_counts() == before


def test_a_human_value_is_not_checked_where_the_file_gives_the_aspect_per_annotator(
    write_jsonl,
):
    consistency()
    mean = record("d1", "s1", human={"consistent": 0.67}, annotators={"consistent": {"a": "fail"}})
    run_import(write_jsonl([mean]))  # 0.67 is no label, but it is not used
    assert judgments("CONS") == {("s1", "a"): 0.0}


def test_create_aspects_makes_binary_categorical_and_scale_aspects_and_says_so(write_jsonl):
    lines = [
        record(
            f"d{k}",
            "s1",
            human={"hallucinated": k % 2, "verdict": ["No", "Yes"][k % 2], "quality": k + 0.5},
            annotators={"error_type": {"r1": ["none", "minor", "major"][k % 3]}},
        )
        for k in range(4)
    ]
    summary = run_import(write_jsonl(lines), create_aspects=True)
    keys = ["hallucinated", "verdict", "error_type", "quality"]
    made = {a.key: a for a in Aspect.objects.filter(key__in=keys)}
    assert (made["hallucinated"].kind, made["hallucinated"].labels) == ("binary", ["0", "1"])
    assert made["hallucinated"].positive == "1"
    assert (made["verdict"].kind, made["verdict"].labels, made["verdict"].positive) == (
        "binary",
        ["No", "Yes"],
        "Yes",
    )
    assert made["error_type"].kind == "categorical" and not made["error_type"].ordered
    assert made["error_type"].labels == ["major", "minor", "none"]
    assert (made["quality"].kind, made["quality"].scale_min, made["quality"].scale_max) == (
        "scale",
        0.0,
        4.0,
    )
    said = " | ".join(summary.scales)
    assert "created HALLUCINATED, a binary aspect with the labels 0, 1 (positive: 1)" in said
    assert "created ERROR_TYPE, a categorical aspect with the labels major, minor, none" in said
    stored = dict(
        Judgment.objects.filter(aspect__key="verdict").values_list(
            "output__document__doc_key", "value"
        )
    )
    assert stored == {"d0": 0.0, "d1": 1.0, "d2": 0.0, "d3": 1.0}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, "x"], "line 2, field 'human.mixed': the file gives numbers (first on line 1)"),
        (["x", "x"], "line 1, field 'human.mixed': the file gives it the one label 'x'"),
    ],
)
def test_create_aspects_refuses_what_makes_no_aspect(write_jsonl, values, expected):
    path = write_jsonl([record(f"d{k}", human={"mixed": v}) for k, v in enumerate(values)])
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        run_import(path, create_aspects=True)
    assert expected in str(info.value), str(info.value)
    assert row_counts() == before


def test_extra_plain_keys_are_left_out_and_named(write_jsonl):
    summary = run_import(write_jsonl([record("d1", document="news-1", sentence_type="split")]))
    assert "keys left out (not part of the import format): document (1 lines), " in (
        " ".join(summary.notes)
    )
    assert summary.outputs["created"] == 1


def test_an_output_whose_line_gives_other_references_keeps_its_own(write_jsonl):
    lines = [
        record("d1", "sys", references=["The gold summary."]),
        record("d1", "gold", output="The gold summary.", references=[]),
    ]
    run_import(write_jsonl(lines))
    outputs = {o.system_id: o for o in Output.objects.select_related("document")}
    assert outputs["sys"].references is None
    assert outputs["sys"].reference_texts() == ["The gold summary."]
    assert outputs["gold"].reference_texts() == []


def test_an_export_imports_again_with_its_raters_and_labels(write_jsonl, tmp_path):
    consistency()
    lines = [
        rated("d1", "s1", ann1="fail", ann2="pass", ann3="pass"),
        rated("d1", "s2", ann1="fail", ann2="fail"),
    ]
    run_import(write_jsonl(lines))
    exported = "".join(export_dataset(_dataset("labels"), "jsonl"))
    first = json.loads(exported.splitlines()[0])
    assert first["annotators"]["consistent"] == {"ann1": "fail", "ann2": "pass", "ann3": "pass"}
    assert first["human"]["consistent"] == "pass"  # the majority label
    again = tmp_path / "again.jsonl"
    again.write_text(exported, encoding="utf-8")
    run_import(again, dataset="copy")
    copied = Judgment.objects.filter(
        output__document__dataset__name="copy", aspect__code="CONS"
    ).values_list("output__system_id", "rater", "value")
    assert sorted(copied) == sorted(
        (s, r, v) for (s, r), v in judgments_of("labels", "CONS").items()
    )
    table = "".join(export_dataset(_dataset("labels"), "csv"))
    header = next(csv.reader(io.StringIO(table)))
    assert "human_consistent@ann3" in header and "human_consistent" in header


def _dataset(name: str) -> Dataset:
    return Dataset.objects.get(name=name)


def judgments_of(dataset: str, aspect: str) -> dict[tuple[str, str], float]:
    rows = Judgment.objects.filter(
        output__document__dataset__name=dataset, aspect__code=aspect
    ).values_list("output__system_id", "rater", "value")
    return {(s, r): v for s, r, v in rows}
