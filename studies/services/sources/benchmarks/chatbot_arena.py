"""Chatbot Arena conversations (Zheng et al., NeurIPS 2023 Datasets and Benchmarks): 33K
conversations from the Arena (April-June 2023), each two anonymous models answering the
same user, with the user's vote.

Layout (https://huggingface.co/datasets/lmsys/chatbot_arena_conversations, dataset card):
``data/train-*.parquet``, columns ``question_id``, ``model_a``, ``model_b``, ``winner``
(``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``), ``judge`` (``arena_user_<n>``, an
anonymised user), ``conversation_a``, ``conversation_b`` (``[{"content", "role"}]``),
``turn`` (number of turns), ``anony``, ``language``, ``tstamp``, ``openai_moderation``,
``toxic_chat_tag``. The dataset is gated: accept its terms on the Hub and set ``HF_TOKEN``.

Emits pairs: ``doc_id`` the ``question_id``, the systems in name order (the winner
follows), aspect ``overall``, annotator the ``judge``, and ``language`` and ``turn``.
Multi-turn conversations keep every turn, marked ``[turn k]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.benchmarks.lmsys import votes
from studies.services.sources.spec import Benchmark, Conversion, HubRelease
from studies.services.sources.types import AspectSpec, Licence, Row, no_rows

ASPECTS = (
    AspectSpec.categorical(
        "overall",
        ("a", "b", "tie"),
        "Which of the two anonymous chatbots the user preferred after chatting with both "
        "(ties include 'both are bad').",
        source="Zheng et al. 2023, Judging LLM-as-a-Judge, section 2.3 (Chatbot Arena)",
    ),
)


def read(path: Path, options: dict[str, Any]) -> Conversion:
    notes: list[str] = []

    def pairs() -> Iterator[Row]:
        yield from votes(
            path,
            ("data/train-*.parquet", "**/train-*.parquet"),
            lambda row: str(row["question_id"]),
            "overall",
            ("language", "turn"),
            notes,
        )

    return Conversion(no_rows, pairs, ASPECTS, notes)


BENCHMARK = Benchmark(
    name="chatbot-arena",
    title="Chatbot Arena conversations (33K user votes)",
    task="custom",
    licence=Licence(
        "CC-BY-NC-4.0",
        "https://huggingface.co/datasets/lmsys/chatbot_arena_conversations",
        False,
        "user prompts CC-BY-4.0, model outputs CC-BY-NC-4.0; gated (terms of use on the Hub)",
    ),
    citation=(
        "@inproceedings{zheng2023judging, title={Judging {LLM}-as-a-Judge with {MT}-Bench and "
        "Chatbot Arena}, author={Zheng, Lianmin and Chiang, Wei-Lin and Sheng, Ying and "
        "others}, booktitle={NeurIPS Datasets and Benchmarks Track}, year={2023}}"
    ),
    homepage="https://huggingface.co/datasets/lmsys/chatbot_arena_conversations",
    # no verified full commit for this gated repository: "main", and the snapshot records
    # the commit it resolved to (ConvertedDataset.provenance.revision)
    release=HubRelease("lmsys/chatbot_arena_conversations", "main", ("data/train-*.parquet",)),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
)
