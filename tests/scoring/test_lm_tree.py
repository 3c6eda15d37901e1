"""Token tries for the fast path: shared openings once, every sequence recoverable."""

from __future__ import annotations

import pytest

from scoring.lm._tree import pack

SEQUENCES = [[5, 6, 7, 8], [5, 6, 9], [5, 6, 7, 8, 10], [4, 6], [5, 6, 7, 8]]


def _sequence_of(tree: object, m: int) -> list[int]:
    return [tree.tokens[node] for node in tree.paths[m]]  # type: ignore[attr-defined]


def test_a_shared_opening_is_one_run_of_nodes() -> None:
    (tree,) = pack(SEQUENCES, 100)
    # 5 6 7 8 10 | 9 | 4 6: eight distinct (opening, token) pairs for 18 tokens
    assert len(tree) == 8
    assert sorted(tree.members) == list(range(len(SEQUENCES)))
    for m, member in enumerate(tree.members):
        assert _sequence_of(tree, m) == SEQUENCES[member]


def test_parents_come_first_and_depths_count_from_the_prefix() -> None:
    (tree,) = pack(SEQUENCES, 100)
    for node, parent in enumerate(tree.parents):
        assert parent < node
        assert tree.depths[node] == (0 if parent < 0 else tree.depths[parent] + 1)
    for path in tree.paths:
        assert [tree.depths[node] for node in path] == list(range(len(path)))


def test_identical_sequences_share_every_node() -> None:
    (tree,) = pack(SEQUENCES, 100)
    first, last = tree.members.index(0), tree.members.index(4)
    assert tree.paths[first] == tree.paths[last]


@pytest.mark.parametrize("budget", [1, 3, 5, 6])
def test_packs_stay_within_budget_unless_one_sequence_is_longer(budget: int) -> None:
    packs = pack(SEQUENCES, budget)
    members = sorted(m for p in packs for m in p.members)
    assert members == list(range(len(SEQUENCES)))  # each sequence exactly once
    for tree in packs:
        longest = max(len(SEQUENCES[m]) for m in tree.members)
        assert len(tree) <= max(budget, longest)
        for m, member in enumerate(tree.members):
            assert _sequence_of(tree, m) == SEQUENCES[member]


def test_a_budget_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="budget"):
        pack(SEQUENCES, 0)
