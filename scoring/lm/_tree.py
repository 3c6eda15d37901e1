"""Token trees: a document's continuations packed into one sequence with shared openings.

After a document's shared prompt prefix, each output's continuation is a token
sequence. Many start alike (extractive summaries open with the article's first
sentence; every continuation starts with the prompt's last token), so they are merged
into a trie: each distinct (opening, token) becomes one node, computed once. A pack is
a trie flattened in insertion order (a parent always comes before its children) and fed
to the model as one row. Its attention mask lets a node see the cached prefix, its
ancestors and itself, and its position is the prefix length plus its depth, so every
node is computed exactly as in its own output's plain forward ("tree attention", as in
SpecInfer and Medusa): the numbers differ only by float rounding.

This module only builds the packs (plain Python); :mod:`scoring.lm._causal` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Pack:
    """A trie of continuations flattened into one row.

    ``tokens[j]`` is node ``j``'s token, ``parents[j]`` its parent node (``-1``: it
    follows the cached prefix directly) and ``depths[j]`` its distance from the prefix.
    ``members[m]`` is the index (into the packed sequences) of the pack's ``m``-th
    sequence and ``paths[m]`` the node of each of its tokens.
    """

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    members: list[int] = field(default_factory=list)
    paths: list[list[int]] = field(default_factory=list)
    _children: dict[tuple[int, int], int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.tokens)

    def shared_length(self, seq: Sequence[int]) -> int:
        """How many leading tokens of ``seq`` the pack already holds."""
        node = -1
        for depth, token in enumerate(seq):
            found = self._children.get((node, token))
            if found is None:
                return depth
            node = found
        return len(seq)

    def add(self, member: int, seq: Sequence[int]) -> None:
        """Insert ``seq`` (the sequence numbered ``member``), reusing its shared opening."""
        node = -1
        path: list[int] = []
        for depth, token in enumerate(seq):
            child = self._children.get((node, token))
            if child is None:
                child = len(self.tokens)
                self.tokens.append(token)
                self.parents.append(node)
                self.depths.append(depth)
                self._children[(node, token)] = child
            path.append(child)
            node = child
        self.members.append(member)
        self.paths.append(path)


def pack(sequences: Sequence[Sequence[int]], budget: int) -> list[Pack]:
    """Tries of ``sequences`` holding at most ``budget`` nodes each where possible.

    Sequences are taken in lexicographic order, so those sharing an opening are
    neighbours and land in the same pack; a pack is closed when the next sequence's new
    nodes would take it over ``budget``. A sequence longer than ``budget`` gets a pack
    of its own. Every sequence is in exactly one pack.
    """
    if budget < 1:
        raise ValueError("budget must be at least 1")
    packs: list[Pack] = []
    current = Pack()
    for member in sorted(range(len(sequences)), key=lambda k: tuple(sequences[k])):
        seq = sequences[member]
        new_nodes = len(seq) - current.shared_length(seq)
        if current.members and len(current) + new_nodes > budget:
            packs.append(current)
            current = Pack()
        current.add(member, seq)
    if current.members:
        packs.append(current)
    return packs
