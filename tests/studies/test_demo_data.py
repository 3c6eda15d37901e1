"""Tests for the synthetic demo dataset generator (``studies.demo_data``)."""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import studies.demo_data as demo_data
from studies.demo_data import (
    ASPECTS,
    SYSTEMS,
    generate_demo_records,
    load_demo_documents,
    write_demo_jsonl,
)

EXPECTED_SYSTEMS = {
    "faithful",
    "shuffled",
    "dropped-facts",
    "injected-errors",
    "disfluent",
    "lead-3",
}
EXPECTED_ASPECTS = {"coherence", "consistency", "fluency", "relevance"}
SEEDS = (0, 1, 2, 7, 42)


def _sentences(text: str) -> list[str]:
    """Split text on sentence-final punctuation followed by whitespace."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _words(text: str) -> list[str]:
    """Lowercased word tokens, as documented for the metrics."""
    return re.findall(r"\w+", text.lower())


def _by_doc_system(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["doc_id"], r["system_id"]): r for r in records}


def _mean(records: list[dict[str, Any]], system_id: str, aspect: str) -> float:
    return statistics.mean(r["human"][aspect] for r in records if r["system_id"] == system_id)


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return generate_demo_records()


# --------------------------------------------------------------------------
# Shape
# --------------------------------------------------------------------------


def test_module_docstring_declares_data_synthetic() -> None:
    doc = " ".join((demo_data.__doc__ or "").split())
    assert "SYNTHETIC" in doc
    assert "not real human judgments" in doc.lower()
    assert "controlled degradations" in doc.lower()


def test_public_constants() -> None:
    assert set(SYSTEMS) == EXPECTED_SYSTEMS
    assert set(ASPECTS) == EXPECTED_ASPECTS


def test_record_count_and_keys(records: list[dict[str, Any]]) -> None:
    assert len(records) == 72
    for record in records:
        assert set(record) == {
            "doc_id",
            "system_id",
            "source",
            "references",
            "output",
            "human",
            "metrics",
        }
        assert set(record["human"]) == EXPECTED_ASPECTS
        assert set(record["metrics"]) == {"unigram_f1", "length_ratio"}
        assert isinstance(record["output"], str) and record["output"].strip()
        assert isinstance(record["source"], str)
        assert isinstance(record["references"], list)


def test_every_document_has_every_system_once(records: list[dict[str, Any]]) -> None:
    doc_ids = [f"demo-{i:02d}" for i in range(1, 13)]
    assert sorted({r["doc_id"] for r in records}) == doc_ids
    pairs = Counter((r["doc_id"], r["system_id"]) for r in records)
    assert set(pairs) == {(d, s) for d in doc_ids for s in EXPECTED_SYSTEMS}
    assert set(pairs.values()) == {1}


def test_sources_and_references_are_well_formed(records: list[dict[str, Any]]) -> None:
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_doc.setdefault(record["doc_id"], []).append(record)
    sources = set()
    for doc_records in by_doc.values():
        # Source and references are shared by all systems of a document.
        assert len({r["source"] for r in doc_records}) == 1
        assert len({tuple(r["references"]) for r in doc_records}) == 1
        source = doc_records[0]["source"]
        references = doc_records[0]["references"]
        assert 4 <= len(_sentences(source)) <= 6
        assert 1 <= len(references) <= 2
        for reference in references:
            assert 1 <= len(_sentences(reference)) <= 2
        sources.add(source)
    assert len(sources) == 12


# --------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------


def test_same_seed_is_deterministic() -> None:
    assert generate_demo_records(5) == generate_demo_records(5)
    assert generate_demo_records() == generate_demo_records(0)


def test_different_seed_changes_human_scores() -> None:
    humans_a = [r["human"] for r in generate_demo_records(0)]
    humans_b = [r["human"] for r in generate_demo_records(1)]
    assert humans_a != humans_b


def test_hand_written_texts_do_not_depend_on_seed() -> None:
    a = _by_doc_system(generate_demo_records(0))
    b = _by_doc_system(generate_demo_records(3))
    for key, record in a.items():
        assert record["source"] == b[key]["source"]
        assert record["references"] == b[key]["references"]
        if key[1] in {"faithful", "dropped-facts", "lead-3"}:
            assert record["output"] == b[key]["output"]


# --------------------------------------------------------------------------
# Human scores
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_scores_are_means_of_three_integer_ratings_in_range(seed: int) -> None:
    possible = {round(k / 3, 2) for k in range(3, 16)}  # sums of three 1..5 ratings
    for record in generate_demo_records(seed):
        for aspect, score in record["human"].items():
            assert 1.0 <= score <= 5.0, (record["doc_id"], record["system_id"], aspect)
            assert score in possible


@pytest.mark.parametrize("seed", SEEDS)
def test_degradations_lower_their_target_aspect(seed: int) -> None:
    records = generate_demo_records(seed)
    assert _mean(records, "injected-errors", "consistency") < _mean(
        records, "faithful", "consistency"
    )
    assert _mean(records, "shuffled", "coherence") < _mean(records, "faithful", "coherence")
    assert _mean(records, "disfluent", "fluency") < _mean(records, "faithful", "fluency")
    assert _mean(records, "dropped-facts", "relevance") < _mean(records, "faithful", "relevance")


@pytest.mark.parametrize("seed", SEEDS)
def test_each_degradation_is_worst_on_its_aspect(seed: int) -> None:
    records = generate_demo_records(seed)
    targets = {
        "injected-errors": "consistency",
        "shuffled": "coherence",
        "disfluent": "fluency",
        "dropped-facts": "relevance",
    }
    for system_id, aspect in targets.items():
        worst = min(SYSTEMS, key=lambda s, a=aspect: _mean(records, s, a))
        assert worst == system_id, (aspect, worst)
    # The untouched aspects of a targeted degradation stay reasonable.
    assert _mean(records, "shuffled", "consistency") > 3.5
    assert _mean(records, "injected-errors", "fluency") > 3.5
    assert _mean(records, "dropped-facts", "consistency") > 3.5


@pytest.mark.parametrize("seed", SEEDS)
def test_faithful_beats_lead3_on_relevance(seed: int) -> None:
    records = generate_demo_records(seed)
    assert _mean(records, "faithful", "relevance") > _mean(records, "lead-3", "relevance")
    assert _mean(records, "faithful", "coherence") > _mean(records, "lead-3", "coherence")


def test_ratings_differ_between_documents(records: list[dict[str, Any]]) -> None:
    for system_id in SYSTEMS:
        per_doc = {
            tuple(r["human"][a] for a in ASPECTS) for r in records if r["system_id"] == system_id
        }
        assert len(per_doc) > 1, system_id


# --------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------


def _independent_unigram_f1(output: str, reference: str) -> float:
    """Straightforward clipped-count unigram F1, written separately from the module."""
    out = _words(output)
    remaining = list(_words(reference))
    overlap = 0
    for token in out:
        if token in remaining:
            remaining.remove(token)
            overlap += 1
    if overlap == 0:
        return 0.0
    precision = overlap / len(out)
    recall = overlap / len(_words(reference))
    return 2 * precision * recall / (precision + recall)


def test_unigram_f1_matches_independent_computation(records: list[dict[str, Any]]) -> None:
    for record in records:
        expected = max(
            _independent_unigram_f1(record["output"], ref) for ref in record["references"]
        )
        assert record["metrics"]["unigram_f1"] == pytest.approx(expected, abs=5e-5)
        assert 0.0 <= record["metrics"]["unigram_f1"] <= 1.0


def test_unigram_f1_known_record(records: list[dict[str, Any]]) -> None:
    record = _by_doc_system(records)[("demo-01", "faithful")]
    out = Counter(_words(record["output"]))
    scores = []
    for reference in record["references"]:
        ref = Counter(_words(reference))
        overlap = sum(min(out[w], ref[w]) for w in out)
        p, r = overlap / sum(out.values()), overlap / sum(ref.values())
        scores.append(2 * p * r / (p + r))
    assert record["metrics"]["unigram_f1"] == round(max(scores), 4)


def test_length_ratio_matches_independent_computation(records: list[dict[str, Any]]) -> None:
    for record in records:
        expected = len(_words(record["output"])) / len(_words(record["references"][0]))
        assert record["metrics"]["length_ratio"] == round(expected, 4)


def test_metrics_track_controlled_degradations(records: list[dict[str, Any]]) -> None:
    def metric_mean(system_id: str, name: str) -> float:
        return statistics.mean(r["metrics"][name] for r in records if r["system_id"] == system_id)

    assert metric_mean("faithful", "unigram_f1") > metric_mean("dropped-facts", "unigram_f1")
    assert metric_mean("faithful", "unigram_f1") > metric_mean("injected-errors", "unigram_f1")
    assert metric_mean("dropped-facts", "length_ratio") < metric_mean("faithful", "length_ratio")


# --------------------------------------------------------------------------
# Outputs of each system
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_shuffled_has_same_sentences_in_another_order(seed: int) -> None:
    indexed = _by_doc_system(generate_demo_records(seed))
    for doc_id in {d for d, _ in indexed}:
        faithful = _sentences(indexed[(doc_id, "faithful")]["output"])
        shuffled = _sentences(indexed[(doc_id, "shuffled")]["output"])
        assert 2 <= len(faithful) <= 3
        assert sorted(shuffled) == sorted(faithful)
        assert shuffled != faithful


@pytest.mark.parametrize("seed", SEEDS)
def test_injected_errors_change_facts_but_keep_structure(seed: int) -> None:
    indexed = _by_doc_system(generate_demo_records(seed))
    for doc_id in {d for d, _ in indexed}:
        faithful = indexed[(doc_id, "faithful")]["output"]
        corrupted = indexed[(doc_id, "injected-errors")]["output"]
        assert corrupted != faithful
        assert len(_sentences(corrupted)) == len(_sentences(faithful))
        removed = Counter(_words(faithful)) - Counter(_words(corrupted))
        assert sum(removed.values()) >= 2, doc_id


@pytest.mark.parametrize("seed", SEEDS)
def test_disfluent_output_is_damaged(seed: int) -> None:
    indexed = _by_doc_system(generate_demo_records(seed))
    for doc_id in {d for d, _ in indexed}:
        faithful = _words(indexed[(doc_id, "faithful")]["output"])
        disfluent = _words(indexed[(doc_id, "disfluent")]["output"])
        assert disfluent != faithful
        # Most content survives: it is the same summary, badly written.
        shared = sum((Counter(faithful) & Counter(disfluent)).values())
        assert shared >= 0.6 * len(faithful)


def test_dropped_facts_is_shorter_and_less_informative(records: list[dict[str, Any]]) -> None:
    indexed = _by_doc_system(records)
    for doc_id in {d for d, _ in indexed}:
        faithful = indexed[(doc_id, "faithful")]
        dropped = indexed[(doc_id, "dropped-facts")]
        assert len(_words(dropped["output"])) < len(_words(faithful["output"]))
        assert not re.search(r"\d", dropped["output"])  # no figures left


def test_lead3_is_first_three_source_sentences(records: list[dict[str, Any]]) -> None:
    for record in records:
        if record["system_id"] == "lead-3":
            assert record["output"] == " ".join(_sentences(record["source"])[:3])


# --------------------------------------------------------------------------
# JSONL output
# --------------------------------------------------------------------------


def test_write_demo_jsonl_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    count = write_demo_jsonl(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert count == len(lines) == 72
    assert [json.loads(line) for line in lines] == generate_demo_records(0)


def test_write_demo_jsonl_accepts_str_path_and_seed(tmp_path: Path) -> None:
    path = tmp_path / "demo-seed3.jsonl"
    assert write_demo_jsonl(str(path), seed=3) == 72
    with path.open(encoding="utf-8") as handle:
        loaded = [json.loads(line) for line in handle]
    assert loaded == generate_demo_records(3)


# --------------------------------------------------------------------------
# The documents are data (studies/defaults/demo_documents.json)
# --------------------------------------------------------------------------

# sha256 of the records (json.dumps(..., sort_keys=True, ensure_ascii=False)) that the
# demo generated while its documents were still written out in Python (commit 543151c):
# moving them into the JSON file must change nothing the demo creates.
RECORDS_SHA256_BEFORE_THE_MOVE = {
    0: "d2f537d70be9617564c0f8bd27440f55ddcd0e9a5e91883c0a32d431742399d0",
    1: "a6807cf7afd25e5f67194076e3598e2aa9756b4f9994074297faa23aa341fa0f",
    7: "1d5ed9685e1759b510a96e61ac7d600ea583579de6fb6af8b508294bce45ab83",
}


def _digest(records: list[dict[str, Any]]) -> str:
    canonical = json.dumps(records, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("seed", sorted(RECORDS_SHA256_BEFORE_THE_MOVE))
def test_records_from_the_data_file_equal_those_the_python_documents_made(seed: int) -> None:
    records = generate_demo_records(seed)
    assert len(records) == 72
    assert _digest(records) == RECORDS_SHA256_BEFORE_THE_MOVE[seed]


def test_demo_documents_are_read_from_the_defaults_folder() -> None:
    path = demo_data.DOCUMENTS_FILE
    assert path.parent.name == "defaults" and path.suffix == ".json"
    documents = load_demo_documents()
    assert [d.doc_id for d in documents] == [f"demo-{i:02d}" for i in range(1, 13)]
    raw = json.loads(path.read_text(encoding="utf-8"))["documents"]
    assert [d.vague for d in documents] == [row["vague"] for row in raw]
    assert all(len(pair) == 2 for d in documents for pair in d.errors)


def test_an_edited_data_file_changes_the_records(tmp_path: Path, monkeypatch) -> None:
    data = json.loads(demo_data.DOCUMENTS_FILE.read_text(encoding="utf-8"))
    data["documents"] = data["documents"][:2]
    data["documents"][0]["vague"] = "Something happened somewhere."
    edited = tmp_path / "demo_documents.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(demo_data, "DOCUMENTS_FILE", edited)
    records = generate_demo_records()
    assert len(records) == 12
    assert records[2]["output"] == "Something happened somewhere."
