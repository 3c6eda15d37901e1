"""LLMBar (Zeng et al., ICLR 2024): 419 instruction-following pairs (100 Natural, 319
Adversarial) with a gold label for the output that follows the instruction, plus the
human labels of MT-Bench, LLMEval^2 and FairEval as processed by LLMBar.

Layout (https://github.com/princeton-nlp/LLMBar, README "Data", commit 900616b): one
``dataset.json`` per subset, a JSON array of ``{"input", "output_1", "output_2", "label":
1 | 2}``, under ``Dataset/LLMBar/Natural/``, ``Dataset/LLMBar/Adversarial/{Neighbor,
GPTInst,GPTOut,Manual}/`` and ``Dataset/Processed/{MT-Bench,LLMEval^2,FairEval}/``.

Emits pairs: ``doc_id`` ``<subset>/<index>``, ``system_a`` ``output_1``, ``system_b``
``output_2``, aspect ``overall``, annotator ``gold``, ``subset``; with ``subsets=all``
this is ``shared/data/llmbar_pairs.jsonl`` line for line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import pair
from studies.services.sources.readers import fail, find_file, iter_json_array
from studies.services.sources.spec import Benchmark, Conversion, UrlRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row, no_rows

SUBSETS = {
    "Natural": "Dataset/LLMBar/Natural/dataset.json",
    "Adversarial/Neighbor": "Dataset/LLMBar/Adversarial/Neighbor/dataset.json",
    "Adversarial/GPTInst": "Dataset/LLMBar/Adversarial/GPTInst/dataset.json",
    "Adversarial/GPTOut": "Dataset/LLMBar/Adversarial/GPTOut/dataset.json",
    "Adversarial/Manual": "Dataset/LLMBar/Adversarial/Manual/dataset.json",
    "MT-Bench": "Dataset/Processed/MT-Bench/dataset.json",
    "LLMEval2": "Dataset/Processed/LLMEval^2/dataset.json",
    "FairEval": "Dataset/Processed/FairEval/dataset.json",
}
SELECTIONS = {
    "llmbar": tuple(SUBSETS)[:5],
    "natural": ("Natural",),
    "adversarial": tuple(SUBSETS)[1:5],
    "all": tuple(SUBSETS),
}
ASPECTS = (
    AspectSpec.categorical(
        "overall",
        ("a", "b", "tie"),
        "Which output better follows the instruction: it should precisely execute the "
        "instruction, and only then be judged on helpfulness, accuracy, level of detail and "
        "harmlessness (LLMBar's rules for the gold label).",
        source="Zeng et al. 2024, LLMBar, section 2",
    ),
)


def read(path: Path, options: dict[str, Any]) -> Conversion:
    names = SELECTIONS[options["subsets"]]

    def pairs() -> Iterator[Row]:
        for subset in names:
            relative = SUBSETS[subset]
            file = find_file(path, relative, relative.removeprefix("Dataset/"))
            for where, line, item in iter_json_array(file):
                yield _pair(file, f"{where} (line {line})", int(where[2:-1]), subset, item)

    return Conversion(no_rows, pairs, aspects=ASPECTS)


def _pair(file: Path, where: str, index: int, subset: str, item: Any) -> Row:
    if not isinstance(item, dict):
        raise fail(file, where, "", "expected an object")
    for name in ("input", "output_1", "output_2"):
        if not isinstance(item.get(name), str):
            raise fail(file, where, name, "missing, or not text")
    label = item.get("label")
    if label not in (1, 2) or isinstance(label, bool):
        raise fail(file, where, "label", f"expected 1 or 2, got {label!r}")
    return pair(
        f"{subset}/{index}",
        item["input"],
        "output_1",
        item["output_1"],
        "output_2",
        item["output_2"],
        aspect="overall",
        annotator="gold",
        winner="a" if label == 1 else "b",
        extra={"subset": subset},
    )


BENCHMARK = Benchmark(
    name="llmbar",
    title="LLMBar (instruction following, gold pairwise labels)",
    task="custom",
    licence=Licence("MIT", "https://github.com/princeton-nlp/LLMBar/blob/main/LICENSE", True),
    citation=(
        "@inproceedings{zeng2024llmbar, title={Evaluating Large Language Models at Evaluating "
        "Instruction Following}, author={Zeng, Zhiyuan and Yu, Jiatong and Gao, Tianyu and "
        "Meng, Yu and Goyal, Tanya and Chen, Danqi}, booktitle={International Conference on "
        "Learning Representations (ICLR)}, year={2024}}"
    ),
    homepage="https://github.com/princeton-nlp/LLMBar",
    release=UrlRelease(
        "https://raw.githubusercontent.com/princeton-nlp/LLMBar/{revision}",
        "900616bff90b6c6c8e1681f7d079250637c55992",
        tuple(SUBSETS.values()),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(
        Option(
            "subsets",
            str,
            "llmbar",
            "llmbar (Natural + Adversarial), natural, adversarial, or all (with the "
            "processed MT-Bench, LLMEval^2 and FairEval sets)",
            tuple(SELECTIONS),
        ),
    ),
)
