"""JudgeBench (Tan et al., ICLR 2025): 350 GPT-4o and 270 Claude-3.5-Sonnet response pairs
to hard knowledge, reasoning, math and coding questions, one response objectively correct.

Layout (https://github.com/ScalerLab/JudgeBench, README "Data", commit e2c52c2; the same
records on https://huggingface.co/datasets/ScalerLab/JudgeBench as
``data/gpt-00000-of-00001.jsonl`` and ``data/claude-00000-of-00001.jsonl``): JSON Lines
``data/dataset=judgebench,response_model=<model>.jsonl``, one object per pair:
``pair_id``, ``original_id``, ``source`` (e.g. ``mmlu-pro-computer science``,
``livebench-math``), ``question``, ``response_model``, ``response_A``, ``response_B``,
``label`` (``A>B`` or ``B>A``, by correctness).

Emits pairs: ``doc_id`` the ``pair_id``, systems ``A`` and ``B`` (both answers come from
``response_model``), aspect ``correctness``, annotator ``gold``, and the question's
``category`` (JudgeBench's ``source``), ``response_model`` and ``original_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import pair
from studies.services.sources.readers import fail, find_files, iter_jsonl
from studies.services.sources.spec import Benchmark, Conversion, UrlRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row, no_rows

FILES = {
    "gpt": (
        "data/dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl",
        "data/gpt-00000-of-00001.jsonl",
        "**/*gpt-4o*.jsonl",
        "**/gpt-*.jsonl",
    ),
    "claude": (
        "data/dataset=judgebench,response_model=claude-3-5-sonnet-20240620.jsonl",
        "data/claude-00000-of-00001.jsonl",
        "**/*claude-3-5-sonnet*.jsonl",
        "**/claude-*.jsonl",
    ),
}
WINNERS = {"A>B": "a", "B>A": "b", "A=B": "tie"}
ASPECTS = (
    AspectSpec.categorical(
        "correctness",
        ("a", "b", "tie"),
        "Which response is correct: JudgeBench labels pairs by objective correctness (the "
        "final answer verified against the ground truth), not by preference.",
        source="Tan et al. 2025, JudgeBench, section 3",
    ),
)


def read(path: Path, options: dict[str, Any]) -> Conversion:
    splits = ("gpt", "claude") if options["split"] == "both" else (options["split"],)

    def pairs() -> Iterator[Row]:
        for split in splits:
            for file in find_files(path, *FILES[split])[:1]:
                for number, item in iter_jsonl(file):
                    yield _pair(file, f"line {number}", item)

    return Conversion(no_rows, pairs, aspects=ASPECTS)


def _pair(file: Path, where: str, item: Any) -> Row:
    if not isinstance(item, dict):
        raise fail(file, where, "", "expected an object")
    for name in ("pair_id", "question", "response_A", "response_B", "response_model"):
        if not isinstance(item.get(name), str):
            raise fail(file, where, name, "missing, or not text")
    label = item.get("label")
    if label not in WINNERS:
        raise fail(file, where, "label", f"expected A>B or B>A, got {label!r}")
    return pair(
        item["pair_id"],
        item["question"],
        "A",
        item["response_A"],
        "B",
        item["response_B"],
        aspect="correctness",
        annotator="gold",
        winner=WINNERS[label],
        extra={
            "category": item.get("source", ""),
            "response_model": item["response_model"],
            "original_id": str(item.get("original_id", "")),
        },
    )


BENCHMARK = Benchmark(
    name="judgebench",
    title="JudgeBench (objectively labelled response pairs)",
    task="custom",
    licence=Licence(
        "MIT",
        "https://huggingface.co/datasets/ScalerLab/JudgeBench",
        True,
        "licence as declared on the Hugging Face dataset card",
    ),
    citation=(
        "@inproceedings{tan2025judgebench, title={JudgeBench: A Benchmark for Evaluating "
        "LLM-Based Judges}, author={Tan, Sijun and Zhuang, Siyuan and Montgomery, Kyle and "
        "Tang, William Y. and Cuadron, Alejandro and Wang, Chenguang and Popa, Raluca Ada and "
        "Stoica, Ion}, booktitle={International Conference on Learning Representations "
        "(ICLR)}, year={2025}}"
    ),
    homepage="https://github.com/ScalerLab/JudgeBench",
    release=UrlRelease(
        "https://raw.githubusercontent.com/ScalerLab/JudgeBench/{revision}",
        "e2c52c284e735e139b3daa61c206ee208f36c461",
        (FILES["gpt"][0], FILES["claude"][0]),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(Option("split", str, "both", "gpt, claude or both", ("gpt", "claude", "both")),),
)
