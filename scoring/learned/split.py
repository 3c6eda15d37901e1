"""A seeded split of documents into train / validation / test: a document lands in exactly
one split, so no output of a test document is ever seen in training."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scoring.learned.pairs import Pair

DEFAULT_RATIOS = (0.8, 0.1, 0.1)


@dataclass(frozen=True)
class Split:
    """Document keys per split, each sorted."""

    train: tuple[str, ...]
    validation: tuple[str, ...]
    test: tuple[str, ...]

    def of(self, name: str) -> tuple[str, ...]:
        docs: tuple[str, ...] = getattr(self, name)
        return docs

    def as_dict(self) -> dict[str, list[str]]:
        return {name: list(self.of(name)) for name in ("train", "validation", "test")}


def split_documents(
    docs: Iterable[str], *, seed: int, ratios: Sequence[float] = DEFAULT_RATIOS
) -> Split:
    """Shuffle the distinct document keys with ``seed`` and cut them by ``ratios``.

    With at least three documents each split gets at least one, so validation and test
    are never empty.
    """
    if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) <= 0:
        raise ValueError(f"ratios must be three non-negative numbers, not {list(ratios)}")
    keys = sorted(set(docs))
    if len(keys) < 3:
        raise ValueError(f"{len(keys)} documents cannot be split three ways; at least 3 are needed")
    random.Random(seed).shuffle(keys)
    total = sum(ratios)
    n_test = max(1, round(len(keys) * ratios[2] / total))
    n_val = max(1, round(len(keys) * ratios[1] / total))
    n_train = len(keys) - n_test - n_val
    if n_train < 1:
        n_train, n_val = 1, len(keys) - n_test - 1
    train = keys[:n_train]
    validation = keys[n_train : n_train + n_val]
    test = keys[n_train + n_val :]
    return Split(tuple(sorted(train)), tuple(sorted(validation)), tuple(sorted(test)))


def pairs_in(pairs: Iterable[Pair], docs: Iterable[str]) -> list[Pair]:
    """The pairs whose document is in ``docs``."""
    wanted = set(docs)
    return [p for p in pairs if p.doc in wanted]
