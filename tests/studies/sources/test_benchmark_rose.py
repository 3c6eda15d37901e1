"""The RoSE loader on small files written in the layout its docstring gives (the
examples as the dataset's loading script yields them): every emitted field, the
statistics the file lets one reproduce, and located errors."""

from __future__ import annotations

import io
import json
import tarfile
from statistics import mean
from typing import Any

import pytest

from studies.services.sources import convert
from tests.studies.sources.conftest import located, write_lines

SYSTEMS = {"bart": [1, 1, 0, 1], "brio": [0, 1, 0, 0], "gold": [1, 1, 1, 1]}


def example(count_id: int, systems: dict[str, list[int]] = SYSTEMS) -> dict[str, Any]:
    reference = f"The reference of {count_id}."
    return {
        "source": f"Document {count_id}.",
        "reference": reference,
        "reference_acus": [f"fact {count_id}.{k}" for k in range(4)],
        "count_id": count_id,
        "example_id": f"ex{count_id:03d}",
        "annotations": {
            name: {
                "acu_labels": labels,
                "acu": sum(labels) / len(labels),
                "normalized_acu": sum(labels) / len(labels) * 0.8,
            }
            for name, labels in systems.items()
        },
        "system_outputs": {
            name: reference if name == "gold" else f"{name} summary of {count_id}"
            for name in systems
        },
    }


def test_rose_gives_one_record_per_system_with_its_acu_scores(tmp_path):
    (tmp_path / "cnndm_test.json").write_text(json.dumps([example(0), example(1)], indent=1))
    dataset = convert("rose", tmp_path)
    rows = list(dataset.records())
    # the published shape of a subset: every document scored for every system
    assert len(rows) == 2 * 3 and len({r["doc_id"] for r in rows}) == 2
    assert {r["system_id"] for r in rows if r["doc_id"] == "ex000"} == set(SYSTEMS)
    bart = rows[0]
    assert (bart["doc_id"], bart["system_id"]) == ("ex000", "bart")
    assert bart["source"] == "Document 0." and bart["output"] == "bart summary of 0"
    assert bart["references"] == ["The reference of 0."]
    assert bart["human"] == {"acu": 0.75, "normalized_acu": pytest.approx(0.6)}
    assert bart["context"] == {"reference_acus": [f"fact 0.{k}" for k in range(4)], "count_id": 0}
    gold = next(r for r in rows if r["system_id"] == "gold")
    assert gold["references"] == [] and gold["output"] == "The reference of 0."
    # a system's mean ACU score, as the RoSE notebook computes it, from the records
    brio = [r["human"]["acu"] for r in rows if r["system_id"] == "brio"]
    assert mean(brio) == 0.25
    assert [a.name for a in dataset.aspects] == ["acu", "normalized_acu"]
    assert all(a.kind == "scale" and (a.low, a.high) == (0, 1) for a in dataset.aspects)
    assert list(dataset.pairs()) == []


def test_rose_reads_json_lines_and_the_release_archive_by_subset(tmp_path):
    lines = tmp_path / "lines"
    write_lines(lines / "samsum.jsonl", [example(5)])
    assert [r["doc_id"] for r in convert("rose", lines, subset="samsum").records()] == ["ex005"] * 3
    packed = tmp_path / "packed"
    packed.mkdir()
    with tarfile.open(packed / "rose_data.tar.gz", "w:gz") as archive:
        for subset, count_id in (("cnndm_test", 1), ("xsum", 7)):
            body = (json.dumps(example(count_id)) + "\n").encode()
            member = tarfile.TarInfo(f"rose_data/{subset}.json")
            member.size = len(body)
            archive.addfile(member, io.BytesIO(body))
    rows = list(convert("rose", packed, subset="xsum").records())
    assert {r["doc_id"] for r in rows} == {"ex007"} and len(rows) == 3


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda e: e["annotations"]["brio"].update(acu=0.5), "annotations.brio.acu", "mean"),
        (
            lambda e: e["annotations"]["bart"].update(acu_labels=[1, 0]),
            "annotations.bart.acu_labels",
            "2 labels for 4",
        ),
        (lambda e: e["annotations"]["gold"].update(acu="high"), "annotations.gold.acu", "number"),
        (lambda e: e["system_outputs"].pop("brio"), "system_outputs.brio", "missing"),
        (lambda e: e.pop("reference"), "reference", "missing"),
    ],
)
def test_rose_malformed_example_is_located_and_nothing_written(tmp_path, change, field, message):
    bad = example(1)
    change(bad)
    path = tmp_path / "cnndm_test.json"
    path.write_text(json.dumps([example(0), bad], indent=1))
    error = located("rose", path)
    assert error.problem.where.startswith("$[1] (line ")
    assert error.problem.field == field and message in error.problem.message
