"""Steps 3 and 4 of scoring with a causal model: the forwards, and the gather of each
target token's log-probability from the position before it.

* :func:`plain_one`: one forward over a request's whole text, full-vocabulary logits
  everywhere (the reference);
* :func:`shared_prefix` / :func:`run_prefix`: a group's shared token prefix run once
  into a key/value cache;
* :func:`run_batch`: right-padded continuations against a copy of that cache expanded
  along the batch;
* :func:`run_pack`: a token trie (or a forest of them, :mod:`._doc_packs`) as one row
  with a tree attention mask, optionally in blocks (:mod:`._tree_attention`).

The vocabulary projection is applied only at the positions that are read
(:func:`logprobs_at`). The scoring loop that chooses among them is :mod:`._causal`.
"""

from __future__ import annotations

import copy
import logging
import weakref
from collections.abc import Hashable, Sequence
from typing import Any

import scoring.lm._tree_attention as _tree_attention
from scoring.lm._causal_encoding import CausalEncoding, CausalModel
from scoring.lm._collate import Row
from scoring.lm._tree import Pack, ancestor_matrix
from scoring.lm._util import cache_kwargs, common_prefix_len, describe, returned_cache
from scoring.lm.base import TargetScore

logger = logging.getLogger(__name__)

# The fixed cost of one forward, in padded-token equivalents, for batch planning: about
# 35-50 measured on CPU for the 135M default model; a GPU's is larger still.
FORWARD_COST = 64


# Models whose blocked tree attention failed its probe while the dense mask passed
# (set by the probe, :func:`._causal.tree_attention_works`).
BLOCKS_OK: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def plain_one(lm: CausalModel, key: Hashable, enc: CausalEncoding) -> TargetScore:
    """One forward over the request's whole text, full-vocabulary logits everywhere (the
    reference every other path must match); a failed score if the forward fails."""
    import torch

    try:
        ids = torch.tensor([enc.ids], dtype=torch.long, device=lm.device)
        logits = lm.model(input_ids=ids).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        positions = torch.arange(enc.target_start - 1, len(enc.ids) - 1, device=lm.device)
        values = logprobs[positions, ids[0, enc.target_start :]]
        return TargetScore.from_logprobs(key, values.tolist(), truncated=enc.truncated)
    except Exception as exc:  # one bad request must not lose the others
        logger.exception("scoring one target failed")
        return TargetScore.failed(key, describe(exc), truncated=enc.truncated)


def target_scores(
    keys: Sequence[Hashable], rows: Sequence[Row[CausalEncoding]], values: list[list[float]]
) -> list[TargetScore]:
    """Each row's target log-probabilities as its :class:`TargetScore` (gather's end)."""
    return [
        TargetScore.from_logprobs(keys[row.index], row_values, truncated=row.enc.truncated)
        for row, row_values in zip(rows, values, strict=True)
    ]


def shared_prefix(
    lm: CausalModel, sequences: Sequence[Sequence[int]], limit: int
) -> tuple[int, Any]:
    """A group's shared state: ``(prefix_len, cache)``, the key/value cache of the first
    tokens all ``sequences`` share (at most ``limit``, so that the positions the group
    reads are recomputed after it); ``(0, None)`` when there is nothing to share or the
    prefix forward fails (the rows then run whole)."""
    if not lm.prefix_cache or len(sequences) < 2:
        return 0, None
    prefix_len = common_prefix_len(sequences, limit)
    if prefix_len == 0:
        return 0, None
    try:
        return prefix_len, run_prefix(lm, sequences[0][:prefix_len])
    except Exception:
        logger.exception("prefix forward failed; scoring the group without a cache")
        return 0, None


def run_prefix(lm: CausalModel, prefix: Sequence[int]) -> Any:
    """Run the shared prefix once and return its key/value cache (batch size 1)."""
    import torch
    from transformers import DynamicCache

    ids = torch.tensor([list(prefix)], dtype=torch.long, device=lm.device)
    base = lm.model.base_model
    out = base(input_ids=ids, **cache_kwargs(base, DynamicCache()), use_cache=True)
    cache = returned_cache(out)
    if not isinstance(cache, DynamicCache) or cache.get_seq_length() != len(prefix):
        raise TypeError(f"unexpected cache after the prefix forward: {type(cache).__name__}")
    return cache


def expanded(cache: Any, batch: int) -> Any:
    """A copy of a batch-1 cache repeated ``batch`` times; the original stays as it was.

    The model appends the continuation's keys and values to the cache it is given, so
    each batch needs its own copy.
    """
    fresh = copy.deepcopy(cache)
    if batch > 1:
        fresh.batch_repeat_interleave(batch)
    return fresh


def run_batch(
    lm: CausalModel, batch: Sequence[CausalEncoding], prefix_len: int, cache: Any
) -> list[list[float]]:
    """Log-probabilities of each row's target tokens after the cached ``prefix_len``.

    Each row feeds ``ids[prefix_len:-1]``: the last token predicts nothing we need.
    Position ``t`` of the continuation sits at absolute position ``prefix_len + t`` and
    predicts token ``prefix_len + t + 1``.
    """
    import torch

    device = lm.device
    lengths = [len(enc.ids) - 1 - prefix_len for enc in batch]
    width = max(lengths)
    n = len(batch)
    input_ids = torch.full((n, width), lm.pad_id, dtype=torch.long)
    mask = torch.zeros((n, prefix_len + width), dtype=torch.long)
    mask[:, :prefix_len] = 1
    rows: list[int] = []
    cols: list[int] = []
    targets: list[int] = []
    counts: list[int] = []
    for b, (enc, length) in enumerate(zip(batch, lengths, strict=True)):
        input_ids[b, :length] = torch.tensor(enc.ids[prefix_len : prefix_len + length])
        mask[b, prefix_len : prefix_len + length] = 1
        first_token = max(enc.target_start, prefix_len + 1)
        first = first_token - 1 - prefix_len
        rows.extend([b] * (length - first))
        cols.extend(range(first, length))
        targets.extend(enc.ids[first_token:])
        counts.append(length - first)
    input_ids = input_ids.to(device)
    mask = mask.to(device)
    position_ids = torch.arange(prefix_len, prefix_len + width, device=device).expand(n, -1)
    past = expanded(cache, n) if cache is not None else None
    logprobs = logprobs_at(
        lm,
        torch.tensor(rows, device=device),
        torch.tensor(cols, device=device),
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=position_ids,
        **cache_kwargs(lm.model.base_model, past),
        use_cache=past is not None,
    )
    picked = logprobs.gather(1, torch.tensor(targets, device=device).unsqueeze(1)).squeeze(1)
    return _split_counts(picked.tolist(), counts)


def logprobs_at(lm: CausalModel, rows: Any, cols: Any, **inputs: Any) -> Any:
    """Next-token log-probabilities at the ``(rows[k], cols[k])`` positions of one forward.

    Only those positions are projected onto the vocabulary when the model's logits are
    plain ``lm_head(hidden state)``; otherwise they are taken from the model's logits.
    """
    import torch

    if lm.project_at_targets:
        hidden = lm.model.base_model(**inputs).last_hidden_state[rows, cols]
        logits = lm.model.get_output_embeddings()(hidden)
    else:
        logits = lm.model(**inputs).logits[rows, cols]
    return torch.log_softmax(logits.float(), dim=-1)


def _split_counts(flat: list[float], counts: Sequence[int]) -> list[list[float]]:
    """``flat`` cut into consecutive runs of ``counts[k]`` values."""
    result: list[list[float]] = []
    start = 0
    for count in counts:
        result.append(flat[start : start + count])
        start += count
    return result


def run_pack(
    lm: CausalModel,
    tree: Pack,
    encodings: Sequence[CausalEncoding],
    prefix_len: int,
    cache: Any,
) -> list[list[float]]:
    """Target log-probabilities of each of ``tree``'s members (``encodings``, in order).

    A node sees the cached prefix, its ancestors and itself, at position
    ``prefix_len + depth``. Node ``paths[m][t]`` holds token ``prefix_len + t`` of member
    ``m`` and predicts the token after it. With ``lm.tree_rows`` (and the blocks passing
    the probe), attention runs in blocks of that many nodes, each against only the keys
    its nodes may see (:mod:`._tree_attention`).
    """
    import torch

    device = lm.device
    size = len(tree)
    dtype = next(lm.model.parameters()).dtype
    ancestors = ancestor_matrix(tree, device)
    mask = torch.zeros((1, 1, size, prefix_len + size), dtype=dtype, device=device)
    mask[0, 0, :, prefix_len:].masked_fill_(~ancestors, torch.finfo(dtype).min)
    extra: dict[str, Any] = {}
    if blocks_on(lm):
        extra["tree_blocks"] = _tree_attention.blocks(
            tree, prefix_len, lm.tree_rows, ancestors, dtype
        )
    input_ids = torch.tensor([tree.tokens], dtype=torch.long, device=device)
    position_ids = (torch.tensor([tree.depths], dtype=torch.long) + prefix_len).to(device)
    needed: dict[int, int] = {}  # predicting node -> its row among the projected ones
    picks: list[tuple[int, int]] = []
    counts: list[int] = []
    for enc, path in zip(encodings, tree.paths, strict=True):
        first_token = max(enc.target_start, prefix_len + 1)
        for k in range(first_token, len(enc.ids)):
            node = path[k - 1 - prefix_len]
            picks.append((needed.setdefault(node, len(needed)), enc.ids[k]))
        counts.append(len(enc.ids) - first_token)
    nodes = torch.tensor(list(needed), device=device)
    past = copy.deepcopy(cache) if cache is not None else None
    logprobs = logprobs_at(
        lm,
        0,
        nodes,
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=position_ids,
        **cache_kwargs(lm.model.base_model, past),
        use_cache=past is not None,
        **extra,
    )
    picked = logprobs[
        torch.tensor([row for row, _ in picks], device=device),
        torch.tensor([token for _, token in picks], device=device),
    ]
    return _split_counts(picked.tolist(), counts)


def blocks_on(lm: CausalModel) -> bool:
    """Whether ``lm``'s tree forwards hand blocks to the attention: asked for, the model
    switched to take them, and not turned off by the probe (which calls this itself, so
    it cannot ask :func:`._causal.tree_attention_works`)."""
    return (
        lm.tree_rows > 0 and _tree_attention.installed(lm.model) and BLOCKS_OK.get(lm.model, True)
    )
