"""The backbone's input, ``"<instruction> <context> <answer>"``, cut to fit its context
length so that the answer always stays whole (the context is shortened first)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Formatted:
    prefix: str  # instruction and context: shared by every output of a document
    answer: str
    truncated: bool

    @property
    def text(self) -> str:
        return self.prefix + self.answer


def instruction(task_description: str, aspect_name: str, definition: str) -> str:
    """The aspect's definition phrased as an instruction for the task."""
    task = task_description.strip().rstrip(".")
    head = f"{task}. " if task else ""
    return f"{head}Rate the {aspect_name.lower()} of the answer. {definition.strip()}"


def format_input(
    instruction_text: str,
    context: str,
    answer: str,
    *,
    count: Callable[[str], int] | None = None,
    limit: int | None = None,
) -> Formatted:
    """Join the parts; if ``count(text)`` (tokens) exceeds ``limit``, cut the context's
    words from its end until it fits, then drop the instruction's, never the answer's.
    An answer that alone exceeds the limit is returned whole and flagged (the backbone
    then keeps its end)."""
    parts = [instruction_text.strip(), context.strip()]

    def prefix_of(instr: str, ctx: str) -> str:
        return "".join(p + SEPARATOR for p in (instr, ctx) if p)

    full = prefix_of(*parts)
    if count is None or limit is None or count(full + answer) <= limit:
        return Formatted(full, answer, False)
    for index in (1, 0):  # the context first, then the instruction
        words = parts[index].split()
        low, high = 0, len(words)  # the most words that fit, by bisection
        while low < high:
            mid = (low + high + 1) // 2
            trial = list(parts)
            trial[index] = " ".join(words[:mid])
            if count(prefix_of(*trial) + answer) <= limit:
                low = mid
            else:
                high = mid - 1
        parts[index] = " ".join(words[:low])
        if count(prefix_of(*parts) + answer) <= limit:
            return Formatted(prefix_of(*parts), answer, True)
    return Formatted("", answer, True)
