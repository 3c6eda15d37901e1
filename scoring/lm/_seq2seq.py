"""Target log-probabilities from an encoder-decoder model (T5, FLAN-T5, BART).

The prompt goes to the encoder and the target is scored by the decoder, as GPTScore
does with FLAN-T5. The target is encoded on its own with the tokenizer's special
tokens, so for T5 its closing ``</s>`` is one of the scored tokens (as in the
reference code, which scores the labels the tokenizer produces).

* :func:`score_plain`: one full forward per request (encoder and decoder);
* :func:`score_fast`: the encoder runs once per distinct prompt, and its output is
  reused for all of that prompt's targets, decoded in right-padded batches (collated by
  :mod:`._collate`, the skeleton every path shares).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from scoring.lm._collate import Batches, Row, collate
from scoring.lm._util import describe, finish
from scoring.lm.base import TargetRequest, TargetScore

logger = logging.getLogger(__name__)

# The fixed cost of one forward, in padded-token equivalents, for batch planning: about
# 35-50 measured on CPU for the 135M default model; a GPU's is larger still.
FORWARD_COST = 64


@dataclass(frozen=True, slots=True)
class Seq2SeqEncoding:
    """Encoder ids of the prompt and decoder labels of the target."""

    source: tuple[int, ...]
    labels: tuple[int, ...]
    truncated: bool


Encoded = Seq2SeqEncoding | str  # a string is the error for that request


@dataclass
class Seq2SeqModel:
    """The loaded pieces the scoring functions need."""

    model: Any
    tokenizer: Any
    device: Any
    context_limit: int | None
    pad_id: int
    decoder_start_id: int


def tokenise(lm: Seq2SeqModel, requests: Sequence[TargetRequest]) -> list[Encoded]:
    """Encode prompts (left-truncated to the limit) and targets (never truncated)."""
    out: list[Encoded] = ["" for _ in requests]
    where: list[int] = []
    for i, request in enumerate(requests):
        if not isinstance(request.prompt, str) or not isinstance(request.target, str):
            out[i] = "prompt and target must be strings"
        elif request.target == "":
            out[i] = "the target is empty: there is nothing to score"
        else:
            where.append(i)
    if not where:
        return out
    options: dict[str, Any] = {
        "add_special_tokens": True,
        "return_special_tokens_mask": True,
        "return_offsets_mapping": True,
        "return_attention_mask": False,
    }
    sources = lm.tokenizer([requests[i].prompt for i in where], **options)
    targets = lm.tokenizer([requests[i].target for i in where], add_special_tokens=True)
    limit = lm.context_limit
    for j, i in enumerate(where):
        labels = list(targets["input_ids"][j])
        source = list(sources["input_ids"][j])
        if not labels:
            out[i] = "the target has no tokens to score"
            continue
        if limit is not None and len(labels) > limit:
            out[i] = f"the target is {len(labels)} tokens; the model's limit is {limit}"
            continue
        truncated = False
        if limit is not None and len(source) > limit:
            added = [
                bool(s) and a == b
                for (a, b), s in zip(
                    sources["offset_mapping"][j], sources["special_tokens_mask"][j], strict=True
                )
            ]
            lead = 0
            while lead < len(source) and added[lead]:
                lead += 1
            excess = len(source) - limit
            body = len(source) - lead - sum(added[lead:])
            if excess >= body:
                out[i] = f"the prompt cannot be cut to the model's limit of {limit} tokens"
                continue
            source = source[:lead] + source[lead + excess :]
            truncated = True
        out[i] = Seq2SeqEncoding(tuple(source), tuple(labels), truncated)
    return out


def score_plain(lm: Seq2SeqModel, requests: Sequence[TargetRequest]) -> list[TargetScore]:
    """One encoder+decoder forward per request, full logits (the reference)."""
    import torch

    keys = [r.key for r in requests]
    encoded = tokenise(lm, requests)
    rows = [(i, e) for i, e in enumerate(encoded) if isinstance(e, Seq2SeqEncoding)]
    rows.sort(key=lambda row: -(len(row[1].source) + len(row[1].labels)))
    scores: dict[int, TargetScore] = {}
    with torch.inference_mode():
        for i, enc in rows:
            scores[i] = _plain_one(lm, keys[i], enc)
    return finish(keys, encoded, scores)


def _plain_one(lm: Seq2SeqModel, key: Hashable, enc: Seq2SeqEncoding) -> TargetScore:
    import torch

    try:
        source = torch.tensor([enc.source], dtype=torch.long, device=lm.device)
        labels = torch.tensor([enc.labels], dtype=torch.long, device=lm.device)
        decoder_input = torch.tensor(
            [[lm.decoder_start_id, *enc.labels[:-1]]], dtype=torch.long, device=lm.device
        )
        logits = lm.model(
            input_ids=source,
            attention_mask=torch.ones_like(source),
            decoder_input_ids=decoder_input,
        ).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        values = logprobs.gather(1, labels[0].unsqueeze(1)).squeeze(1)
        return TargetScore.from_logprobs(key, values.tolist(), truncated=enc.truncated)
    except Exception as exc:
        logger.exception("scoring one target failed")
        return TargetScore.failed(key, describe(exc), truncated=enc.truncated)


def score_fast(
    lm: Seq2SeqModel, requests: Sequence[TargetRequest], batch_size: int
) -> list[TargetScore]:
    """Encoder once per distinct prompt; the decoder scores its targets in batches.

    Through the collate skeleton (:func:`._collate.collate`): identical requests are
    scored once; a group (one prompt) shares its encoder output; a failing batch, or a
    failing encoder, sends its targets to one full forward each.
    """
    import torch

    keys = [r.key for r in requests]
    encoded = tokenise(lm, requests)
    rows = [Row(i, enc) for i, enc in enumerate(encoded) if isinstance(enc, Seq2SeqEncoding)]
    batches = Batches[Seq2SeqEncoding, TargetScore](
        "padded decoder batches",
        batch_size,
        FORWARD_COST,
        length=lambda enc, group: len(enc.labels),
        run=lambda group, batch: _run_batch(lm, keys, batch, group.shared()),
    )
    with torch.inference_mode():
        scores = collate(
            rows,
            identity=lambda enc: (enc.source, enc.labels),
            group_key=lambda row: row.enc.source,
            start=lambda encodings: _encode(lm, encodings[0].source),
            strategies=[batches],
            one=lambda row: _plain_one(lm, keys[row.index], row.enc),
            failed=lambda row, error: TargetScore.failed(
                keys[row.index], error, truncated=row.enc.truncated
            ),
            copy=lambda score, index: replace(score, key=keys[index]),
        )
    return finish(keys, encoded, scores)


def _encode(lm: Seq2SeqModel, source: tuple[int, ...]) -> Any:
    """The encoder's last hidden state for ``source`` (a group's shared state)."""
    import torch

    ids = torch.tensor([source], dtype=torch.long, device=lm.device)
    return lm.model.get_encoder()(
        input_ids=ids, attention_mask=torch.ones_like(ids)
    ).last_hidden_state


def _run_batch(
    lm: Seq2SeqModel,
    keys: Sequence[Hashable],
    batch: Sequence[Row[Seq2SeqEncoding]],
    encoder_hidden: Any,
) -> list[TargetScore]:
    """One decoder forward over ``batch``'s targets, right-padded, against the shared
    encoder output; the log-probability of each label is gathered at its position."""
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    n = len(batch)
    width = max(len(row.enc.labels) for row in batch)
    decoder_input = torch.full((n, width), lm.pad_id, dtype=torch.long)
    decoder_mask = torch.zeros((n, width), dtype=torch.long)
    row_index: list[int] = []
    col_index: list[int] = []
    targets: list[int] = []
    for b, row in enumerate(batch):
        length = len(row.enc.labels)
        decoder_input[b, :length] = torch.tensor([lm.decoder_start_id, *row.enc.labels[:-1]])
        decoder_mask[b, :length] = 1
        row_index.extend([b] * length)
        col_index.extend(range(length))
        targets.extend(row.enc.labels)
    hidden = encoder_hidden.expand(n, -1, -1)
    logits = lm.model(
        encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
        attention_mask=torch.ones(hidden.shape[:2], dtype=torch.long, device=lm.device),
        decoder_input_ids=decoder_input.to(lm.device),
        decoder_attention_mask=decoder_mask.to(lm.device),
    ).logits
    picked_logits = logits[
        torch.tensor(row_index, device=lm.device), torch.tensor(col_index, device=lm.device)
    ]
    logprobs = torch.log_softmax(picked_logits.float(), dim=-1)
    picked = logprobs.gather(1, torch.tensor(targets, device=lm.device).unsqueeze(1)).squeeze(1)
    flat: list[float] = picked.tolist()
    scores: list[TargetScore] = []
    start = 0
    for row in batch:
        count = len(row.enc.labels)
        scores.append(
            TargetScore.from_logprobs(
                keys[row.index], flat[start : start + count], truncated=row.enc.truncated
            )
        )
        start += count
    return scores
