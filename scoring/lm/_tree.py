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

Several tries can share one row (:func:`concatenate`): a forest, each trie its own
block of the mask, depths (and so positions) restarting at each root. This is how whole
documents are packed into one forward (:mod:`scoring.lm._doc_packs`).

This module builds the packs in plain Python; :func:`ancestor_matrix` turns one into its
attention pattern (torch, imported when called) and :mod:`scoring.lm._causal` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


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


def concatenate(packs: Sequence[Pack]) -> Pack:
    """One row holding ``packs`` side by side: a forest in which no node of one pack sees
    a node of another (each pack keeps its own roots and depths).

    The result's member ``m`` is the ``m``-th member of ``packs`` taken in order (its
    ``members`` are ``0, 1, ...``); it is closed: adding to it is not supported.
    """
    out = Pack()
    for part in packs:
        offset = len(out.tokens)
        out.tokens.extend(part.tokens)
        out.parents.extend(p + offset if p >= 0 else -1 for p in part.parents)
        out.depths.extend(part.depths)
        for path in part.paths:
            out.members.append(len(out.members))
            out.paths.append([node + offset for node in path])
    return out


def subtree_ends(parents: Sequence[int]) -> list[int] | None:
    """``end[j]`` such that node ``j``'s descendants (itself included) are the nodes
    ``j .. end[j] - 1``, or ``None`` when they are not contiguous.

    They are in every pack :func:`pack` builds (sequences are inserted in sorted order,
    so a subtree is finished before the next one starts) and in a :func:`concatenate`
    of such packs.
    """
    n = len(parents)
    ends = list(range(1, n + 1))
    count = [1] * n
    for node in range(n - 1, -1, -1):  # children come after their parents
        parent = parents[node]
        if parent >= 0:
            ends[parent] = max(ends[parent], ends[node])
            count[parent] += count[node]
    if any(ends[j] - j != count[j] for j in range(n)):
        return None
    return ends


def ancestor_matrix(tree: Pack, device: Any = None) -> Any:
    """Boolean ``(len(tree), len(tree))`` tensor: ``[j, i]`` is true when node ``i`` is
    node ``j`` or one of its ancestors (what ``j`` may attend to).

    Built from contiguous subtree ranges in a few tensor operations when the pack allows
    it (``i <= j < end[i]``), else row by row from the parents.
    """
    import torch

    size = len(tree)
    ends = subtree_ends(tree.parents)
    if ends is not None:
        index = torch.arange(size, device=device)
        end = torch.tensor(ends, device=device)
        return (index[None, :] <= index[:, None]) & (index[:, None] < end[None, :])
    ancestors = torch.zeros((size, size), dtype=torch.bool)
    for node, parent in enumerate(tree.parents):  # parents come before their children
        if parent >= 0:
            ancestors[node] = ancestors[parent]
        ancestors[node, node] = True
    return ancestors.to(device)
