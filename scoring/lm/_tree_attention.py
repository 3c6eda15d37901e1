"""Tree attention that skips what the mask hides: each block of query rows attends only
to the keys one of its rows can see.

A tree forward (:mod:`._tree`, :mod:`._doc_packs`) hands the model a dense additive mask
of ``nodes x (prefix + nodes)``. PyTorch's SDPA computes every entry of it, masked or
not, and in a trie most of the ``nodes x nodes`` part is masked: a node sees only its
ancestors (a few dozen) of the pack's hundreds of nodes. On the default model over
SummEval that is about 40% of the attention work of a 500-node pack against a 560-token
prefix.

Here the pack's nodes are cut into blocks of ``rows`` consecutive nodes. A block's key
set is the cached prefix plus the union of its nodes' ancestors; nodes are in trie
order, so consecutive nodes share most of their ancestors and the union stays close to
``rows`` plus one path (128-node blocks of a SummEval pack see about 640 keys each
instead of 960). Each block is one SDPA call against those keys, with the mask
restricted to them. The entries left out are exactly the masked ones, whose weight is
``exp(min) = 0``, so every number is what the dense call gives up to float summation
order.

The blocks reach the attention function through transformers' attention interface:
:func:`install` registers :data:`NAME` (with SDPA's mask builder) and switches a model
that uses ``sdpa`` to it. A forward without ``tree_blocks`` (the plain path, padded
batches, the prefix) goes to transformers' own SDPA function unchanged, so the switch
changes nothing else. The dense mask is still passed, so a model whose layers did not
forward the blocks would still be right, only not faster; the tree probe
(:func:`._causal.tree_attention_works`) runs this path too.

torch and transformers are imported when a function is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoring.lm._tree import Pack

NAME = "concordia_tree"
# Query rows per attention block on the CPU. On bench/gptscore_speed.py's packs, 64-row
# blocks see 580 keys per node, 128 rows 640 and 256 rows 760, against 960 dense; below
# ~128 rows SDPA's per-call cost and lower efficiency eat the saving.
CPU_TREE_ROWS = 128
# Devices where SDPA's own grouped-query attention is fast with a mask; elsewhere the key
# and value heads are repeated first, as transformers does.
NATIVE_GQA_DEVICES = ("cpu",)
_REGISTERED = False


@dataclass(frozen=True)
class Block:
    """Query rows ``start:end`` of a pack attend to the key positions ``keys`` (a long
    tensor) with the additive ``mask`` (``1 x 1 x (end - start) x len(keys)``)."""

    start: int
    end: int
    keys: Any
    mask: Any


def default_rows(device: str) -> int:
    """Query rows per block on ``device``: :data:`CPU_TREE_ROWS` on the CPU; 0 (one dense
    masked call) elsewhere until measured on a GPU (bench/gpu_speed.py --tree-rows)."""
    return CPU_TREE_ROWS if str(device) == "cpu" else 0


def blocks(tree: Pack, prefix_len: int, rows: int, ancestors: Any, dtype: Any) -> list[Block]:
    """The blocks of ``tree`` run after ``prefix_len`` cached positions: ``rows`` query
    rows each, keys the prefix plus every node some row of the block may see.
    ``ancestors`` is :func:`._tree.ancestor_matrix` of ``tree`` (on the model's device)."""
    import torch

    if rows < 1:
        raise ValueError("rows must be at least 1")
    device = ancestors.device
    prefix = torch.arange(prefix_len, device=device)
    lowest = torch.finfo(dtype).min
    out: list[Block] = []
    for start in range(0, len(tree), rows):
        end = min(len(tree), start + rows)
        seen = ancestors[start:end]
        nodes = seen.any(0).nonzero().squeeze(1)
        mask = torch.zeros((1, 1, end - start, prefix_len + len(nodes)), dtype=dtype, device=device)
        mask[0, 0, :, prefix_len:].masked_fill_(~seen[:, nodes], lowest)
        out.append(Block(start, end, torch.cat([prefix, nodes + prefix_len]), mask))
    return out


def attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    tree_blocks: list[Block] | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers' attention signature: ``query`` is ``batch x heads x rows x dim``,
    ``key``/``value`` ``batch x kv_heads x keys x dim`` (the cache included); returns
    ``batch x rows x heads x dim``. Without ``tree_blocks``, transformers' SDPA."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    # Blocks carry only the tree mask: a layer adding a position bias or soft-capping its
    # scores goes to transformers' SDPA function (which applies the one, refuses the other).
    special = kwargs.get("position_bias") is not None or kwargs.get("softcap") is not None
    if tree_blocks is None or special:
        return sdpa_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout=dropout,
            scaling=scaling,
            is_causal=is_causal,
            **kwargs,
        )
    groups = query.shape[1] // key.shape[1]
    native = query.device.type in NATIVE_GQA_DEVICES
    out = query.new_empty(query.shape[0], query.shape[1], query.shape[2], value.shape[-1])
    for block in tree_blocks:
        k = key.index_select(2, block.keys)
        v = value.index_select(2, block.keys)
        if groups > 1 and not native:
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
        out[:, :, block.start : block.end] = torch.nn.functional.scaled_dot_product_attention(
            query[:, :, block.start : block.end],
            k,
            v,
            attn_mask=block.mask,
            dropout_p=dropout,
            scale=scaling,
            enable_gqa=groups > 1 and native,
        )
    return out.transpose(1, 2).contiguous(), None


def kernel(model: Any) -> str | None:
    """The attention implementation ``model`` runs on: transformers' name, ``sdpa`` for
    :data:`NAME` (whose blocks are SDPA calls; the run records their size apart)."""
    current = getattr(model.config, "_attn_implementation", None)
    return "sdpa" if current == NAME else current


def installed(model: Any) -> bool:
    """Whether ``model`` runs on :data:`NAME` (and so can take blocks)."""
    return bool(getattr(model.config, "_attn_implementation", None) == NAME)


def install(model: Any) -> bool:
    """Switch ``model`` from ``sdpa`` to :data:`NAME` (registering it once); True when it
    now uses it. Other implementations (eager, flash-attention) are left alone."""
    global _REGISTERED
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if installed(model):
        return True
    current = getattr(model.config, "_attn_implementation", None)
    if current != "sdpa" or not hasattr(model, "set_attn_implementation"):
        return False
    if not _REGISTERED:
        AttentionInterface.register(NAME, attention)
        AttentionMaskInterface.register(NAME, sdpa_mask)
        _REGISTERED = True
    model.set_attn_implementation(NAME)
    # Some architectures cannot be switched: transformers warns and leaves them as they were.
    return installed(model)
