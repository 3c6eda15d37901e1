"""The pairwise-vote layout LMSYS uses for MT-Bench human judgments and Chatbot Arena
conversations (one row per vote: ``question_id, model_a, model_b, winner, judge,
conversation_a, conversation_b, turn``, conversations as OpenAI-style ``[{"content",
"role"}]``), turned into pair lines. Not a benchmark of its own: the two loaders share it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import in_order, pair
from studies.services.sources.readers import fail, find_files, iter_parquet
from studies.services.sources.types import Row

COLUMNS = [
    "question_id",
    "model_a",
    "model_b",
    "winner",
    "judge",
    "conversation_a",
    "conversation_b",
    "turn",
]
WINNERS = {"model_a": "a", "model_b": "b"}


def dialogue(conversation: list[dict[str, Any]], turns: int) -> tuple[str, str]:
    """(the user's side, the assistant's side) of the first ``turns`` turns; a single turn
    as plain text, several marked ``[turn k]``."""
    users = [m["content"] for m in conversation if m.get("role") == "user"][:turns]
    replies = [m["content"] for m in conversation if m.get("role") == "assistant"][:turns]
    if turns == 1:
        return users[0], replies[0]
    return (
        "\n\n".join(f"[turn {k}] {text}" for k, text in enumerate(users, start=1)),
        "\n\n".join(f"[turn {k}] {text}" for k, text in enumerate(replies, start=1)),
    )


def winner(value: Any) -> str | None:
    """``a``/``b``/``tie`` for LMSYS winners (``tie``, ``tie (bothbad)``, ``tie
    (inconsistent)`` are ties); None for anything else."""
    if value in WINNERS:
        return WINNERS[value]
    if isinstance(value, str) and value.startswith("tie"):
        return "tie"
    return None


def votes(
    path: Path,
    patterns: tuple[str, ...],
    doc_id: Any,
    aspect: str,
    extra: tuple[str, ...],
    notes: list[str],
) -> Iterator[Row]:
    """Pair lines from every Parquet file matching ``patterns`` under ``path``."""
    columns = COLUMNS + [name for name in extra if name not in COLUMNS]
    for file in find_files(path, *patterns):
        for index, row in iter_parquet(file, columns):
            where = f"row {index}"
            verdict = winner(row["winner"])
            if verdict is None:
                raise fail(
                    file,
                    where,
                    "winner",
                    f"expected model_a, model_b or tie, got {row['winner']!r}",
                )
            turns = row["turn"]
            if not isinstance(turns, int) or turns < 1:
                raise fail(file, where, "turn", f"expected a turn number, got {turns!r}")
            sides = []
            for side in ("a", "b"):
                conversation = row[f"conversation_{side}"]
                if not _complete(conversation, turns):
                    raise fail(
                        file,
                        where,
                        f"conversation_{side}",
                        f"expected {turns} user and assistant messages with content",
                    )
                sides.append(dialogue(conversation, turns))
            (source, output_a), (_source_b, output_b) = sides
            if not output_a.strip() or not output_b.strip():
                message = f"{file.name}: votes on an empty reply left out"
                if message not in notes:
                    notes.append(message)
                continue
            yield in_order(
                pair(
                    doc_id(row),
                    source,
                    str(row["model_a"]),
                    output_a,
                    str(row["model_b"]),
                    output_b,
                    aspect=aspect,
                    annotator=str(row["judge"]),
                    winner=verdict,
                    extra={name: row[name] for name in extra},
                )
            )


def _complete(conversation: Any, turns: int) -> bool:
    if not isinstance(conversation, list) or not all(
        isinstance(m, dict) and isinstance(m.get("content"), str) for m in conversation
    ):
        return False
    roles = [m.get("role") for m in conversation]
    return roles.count("user") >= turns and roles.count("assistant") >= turns
