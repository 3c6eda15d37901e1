"""The converters' registry and shared parts: ``convert`` and its refusals, writing the
import files all or nothing, ``load_benchmark``, and the streaming readers the loaders
stand on (JSON arrays across chunk boundaries, grouping rows spread over a file)."""

from __future__ import annotations

import json
import random
import sys

import pytest
from django.core.management import CommandError, call_command

from studies.services.sources import (
    BENCHMARKS,
    FORMATS,
    LicenceNotAccepted,
    SourceError,
    convert,
    readers,
    write_jsonl,
)
from studies.services.sources.build import summarize
from studies.services.sources.types import AspectSpec


def llmbar_folder(tmp_path, items):
    folder = tmp_path / "Dataset" / "LLMBar" / "Natural"
    folder.mkdir(parents=True)
    (folder / "dataset.json").write_text(json.dumps(items))
    return tmp_path


ITEMS = [
    {"input": f"do {i}", "output_1": f"yes {i}", "output_2": f"no {i}", "label": 1 + i % 2}
    for i in range(4)
]


def test_every_registered_source_declares_what_the_importer_and_the_page_need():
    assert len(BENCHMARKS) >= 8 and set(FORMATS) == {
        "label-studio",
        "argilla",
        "langfuse",
        "langsmith",
        "otel",
    }
    for benchmark in BENCHMARKS.values():
        assert benchmark.aspects and benchmark.citation.startswith("@") and benchmark.licence.url
        assert benchmark.release.revision and benchmark.layout.strip()
        assert benchmark.task in ("summarization", "dialogue", "machine_translation", "custom")
        assert all(a.definition and a.source for a in benchmark.aspects)
    for fmt in FORMATS.values():  # each adapter's docstring cites the tool's export documentation
        assert fmt.doc_url.startswith("https://")
        assert fmt.doc_url in (sys.modules[fmt.read.__module__].__doc__ or "")


def test_convert_refuses_an_unknown_name_and_an_unknown_option(tmp_path):
    with pytest.raises(KeyError, match="no benchmark or format named 'summ'"):
        convert("summ", tmp_path)
    with pytest.raises(ValueError, match="unknown option 'subset' \\(accepted: subsets\\)"):
        convert("llmbar", tmp_path, subset="x")
    with pytest.raises(ValueError, match="option subsets: 'some' is not one of"):
        convert("llmbar", tmp_path, subsets="some")
    with pytest.raises(ValueError, match="expected true or false"):
        convert("helpsteer2", tmp_path, annotators="perhaps")


def test_non_commercial_and_unlicensed_benchmarks_need_the_licence_accepted(tmp_path):
    for name in ("chatbot-arena", "usr"):
        assert BENCHMARKS[name].licence.restricted
        with pytest.raises(LicenceNotAccepted, match="--accept-licence"):
            convert(name, tmp_path)
        with pytest.raises(SourceError, match="found in this folder"):  # past the licence: no files
            list(convert(name, tmp_path, accept_licence=True).pairs())
    assert not BENCHMARKS["summeval"].licence.restricted


def test_converted_dataset_carries_licence_citation_provenance_and_aspects(tmp_path):
    dataset = convert(
        "llmbar", llmbar_folder(tmp_path, ITEMS), revision="900616b", subsets="natural"
    )
    meta = dataset.metadata()
    assert meta["licence"]["spdx"] == "MIT" and meta["citation"].startswith(
        "@inproceedings{zeng2024llmbar"
    )
    assert meta["provenance"] == {
        "kind": "local",
        "location": str(tmp_path),
        "revision": "900616b",
        "files": [tmp_path.name],
    }
    assert meta["aspects"][0]["kind"] == "categorical" and meta["aspects"][0]["labels"] == [
        "a",
        "b",
        "tie",
    ]
    # the streams are re-readable: each call reads the files again
    assert list(dataset.pairs()) == list(dataset.pairs()) and len(list(dataset.pairs())) == 4


def test_write_jsonl_writes_importable_lines_or_nothing(tmp_path):
    dataset = convert("llmbar", llmbar_folder(tmp_path, ITEMS), subsets="natural")
    records, pairs = write_jsonl(
        dataset, tmp_path / "llmbar.jsonl", tmp_path / "llmbar_pairs.jsonl"
    )
    assert (records, pairs) == (0, 4)
    lines = [
        json.loads(line) for line in (tmp_path / "llmbar_pairs.jsonl").read_text().splitlines()
    ]
    assert [line["winner"] for line in lines] == ["a", "b", "a", "b"]
    broken = ITEMS[:2] + [{"input": "x", "output_1": "y", "output_2": "z", "label": 3}]
    other = tmp_path / "other"
    dataset = convert("llmbar", llmbar_folder(other, broken), subsets="natural")
    with pytest.raises(
        SourceError, match=r"dataset.json, \$\[2\] \(line 1\), field 'label': expected 1 or 2"
    ):
        write_jsonl(dataset, other / "out.jsonl", other / "out_pairs.jsonl")
    assert sorted(p.name for p in other.iterdir()) == ["Dataset"]


def test_load_benchmark_lists_every_benchmark_with_its_licence(capsys):
    call_command("load_benchmark", "--list")
    out = capsys.readouterr().out
    for name, benchmark in BENCHMARKS.items():
        assert name in out and benchmark.licence.spdx in out
    assert "CC-BY-NC-4.0 (non-commercial)" in out and "--accept-licence needed" in out


def test_load_benchmark_writes_the_import_files_and_their_metadata(tmp_path, capsys):
    source = llmbar_folder(tmp_path / "raw", ITEMS)
    call_command(
        "load_benchmark",
        "llmbar",
        "--from",
        str(source),
        "--option",
        "subsets=natural",
        "--write",
        str(tmp_path / "out"),
    )
    assert "llmbar: 0 records, 4 pairs" in capsys.readouterr().out
    meta = json.loads((tmp_path / "out" / "llmbar.meta.json").read_text())
    assert meta["name"] == "llmbar" and meta["licence"]["commercial"] is True
    assert len((tmp_path / "out" / "llmbar_pairs.jsonl").read_text().splitlines()) == 4
    with pytest.raises(CommandError, match="accept-licence"):
        call_command(
            "load_benchmark", "chatbot-arena", "--from", str(source), "--write", str(tmp_path / "x")
        )


@pytest.mark.parametrize("chunk", [1, 2, 7, 64])
def test_json_array_reader_yields_each_element_with_its_line_across_chunk_boundaries(
    tmp_path, monkeypatch, chunk
):
    monkeypatch.setattr(readers, "CHUNK", chunk)
    items = [
        {"a": 1, "text": "x\ny"},
        [1, 2],
        "three",
        4.5,
        12345,
        {"nested": {"deep": [True, None]}},
    ]
    path = tmp_path / "items.json"
    path.write_text("[\n" + ",\n  ".join(json.dumps(i) for i in items) + "\n]\n")
    found = list(readers.iter_json_array(path))
    assert [value for _where, _line, value in found] == items
    assert [(where, line) for where, line, _v in found][:3] == [
        ("$[0]", 2),
        ("$[1]", 3),
        ("$[2]", 4),
    ]
    path.write_text('[{"a": 1}, {"a": ')
    with pytest.raises(SourceError, match="not valid JSON"):
        list(readers.iter_json_array(path))


def test_grouped_gathers_rows_by_key_in_first_seen_order_however_spread():
    rows = [(["seg", k % 5], {"n": k}) for k in range(200)]
    random.Random(3).shuffle(rows)
    groups = list(readers.grouped(rows))
    first_seen = list(dict.fromkeys(tuple(key) for key, _v in rows))
    assert [tuple(key) for key, _values in groups] == first_seen
    for key, values in groups:
        assert sorted(v["n"] for v in values) == [n for n in range(200) if n % 5 == key[1]]
        assert [v["n"] for v in values] == [v["n"] for k, v in rows if k == key]  # file order kept


def test_human_is_the_mean_of_a_scale_and_the_majority_label_without_a_tie():
    scale = AspectSpec.scale("q", 1, 5, "Quality.")
    binary = AspectSpec.binary("ok", "Passes.")
    labels = AspectSpec.categorical("kind", ("x", "y", "z"), "Kind.")
    assert summarize(scale, {"a1": 1, "a2": 2, "a3": 2}) == pytest.approx(5 / 3)
    assert summarize(binary, {"a1": 1, "a2": 0, "a3": 1}) == 1
    assert summarize(binary, {"a1": 1, "a2": 0}) is None
    assert summarize(labels, {"a1": "x", "a2": "y", "a3": "y"}) == "y"
    assert summarize(labels, {"a1": None}) is None
    with pytest.raises(ValueError, match="two labels, one of them positive"):
        AspectSpec.binary("bad", "Bad.", ("yes", "no"), "maybe")
