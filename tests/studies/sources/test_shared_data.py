"""Benchmark loaders against the benchmarks ``../shared/data`` holds: the raw published
layout is written back from the shared file, converted, and the result compared with the
shared file field by field, reproducing its counts and annotators per item."""

from __future__ import annotations

import io
import json
import random
import tarfile
from collections import Counter
from typing import Any

import pytest

from studies.services.sources import convert
from tests.conftest import SHARED_DATA
from tests.studies.sources.conftest import shared, three_ratings

pytestmark = pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason="../shared/data is not beside the repository"
)


def test_summeval_from_the_published_layout_reproduces_the_shared_file(tmp_path):
    lines = shared("summeval.jsonl")
    with (tmp_path / "model_annotations.aligned.paired.jsonl").open("w", encoding="utf-8") as fh:
        for line in lines:
            ratings = {a: three_ratings(v) for a, v in line["human"].items()}
            fh.write(
                json.dumps(
                    {
                        "id": line["doc_id"],
                        "model_id": line["system_id"],
                        "decoded": line["output"],
                        "references": line["references"],
                        "text": line["source"],
                        "expert_annotations": [
                            {a: r[i] for a, r in ratings.items()} for i in range(3)
                        ],
                        "turker_annotations": [{a: 3 for a in ratings} for _ in range(5)],
                        "filepath": f"cnndm/dailymail/stories/{line['doc_id']}.story",
                    }
                )
                + "\n"
            )
    rows = list(convert("summeval", tmp_path).records())
    assert len(rows) == 1600
    assert len({r["doc_id"] for r in rows}) == 100 and len({r["system_id"] for r in rows}) == 16
    assert Counter(len(r["references"]) for r in rows) == {11: 1600}
    assert {len(v) for r in rows for v in r["annotators"].values()} == {3}
    for row, line in zip(rows, lines, strict=True):
        for key in ("doc_id", "system_id", "source", "references", "output"):
            assert row[key] == line[key]
        assert row["human"] == pytest.approx(line["human"], abs=1e-12)


MQM_HEADER = [
    "system",
    "doc",
    "docSegId",
    "globalSegId",
    "rater",
    "source",
    "target",
    "category",
    "severity",
    "metadata",
    "# Documentation: https://github.com/google-research/google-research",
]
CATEGORY = {
    "Accuracy": "Accuracy/Mistranslation",
    "Fluency": "Fluency/Grammar",
    "Style": "Style/Unnatural or awkward",
    "Terminology": "Terminology/Inappropriate for context",
    "Locale convention": "Locale convention/Date format",
    "Other": "Other",
    "Non-translation": "Non-translation!",
}


def error_rows(mqm: float, major: int, category: str) -> list[tuple[str, str]]:
    """(category, severity) rows a rater could have marked for these three judgments."""
    tenths = round(-mqm * 10)
    if tenths == 0:
        return [("No-error", "No-error")]
    rows = []
    if category == "Non-translation":
        rows.append(("Non-translation!", "Major"))
        tenths -= 250
    majors, tenths = divmod(tenths, 50) if major else (0, tenths)
    minors, punctuation = divmod(tenths, 10)
    top = (
        "Accuracy/Mistranslation"
        if category == "Non-translation"
        else CATEGORY.get(category, "Fluency/Grammar")
    )
    rows += [(top, "Major")] * majors
    rows += [(top if not majors else "Style/Unnatural or awkward", "Minor")] * minors
    rows += [("Fluency/Punctuation", "Minor")] * punctuation
    return rows


def test_wmt_mqm_from_the_published_tsv_reproduces_the_shared_file(tmp_path):
    lines = shared("wmt23_mqm_ende.jsonl")
    rows = []
    for line in lines:
        segment = line["doc_id"].removeprefix("seg")
        for rater, mqm in line["annotators"]["mqm"].items():
            judged = error_rows(
                mqm,
                line["annotators"]["major_error"][rater],
                line["annotators"]["error_category"][rater],
            )
            for category, severity in judged:
                rows.append(
                    [
                        line["system_id"],
                        line["document"],
                        "1",
                        segment,
                        rater,
                        line["source"],
                        line["output"],
                        category,
                        severity,
                        "{}",
                    ]
                )
            rows.append(
                [
                    line["system_id"],
                    line["document"],
                    "1",
                    segment,
                    rater,
                    line["source"],
                    "<v>" + line["output"][:3] + "</v>" + line["output"][3:],
                    "Found",
                    "HOTW-test",
                    "{}",
                ]
            )
    random.Random(7).shuffle(rows)  # a rater's rows of an output need not be together
    tsv = ["\t".join(row) + "\n" for row in [MQM_HEADER, *rows]]  # unquoted, as released
    data = "".join(tsv).encode("utf-8")
    folder = tmp_path / "generalMT2023" / "ende"
    folder.mkdir(parents=True)
    archive_path = folder / "sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv.tar.gz"
    with tarfile.open(archive_path, "w:gz", compresslevel=1) as archive:
        member = tarfile.TarInfo("sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    converted = {(r["doc_id"], r["system_id"]): r for r in convert("wmt-mqm", tmp_path).records()}
    assert len(converted) == 1040
    assert len({d for d, _s in converted}) == 104 and len({s for _d, s in converted}) == 10
    assert Counter(len(r["annotators"]["mqm"]) for r in converted.values()) == {3: 1040}
    for line in lines:
        row = converted[(line["doc_id"], line["system_id"])]
        for key in ("source", "references", "output", "annotators"):
            assert row[key] == line[key], (line["doc_id"], line["system_id"], key)
        assert row["human"] == pytest.approx(line["human"], abs=1e-12)
        assert row["context"] == {"document": line["document"]}


def test_llmbar_from_the_published_dataset_files_reproduces_the_shared_pairs(tmp_path):
    lines = shared("llmbar_pairs.jsonl")
    folders = {
        "Natural": "LLMBar/Natural",
        "MT-Bench": "Processed/MT-Bench",
        "LLMEval2": "Processed/LLMEval^2",
        "FairEval": "Processed/FairEval",
    }
    by_subset: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        subset, index = line["doc_id"].rsplit("/", 1)
        items = by_subset.setdefault(subset, [])
        assert int(index) == len(items)
        items.append(
            {
                "input": line["source"],
                "output_1": line["output_a"],
                "output_2": line["output_b"],
                "label": 1 if line["winner"] == "a" else 2,
            }
        )
    for subset, items in by_subset.items():
        folder = tmp_path / "Dataset" / folders.get(subset, f"LLMBar/{subset}")
        folder.mkdir(parents=True)
        (folder / "dataset.json").write_text(json.dumps(items, indent=4))
    pairs = list(convert("llmbar", tmp_path, subsets="all").pairs())
    assert len(pairs) == 885
    assert Counter(p["winner"] for p in pairs) == {"a": 440, "b": 445}
    assert Counter(p["subset"] for p in pairs)["Natural"] == 100
    assert {(p["doc_id"], p["annotator"]) for p in pairs} == {(x["doc_id"], "gold") for x in lines}
    assert sorted(pairs, key=lambda p: p["doc_id"]) == sorted(lines, key=lambda p: p["doc_id"])
    assert len(list(convert("llmbar", tmp_path).pairs())) == 419  # Natural + Adversarial
