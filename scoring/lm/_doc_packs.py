"""Whole documents packed into one forward: the causal tree path across documents.

Scoring one document at a time (its ~500-token prefix, then its outputs' continuation
trie against the prefix cache) leaves a GPU waiting on launches and latency: a forward
of a thousand tokens is far below what it can do in the same time. Here each document
becomes one block: its rows' full sequences (prompt and target, the last token dropped)
merged into a trie, so the shared prompt is one chain of nodes and the continuations
branch off it. Blocks are packed into one row up to a token budget per forward, and the
attention mask is the forest's ancestor relation: block-diagonal across documents, a
tree within each. Positions are node depths, so they restart at every document. Every
node is computed with exactly the tokens before it in its own row's plain forward;
numbers differ from the plain path only by float rounding.

Planning: blocks are sorted by size, largest first, and packed first-fit into forwards
of at most ``budget`` nodes (there is no padding to bucket against: a pack is one row;
sorting by size keeps the forwards full). A document larger than the budget is split
into several tries (:func:`._tree.pack`), each carrying its own copy of the prefix.

Attention: a 4-D additive mask (one row, broadcast over heads) handed through
transformers to PyTorch's ``scaled_dot_product_attention`` (SDPA). It works with every
attention implementation transformers ships that honours custom masks (``sdpa``,
``eager``), on the CPU and CUDA, in any dtype, without a compile step, and it is the
same mechanism the per-document tries already use, so one probe
(:func:`._causal.tree_attention_works`) covers both layouts; a model that ignores it
(flash-attention kernels) fails the probe and is scored one document at a time in
padded batches. Not used: flash-attention's varlen API (block-diagonal *causal* blocks
only, no tree inside a block; not installed here) and FlexAttention block masks (they
would skip the masked tiles, but need ``torch.compile`` and a per-pack block mask;
worth trying on a GPU). The dense mask's price: ``budget``² entries (4,096 tokens: 32
MiB in bfloat16) and attention computed over masked tiles, small next to the MLPs at
this budget.

On the CPU the default stays one document at a time (``doc_pack_tokens = 0``): a CPU
forward has little fixed cost to amortise, and the dense mask's quadratic attention
grows with the pack.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import partial

import scoring.lm._causal_forward as _causal_forward
from scoring.lm._causal_encoding import CausalEncoding, CausalModel
from scoring.lm._collate import Forward, Group, Row
from scoring.lm._tree import Pack, concatenate, pack
from scoring.lm.base import TargetScore

# Tokens per packed forward on a CUDA device: large enough that a forward's fixed cost
# (kernel launches, weight reads) is spread over several documents (a SummEval document
# and its 16 outputs make about 1,000-1,500 nodes), small enough that the dense mask and
# the attention over masked tiles stay cheap. Not tuned on a GPU yet.
CUDA_DOC_PACK_TOKENS = 4096


def default_budget(device: str) -> int:
    """The packed-forward budget for ``device``: :data:`CUDA_DOC_PACK_TOKENS` on CUDA,
    0 (one document at a time, as before) elsewhere."""
    return CUDA_DOC_PACK_TOKENS if str(device).startswith("cuda") else 0


def plan_blocks(sizes: Sequence[int], budget: int) -> list[list[int]]:
    """Indices of blocks of ``sizes`` nodes grouped into forwards of at most ``budget``
    nodes: largest first, each into the first forward with room (first-fit decreasing).
    A block larger than the budget gets a forward of its own."""
    order = sorted(range(len(sizes)), key=lambda k: -sizes[k])
    bins: list[list[int]] = []
    used: list[int] = []
    for k in order:
        for b, total in enumerate(used):
            if total + sizes[k] <= budget:
                bins[b].append(k)
                used[b] += sizes[k]
                break
        else:
            bins.append([k])
            used.append(sizes[k])
    return bins


@dataclass(frozen=True)
class DocPacks:
    """Strategy: every group's rows as one trie block, blocks packed across groups up to
    ``budget`` nodes per forward (no prefix cache)."""

    lm: CausalModel
    keys: Sequence[Hashable]
    budget: int
    name: str = "document packs"

    def plan(
        self, groups: Sequence[Group[CausalEncoding]]
    ) -> list[Forward[CausalEncoding, TargetScore]]:
        blocks: list[tuple[Pack, list[Row[CausalEncoding]]]] = []
        for group in groups:
            fed = [row.enc.ids[:-1] for row in group.rows]
            for tree in pack(fed, max(1, self.budget)):
                blocks.append((tree, [group.rows[m] for m in tree.members]))
        forwards: list[Forward[CausalEncoding, TargetScore]] = []
        for chosen in plan_blocks([len(tree) for tree, _ in blocks], max(1, self.budget)):
            forest = concatenate([blocks[k][0] for k in chosen])
            rows = [row for k in chosen for row in blocks[k][1]]
            forwards.append(Forward(rows, partial(self._run, forest, rows)))
        return forwards

    def _run(self, forest: Pack, rows: Sequence[Row[CausalEncoding]]) -> list[TargetScore]:
        values = _causal_forward.run_pack(self.lm, forest, [row.enc for row in rows], 0, None)
        return _causal_forward.target_scores(self.keys, rows, values)
