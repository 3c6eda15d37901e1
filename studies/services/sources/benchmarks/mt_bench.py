"""MT-Bench human judgments (Zheng et al., NeurIPS 2023 Datasets and Benchmarks): 3.3K
expert pairwise votes on six models' answers to the 80 two-turn MT-Bench questions, and
GPT-4's pairwise verdicts on the same pairs.

Layout (https://huggingface.co/datasets/lmsys/mt_bench_human_judgments, dataset card at
commit 6085f5b): Parquet splits ``data/human-*.parquet`` (3,355 rows) and
``data/gpt4_pair-*.parquet`` (2,400 rows), columns ``question_id`` (int), ``model_a``,
``model_b``, ``winner`` (``model_a``, ``model_b``, ``tie``; GPT-4 also ``tie
(inconsistent)`` when its verdict flipped with the order), ``judge`` (``expert_<n>``,
``author_<n>``, or the GPT-4 judge), ``conversation_a``, ``conversation_b`` (``[{"content",
"role"}]``, both turns), ``turn`` (1 or 2: which answer was judged).

Emits pairs: ``doc_id`` ``<question_id>-t<turn>``, the systems in name order (the winner
follows), aspect ``overall``, annotator the ``judge``; for turn 2 the source and outputs
hold both turns marked ``[turn k]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.benchmarks.lmsys import votes
from studies.services.sources.spec import Benchmark, Conversion, HubRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row, no_rows

ASPECTS = (
    AspectSpec.categorical(
        "overall",
        ("a", "b", "tie"),
        "Which assistant answered the user question better, considering helpfulness, "
        "relevance, accuracy, depth, creativity and level of detail (the MT-Bench pairwise "
        "instruction shown to judges); a tie when neither is better.",
        source="Zheng et al. 2023, Judging LLM-as-a-Judge, section 4 and appendix",
    ),
)
SPLITS = {
    "human": ("data/human-*.parquet", "**/human-*.parquet"),
    "gpt4_pair": ("data/gpt4_pair-*.parquet", "**/gpt4_pair-*.parquet"),
}


def read(path: Path, options: dict[str, Any]) -> Conversion:
    notes: list[str] = []

    def pairs() -> Iterator[Row]:
        yield from votes(
            path,
            SPLITS[options["split"]],
            lambda row: f"{row['question_id']}-t{row['turn']}",
            "overall",
            ("turn",),
            notes,
        )

    return Conversion(no_rows, pairs, ASPECTS, notes)


BENCHMARK = Benchmark(
    name="mt-bench",
    title="MT-Bench human judgments (expert pairwise votes)",
    task="custom",
    licence=Licence(
        "CC-BY-4.0", "https://huggingface.co/datasets/lmsys/mt_bench_human_judgments", True
    ),
    citation=(
        "@inproceedings{zheng2023judging, title={Judging {LLM}-as-a-Judge with {MT}-Bench and "
        "Chatbot Arena}, author={Zheng, Lianmin and Chiang, Wei-Lin and Sheng, Ying and "
        "Zhuang, Siyuan and Wu, Zhanghao and Zhuang, Yonghao and Lin, Zi and Li, Zhuohan and "
        "Li, Dacheng and Xing, Eric P. and Zhang, Hao and Gonzalez, Joseph E. and Stoica, "
        "Ion}, booktitle={NeurIPS Datasets and Benchmarks Track}, year={2023}}"
    ),
    homepage="https://huggingface.co/datasets/lmsys/mt_bench_human_judgments",
    release=HubRelease(
        "lmsys/mt_bench_human_judgments",
        "6085f5b73c2ea3dee52918d07ed6b399f6c51fea",
        ("data/*.parquet",),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(Option("split", str, "human", "human (expert votes) or gpt4_pair", tuple(SPLITS)),),
)
