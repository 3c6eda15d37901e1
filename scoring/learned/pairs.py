"""Preference pairs (a better and a worse output of the same document) from Likert scores
or pairwise answers, with the counts of what was left out and why."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

DEFAULT_MARGIN = 0.5  # on a 1-5 scale, as recorded with every trained metric


@dataclass(frozen=True, order=True)
class Pair:
    """``good`` was judged better than ``bad`` (output keys) within document ``doc``.

    ``task`` names the (dataset, aspect) the judgment belongs to, so that several tasks
    can be trained together and evaluated apart.
    """

    task: str
    doc: str
    good: Hashable = field(compare=False)
    bad: Hashable = field(compare=False)


@dataclass(frozen=True)
class PairCounts:
    """How many candidate pairs there were and where they went."""

    candidates: int = 0
    kept: int = 0
    ties: int = 0  # equal scores (Likert) or a tie answer (pairwise)
    below_margin: int = 0  # scores differ, but by no more than the margin
    unjudged: int = 0  # outputs without a score (not counted as pairs)

    def __add__(self, other: PairCounts) -> PairCounts:
        return PairCounts(*(a + b for a, b in zip(self._values(), other._values(), strict=True)))

    def _values(self) -> tuple[int, int, int, int, int]:
        return (self.candidates, self.kept, self.ties, self.below_margin, self.unjudged)

    def explain(self, margin: float) -> str:
        """One sentence for an error message: how many pairs, and why not more."""
        return (
            f"{self.kept} pairs kept of {self.candidates} candidate pairs: {self.ties} ties "
            f"dropped, {self.below_margin} differing by no more than the margin {margin:g}; "
            f"{self.unjudged} outputs without a score"
        )


def likert_pairs(
    task: str,
    docs: Sequence[str],
    keys: Sequence[Hashable],
    scores: Sequence[float],
    *,
    margin: float = DEFAULT_MARGIN,
) -> tuple[list[Pair], PairCounts]:
    """Pairs between outputs of the same document whose aggregated scores differ by more
    than ``margin``; equal scores are ties and dropped. Lists are aligned by output; a
    NaN score means nobody judged that output."""
    if not len(docs) == len(keys) == len(scores):
        raise ValueError("docs, keys and scores must be aligned")
    if margin < 0 or math.isnan(margin):
        raise ValueError(f"the margin must be 0 or more, not {margin}")
    by_doc: dict[str, list[tuple[Hashable, float]]] = defaultdict(list)
    unjudged = 0
    for doc, key, score in zip(docs, keys, scores, strict=True):
        if score is None or math.isnan(score):
            unjudged += 1
        else:
            by_doc[doc].append((key, float(score)))
    pairs: list[Pair] = []
    candidates = ties = below = 0
    for doc in sorted(by_doc):
        for (ka, sa), (kb, sb) in combinations(by_doc[doc], 2):
            candidates += 1
            if sa == sb:
                ties += 1
            elif abs(sa - sb) <= margin:
                below += 1
            else:
                good, bad = (ka, kb) if sa > sb else (kb, ka)
                pairs.append(Pair(task, doc, good, bad))
    return pairs, PairCounts(candidates, len(pairs), ties, below, unjudged)


def answer_pairs(
    task: str, answers: Iterable[tuple[str, Hashable, Hashable, str]]
) -> tuple[list[Pair], PairCounts]:
    """Pairs from pairwise answers ``(doc, output_a, output_b, choice)`` where choice is
    ``"a"``, ``"b"`` or ``"tie"`` (any case); ties are dropped and counted."""
    pairs: list[Pair] = []
    candidates = ties = 0
    for doc, a, b, choice in answers:
        candidates += 1
        picked = choice.lower()
        if picked == "a":
            pairs.append(Pair(task, doc, a, b))
        elif picked == "b":
            pairs.append(Pair(task, doc, b, a))
        elif picked == "tie":
            ties += 1
        else:
            raise ValueError(f"a pairwise choice must be A, B or tie, not {choice!r}")
    return pairs, PairCounts(candidates, len(pairs), ties, 0, 0)
