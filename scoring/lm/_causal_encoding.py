"""A causal (decoder-only) model's loaded pieces, and step 1 of scoring with it.

:func:`tokenise` encodes ``prompt + target`` once and splits it at the character
boundary into a :class:`CausalEncoding`; the forwards (:mod:`._causal_forward`) and the
scoring loop (:mod:`._causal`) take it from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scoring.lm.base import TargetRequest


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
