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

This module is the scoring loop and the probe that decides between tries and padded
batches; step 1 (the encoding, and the loaded model's pieces) is
:mod:`._causal_encoding`, steps 3 and 4 (the forwards and the gather)
:mod:`._causal_forward`, and whole documents packed into one forward :mod:`._doc_packs`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import scoring.lm._causal_forward as _causal_forward
import scoring.lm._tree_attention as _tree_attention
from scoring.lm._causal_encoding import CausalEncoding, CausalModel, Encoded, tokenise
from scoring.lm._collate import Batches, Forward, Group, Row, Strategy, bind, collate
from scoring.lm._doc_packs import DocPacks
from scoring.lm._tree import Pack, concatenate, pack
from scoring.lm._util import finish
from scoring.lm.base import TargetRequest, TargetScore

# The encoding's names are read from here too (bench/, tests).
__all__ = [
    "BLOCKED_PACK_TOKENS",
    "PACK_TOKENS",
    "CausalEncoding",
    "CausalModel",
    "Encoded",
    "TreePacks",
    "pack_budget",
    "score_fast",
    "score_plain",
    "tokenise",
    "tree_attention_works",
    "tree_probe_passes",
    "tree_rows_used",
]

logger = logging.getLogger(__name__)

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
            scores[i] = _causal_forward.plain_one(lm, keys[i], enc)
    return finish(keys, encoded, scores)


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

    keys = [r.key for r in requests]
    encoded = tokenise(lm, requests, lm.context_limit)
    rows = [Row(i, enc) for i, enc in enumerate(encoded) if isinstance(enc, CausalEncoding)]
    trees = tree and lm.prefix_cache and bool(rows) and tree_attention_works(lm)
    across = trees and lm.doc_pack_tokens > 0
    strategies: list[Strategy[CausalEncoding, TargetScore]] = []
    if across:
        strategies.append(DocPacks(lm, keys, lm.doc_pack_tokens))
    elif trees:
        strategies.append(TreePacks(lm, keys))
    strategies.append(
        Batches[CausalEncoding, TargetScore](
            "padded batches",
            batch_size,
            _causal_forward.FORWARD_COST,
            length=lambda enc, group: len(enc.ids) - 1 - group.shared()[0],
            run=lambda group, batch: _causal_forward.target_scores(
                keys,
                batch,
                _causal_forward.run_batch(lm, [row.enc for row in batch], *group.shared()),
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
            start=lambda encs: _causal_forward.shared_prefix(
                lm, [enc.ids for enc in encs], min(enc.target_start for enc in encs) - 1
            ),
            strategies=strategies,
            one=lambda row: _causal_forward.plain_one(lm, keys[row.index], row.enc),
            failed=lambda row, error: TargetScore.failed(
                keys[row.index], error, truncated=row.enc.truncated
            ),
            copy=lambda score, index: replace(score, key=keys[index]),
        )
    return finish(keys, encoded, scores)


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
        values = _causal_forward.run_pack(
            self.lm, tree, [row.enc for row in members], prefix_len, cache
        )
        return _causal_forward.target_scores(self.keys, members, values)


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
                _causal_forward.BLOCKS_OK[lm.model] = False
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
    return lm.tree_rows if tree_attention_works(lm) and _causal_forward.blocks_on(lm) else 0


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
        cache = _causal_forward.run_prefix(lm, prefix[:2])
        (tree,) = pack([enc.ids[2:-1] for enc in encodings], 64)
        by_member = dict(
            zip(
                tree.members,
                _causal_forward.run_pack(lm, tree, [encodings[m] for m in tree.members], 2, cache),
                strict=True,
            )
        )
        # The packed layout (_doc_packs): each sequence its own block, no cache, positions
        # restarting in the second block.
        forest = concatenate([pack([enc.ids[:-1]], 64)[0] for enc in encodings])
        packed = _causal_forward.run_pack(lm, forest, encodings, 0, None)
        right = torch.tensor(_causal_forward.plain_one(lm, None, encodings[1]).token_logprobs)
        seen_sibling = CausalEncoding((*prefix, *long[:-1], *short), 3 + len(long) - 1, False)
        wrong = torch.tensor(_causal_forward.plain_one(lm, None, seen_sibling).token_logprobs)
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
