"""Target log-probabilities from a causal (decoder-only) language model.

The steps are kept apart, as in lm-evaluation-harness:

1. :func:`tokenise` encodes ``prompt + target`` once and splits at the character boundary;
2. collate: rows are sorted longest first and results are written back by index;
3. forward in ``torch.inference_mode`` (the caller enters it);
4. gather the log-probability of each target token from the position before it;
5. reduce: :meth:`TargetScore.from_logprobs` returns both mean and sum.

Two forward strategies give the same numbers (to float rounding):

* :func:`score_plain` runs one forward per request over the whole text and takes
  full-vocabulary logits everywhere, as the GPTScore reference code does;
* :func:`score_fast` runs a prompt's shared token prefix once and keeps its key/value
  cache. The continuations after it are merged into token tries (:mod:`._tree`: an
  opening shared by several outputs is computed once) and each trie runs as one row
  with a tree attention mask against the cache, without padding; the vocabulary
  projection is applied only at the nodes that predict target tokens. Models whose
  attention does not honour a custom mask (checked once per model on a probe) use
  right-padded batches against a copy of the cache expanded along the batch dimension.
  Identical targets are scored once.

Every position is computed with exactly the tokens before it, so the two paths differ
only by float rounding (about 1e-5 in float32 on the default model).
"""

from __future__ import annotations

import copy
import logging
import weakref
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from scoring.lm import _tree_attention
from scoring.lm._collate import Batches, Forward, Group, Row, Strategy, bind, collate
from scoring.lm._tree import Pack, ancestor_matrix, concatenate, pack
from scoring.lm._util import cache_kwargs, common_prefix_len, describe, finish, returned_cache
from scoring.lm.base import TargetRequest, TargetScore

logger = logging.getLogger(__name__)

# The fixed cost of one forward, in padded-token equivalents, for batch planning: about
# 35-50 measured on CPU for the 135M default model; a GPU's is larger still.
FORWARD_COST = 64
# Trie nodes per tree forward: large enough that one forward carries a document's
# outputs (the weights are streamed once), small enough that the L x (prefix + L) mask
# and attention stay cheap. With one dense masked attention call per pack, 256 to 2048
# nodes per pack were within 3% of each other on bench/gptscore_speed.py (CPU), 512
# best. With blocked attention (_tree_attention) the masked part is skipped, so larger
# packs cost no extra attention and save forwards: 2048 (one pack per SummEval
# document) took about 10% less CPU time than dense 512-node packs there.
PACK_TOKENS = 512
BLOCKED_PACK_TOKENS = 2048
_TREE_OK: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
# Models whose blocked tree attention failed its probe while the dense mask passed.
_BLOCKS_OK: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class CausalEncoding:
    """Token ids of ``prompt + target`` and where the target starts.

    ``ids[target_start:]`` are the target tokens; ``target_start >= 1`` always, so every
    target token, the first included, has a position that predicts it.
    """

    ids: tuple[int, ...]
    target_start: int
    truncated: bool

    @property
    def n_target(self) -> int:
        return len(self.ids) - self.target_start


Encoded = CausalEncoding | str  # a string is the error for that request


@dataclass
class CausalModel:
    """The loaded pieces the scoring functions need."""

    model: Any
    tokenizer: Any
    device: Any
    context_limit: int | None
    pad_id: int
    context_token: int | None  # put in front of a target that nothing precedes
    project_at_targets: bool  # lm_head(base hidden states) equals the model's logits
    prefix_cache: bool  # the model's cache can be reused for a shared prefix
    pack_tokens: int = 0  # trie nodes per tree-attention forward (0: see pack_budget)
    # Tokens per forward of whole documents packed together (0: one document at a time,
    # its prefix cached; see _doc_packs).
    doc_pack_tokens: int = 0
    # Query rows per block of tree attention that skips masked keys (0: one dense masked
    # SDPA call; see _tree_attention). Needs the model switched by _tree_attention.install.
    tree_rows: int = 0


# -- 1. tokenise --------------------------------------------------------------------


def tokenise(
    lm: CausalModel, requests: Sequence[TargetRequest], limit: int | None
) -> list[Encoded]:
    """Encode each ``prompt + target`` once; an error string where that is impossible.

    Target tokens are those whose character span ends after the prompt, or starts at
    or after its end. A token that straddles the boundary (part prompt, part target,
    e.g. ``"Ġsummary"`` when the prompt ends in a space) therefore counts as target:
    deterministic, and every target character is scored. Special tokens the tokenizer
    adds in front (a BOS token) stay in front; ones it appends (an EOS token) are
    dropped, as they are not part of the target text. When nothing precedes the target
    (an empty prompt and no BOS token), the tokenizer's BOS or EOS token is put in
    front so that the first target token is conditioned on something.

    If the text is longer than ``limit`` tokens, prompt tokens are dropped from the
    left (after any leading special tokens) and ``truncated`` is set; a target that does
    not fit on its own is an error.
    """
    out: list[Encoded] = ["" for _ in requests]
    texts: list[str] = []
    where: list[int] = []
    for i, request in enumerate(requests):
        if not isinstance(request.prompt, str) or not isinstance(request.target, str):
            out[i] = "prompt and target must be strings"
        elif request.target == "":
            out[i] = "the target is empty: there is nothing to score"
        else:
            texts.append(request.prompt + request.target)
            where.append(i)
    if not texts:
        return out
    enc = lm.tokenizer(
        texts,
        add_special_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_attention_mask=False,
    )
    for j, i in enumerate(where):
        out[i] = _split(
            list(enc["input_ids"][j]),
            [tuple(pair) for pair in enc["offset_mapping"][j]],
            list(enc["special_tokens_mask"][j]),
            len(requests[i].prompt),
            limit,
            lm.context_token,
        )
    return out


def _split(
    ids: list[int],
    offsets: list[tuple[int, int]],
    special: list[int],
    boundary: int,
    limit: int | None,
    context_token: int | None,
) -> Encoded:
    n = len(ids)
    added = [bool(s) and a == b for (a, b), s in zip(offsets, special, strict=True)]
    lead = 0
    while lead < n and added[lead]:
        lead += 1
    end = n
    while end > lead and added[end - 1]:
        end -= 1
    start = next(
        (k for k in range(lead, end) if offsets[k][1] > boundary or offsets[k][0] >= boundary),
        end,
    )
    if start == end:
        return "the target has no tokens to score"
    ids = ids[:end]
    if start == 0:
        if context_token is None:
            return (
                "nothing precedes the target and the tokenizer has no BOS or EOS token to put there"
            )
        ids = [context_token, *ids]
        start = lead = 1
    truncated = False
    if limit is not None and len(ids) > limit:
        excess = len(ids) - limit
        keep_context = 0 if lead > 0 else 1  # the first target token needs a predecessor
        removable = start - lead - keep_context
        if excess > removable:
            return (
                f"the target is {len(ids) - start} tokens and does not fit the model's "
                f"context of {limit} tokens even with the prompt cut"
            )
        ids = ids[:lead] + ids[lead + excess :]
        start -= excess
        truncated = True
    return CausalEncoding(tuple(ids), start, truncated)


# -- plain path: one full forward per request (the reference) -----------------------


def score_plain(lm: CausalModel, requests: Sequence[TargetRequest]) -> list[TargetScore]:
    """One forward per request over the full text, full-vocabulary logits everywhere."""
    import torch

    keys = [r.key for r in requests]
    encoded = tokenise(lm, requests, lm.context_limit)
    rows = [(i, e) for i, e in enumerate(encoded) if isinstance(e, CausalEncoding)]
    rows.sort(key=lambda row: -len(row[1].ids))  # collate: longest first
    scores: dict[int, TargetScore] = {}
    with torch.inference_mode():
        for i, enc in rows:
            scores[i] = _plain_one(lm, keys[i], enc)
    return finish(keys, encoded, scores)


def _plain_one(lm: CausalModel, key: Hashable, enc: CausalEncoding) -> TargetScore:
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


# -- fast path: shared prefix once, batched continuations ---------------------------


def score_fast(
    lm: CausalModel, requests: Sequence[TargetRequest], batch_size: int, *, tree: bool = True
) -> list[TargetScore]:
    """Same numbers as :func:`score_plain`, computing the shared prompt prefix once.

    The rows go through the collate skeleton (:func:`._collate.collate`): identical
    encodings are scored once, and requests are grouped by prompt. A group's prefix is
    the common token prefix of its members' full encodings (not the prompt encoded
    alone, which can split differently at the boundary), stopped one token before the
    earliest target so that the position predicting each first target token is
    recomputed in the continuation. Requests whose prompt is used once are pooled into
    one more group (their common prefix, such as a shared instruction, is still
    computed once).

    Where the model honours a custom mask (:func:`tree_attention_works`) and ``tree``
    is set, the rows run as token trees (:mod:`._tree`): with ``lm.doc_pack_tokens``
    set, whole documents (prefix and continuation trie, one block each) are packed up to
    that many tokens per forward (:mod:`._doc_packs`); otherwise the prefix runs once
    per group into a key/value cache and the continuations run as tries of at most
    :func:`pack_budget` nodes against it. A forward that fails hands its rows to
    right-padded batches of ``batch_size`` against the group's prefix cache, and those
    to one forward per request.
    """
    import torch

    from scoring.lm import _doc_packs

    keys = [r.key for r in requests]
    encoded = tokenise(lm, requests, lm.context_limit)
    rows = [Row(i, enc) for i, enc in enumerate(encoded) if isinstance(enc, CausalEncoding)]
    trees = tree and lm.prefix_cache and bool(rows) and tree_attention_works(lm)
    across = trees and lm.doc_pack_tokens > 0
    strategies: list[Strategy[CausalEncoding, TargetScore]] = []
    if across:
        strategies.append(_doc_packs.DocPacks(lm, keys, lm.doc_pack_tokens))
    elif trees:
        strategies.append(TreePacks(lm, keys))
    strategies.append(
        Batches[CausalEncoding, TargetScore](
            "padded batches",
            batch_size,
            FORWARD_COST,
            length=lambda enc, group: len(enc.ids) - 1 - group.shared()[0],
            run=lambda group, batch: _scores(
                keys, batch, _run_batch(lm, [row.enc for row in batch], *group.shared())
            ),
        )
    )
    with torch.inference_mode():
        scores = collate(
            rows,
            identity=lambda enc: (enc.ids, enc.target_start),
            group_key=lambda row: requests[row.index].prompt,
            pool_singles=True,
            across_groups=across,
            # Stop before the last token ahead of any target: it predicts the first one.
            start=lambda encs: shared_prefix(
                lm, [enc.ids for enc in encs], min(enc.target_start for enc in encs) - 1
            ),
            strategies=strategies,
            one=lambda row: _plain_one(lm, keys[row.index], row.enc),
            failed=lambda row, error: TargetScore.failed(
                keys[row.index], error, truncated=row.enc.truncated
            ),
            copy=lambda score, index: replace(score, key=keys[index]),
        )
    return finish(keys, encoded, scores)


def _scores(
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
        return prefix_len, _run_prefix(lm, sequences[0][:prefix_len])
    except Exception:
        logger.exception("prefix forward failed; scoring the group without a cache")
        return 0, None


def _run_prefix(lm: CausalModel, prefix: Sequence[int]) -> Any:
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


def _expanded(cache: Any, batch: int) -> Any:
    """A copy of a batch-1 cache repeated ``batch`` times; the original stays as it was.

    The model appends the continuation's keys and values to the cache it is given, so
    each batch needs its own copy.
    """
    fresh = copy.deepcopy(cache)
    if batch > 1:
        fresh.batch_repeat_interleave(batch)
    return fresh


def _run_batch(
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
    past = _expanded(cache, n) if cache is not None else None
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


# -- tree attention: a document's continuations as tries, one row per pack ------------


@dataclass(frozen=True)
class TreePacks:
    """Strategy: a group's continuations as token tries of at most
    :func:`pack_budget` nodes, each one forward against the group's prefix cache."""

    lm: CausalModel
    keys: Sequence[Hashable]
    name: str = "token trees"

    def plan(
        self, groups: Sequence[Group[CausalEncoding]]
    ) -> Iterator[Forward[CausalEncoding, TargetScore]]:
        for group in groups:  # a generator: a group's prefix runs when its packs are due
            prefix_len, _cache = group.shared()
            fed = [row.enc.ids[prefix_len:-1] for row in group.rows]
            for tree in pack(fed, pack_budget(self.lm)):
                members = [group.rows[m] for m in tree.members]
                yield Forward(members, bind(partial(self._run, tree), group, members))

    def _run(
        self,
        tree: Pack,
        group: Group[CausalEncoding],
        members: Sequence[Row[CausalEncoding]],
    ) -> list[TargetScore]:
        prefix_len, cache = group.shared()
        values = _run_pack(self.lm, tree, [row.enc for row in members], prefix_len, cache)
        return _scores(self.keys, members, values)


def _run_pack(
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
    if _blocks_on(lm):
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


def tree_attention_works(lm: CausalModel) -> bool:
    """Whether ``lm`` honours a custom tree mask and position ids (checked once per model).

    On a probe, a branch scored in a tree beside a longer sibling must match its plain
    forward to within rounding, and be clearly closer to it than the same tokens scored
    with an ordinary causal mask (which would let it see its sibling); so must the same
    two sequences packed as two documents in one row (the mask of :mod:`._doc_packs`,
    positions restarting in the second block). On a model switched to the blocked
    attention (:mod:`._tree_attention`) the probe runs it in blocks of two nodes; if only
    the dense mask passes, blocks are turned off for the model. Attention implementations
    that ignore custom masks (flash-attention kernels) fail and get padded batches
    instead.
    """
    known = _TREE_OK.get(lm.model)
    if known is None:
        # Probe the blocks whenever the model can run them, whatever this copy's setting,
        # so that a copy with blocks never runs them unprobed.
        blocks = _tree_attention.installed(lm.model)
        known = _probe_or_false(replace(lm, tree_rows=2 if blocks else 0))
        if not known and blocks:  # the blocks may be what fails: try the dense mask
            known = _probe_or_false(replace(lm, tree_rows=0))
            if known:
                logger.warning("blocked tree attention failed its probe; using the dense mask")
                _BLOCKS_OK[lm.model] = False
        _TREE_OK[lm.model] = known
    return known


def pack_budget(lm: CausalModel) -> int:
    """Trie nodes per tree forward: ``lm.pack_tokens`` when set, else
    :data:`BLOCKED_PACK_TOKENS` with blocked attention and :data:`PACK_TOKENS` with the
    dense mask."""
    if lm.pack_tokens > 0:
        return lm.pack_tokens
    return BLOCKED_PACK_TOKENS if tree_rows_used(lm) else PACK_TOKENS


def tree_rows_used(lm: CausalModel) -> int:
    """The query rows per tree-attention block this model scores with (0: dense mask or
    no tree attention), once the probe has run."""
    return lm.tree_rows if tree_attention_works(lm) and _blocks_on(lm) else 0


def _blocks_on(lm: CausalModel) -> bool:
    """Whether ``lm``'s tree forwards hand blocks to the attention: asked for, the model
    switched to take them, and not turned off by the probe (which calls this itself, so
    it cannot ask :func:`tree_attention_works`)."""
    return (
        lm.tree_rows > 0 and _tree_attention.installed(lm.model) and _BLOCKS_OK.get(lm.model, True)
    )


def _probe_or_false(lm: CausalModel) -> bool:
    try:
        return _probe_tree(lm)
    except Exception:
        logger.info("tree attention unavailable for this model", exc_info=True)
        return False


def _probe_tree(lm: CausalModel) -> bool:
    import torch

    config = lm.model.config
    text_config = (
        config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    )
    vocab = int(getattr(text_config, "vocab_size", 0) or 0)
    if vocab < 16:
        return False
    a, b, c, d, e, f, g, h = ((k * 7919 + 11) % vocab for k in range(8))
    prefix, long, short = (a, b, c), (d, e, f, g, h), (d, g, c)
    encodings = [
        CausalEncoding((*prefix, *long), 3, False),
        CausalEncoding((*prefix, *short), 3, False),
    ]
    with torch.inference_mode():
        cache = _run_prefix(lm, prefix[:2])
        (tree,) = pack([enc.ids[2:-1] for enc in encodings], 64)
        by_member = dict(
            zip(
                tree.members,
                _run_pack(lm, tree, [encodings[m] for m in tree.members], 2, cache),
                strict=True,
            )
        )
        # The packed layout (_doc_packs): each sequence its own block, no cache, positions
        # restarting in the second block.
        forest = concatenate([pack([enc.ids[:-1]], 64)[0] for enc in encodings])
        packed = _run_pack(lm, forest, encodings, 0, None)
        right = torch.tensor(_plain_one(lm, None, encodings[1]).token_logprobs)
        seen_sibling = CausalEncoding((*prefix, *long[:-1], *short), 3 + len(long) - 1, False)
        wrong = torch.tensor(_plain_one(lm, None, seen_sibling).token_logprobs)
    error = max(
        float((torch.tensor(by_member[1]) - right).abs().max()),
        float((torch.tensor(packed[1]) - right).abs().max()),
    )
    confusion = float((wrong - right).abs().max())
    eps = torch.finfo(next(lm.model.parameters()).dtype).eps
    ok = tree_probe_passes(error, confusion, eps, float(right.abs().max()))
    if not ok:
        logger.info("tree attention probe: error %.2e, ordinary-mask error %.2e", error, confusion)
    return ok


def tree_probe_passes(error: float, confusion: float, eps: float, magnitude: float) -> bool:
    """The probe's verdict. ``error``: the tree's largest difference from the plain
    forward (same model, same dtype); ``confusion``: the difference an ordinary causal
    mask makes (the branch sees its sibling). Rounding grows with the dtype's machine
    epsilon and the log-probabilities' size, so the tolerance scales with both (1e-4 at
    least, float32's old bound): a 7B model in bfloat16, whose rounding alone exceeds a
    fixed 2e-2, keeps the tree. What guards against a kernel that ignores the mask is the
    second test: the tree must be clearly closer to the plain forward than the ordinary
    mask is (an ignored mask makes the two errors equal)."""
    tolerance = max(1e-4, 8 * eps * max(1.0, magnitude))
    return error <= tolerance and (confusion > 4 * error or error <= 1e-6)
