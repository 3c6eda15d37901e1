"""Target log-probabilities from an encoder-decoder model (T5, FLAN-T5, BART).

The prompt goes to the encoder and the target is scored by the decoder, as GPTScore
does with FLAN-T5. The target is encoded on its own with the tokenizer's special
tokens, so for T5 its closing ``</s>`` is one of the scored tokens (as in the
reference code, which scores the labels the tokenizer produces).

* :func:`score_plain`: one full forward per request (encoder and decoder);
* :func:`score_fast`: the encoder runs once per distinct prompt, and its output is
  reused for all of that prompt's targets, decoded in right-padded batches.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.lm._util import describe, finish, plan_batches
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
    """Encoder once per distinct prompt; the decoder scores its targets in batches."""
    import torch

    keys = [r.key for r in requests]
    encoded = tokenise(lm, requests)
    groups: dict[tuple[int, ...], list[tuple[int, Seq2SeqEncoding]]] = {}
    for i, enc in enumerate(encoded):
        if isinstance(enc, Seq2SeqEncoding):
            groups.setdefault(enc.source, []).append((i, enc))
    scores: dict[int, TargetScore] = {}
    with torch.inference_mode():
        for source, rows in groups.items():
            _score_group(lm, keys, source, rows, batch_size, scores)
    return finish(keys, encoded, scores)


def _score_group(
    lm: Seq2SeqModel,
    keys: Sequence[Hashable],
    source: tuple[int, ...],
    rows: list[tuple[int, Seq2SeqEncoding]],
    batch_size: int,
    scores: dict[int, TargetScore],
) -> None:
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    try:
        ids = torch.tensor([source], dtype=torch.long, device=lm.device)
        encoder_hidden = (
            lm.model.get_encoder()(input_ids=ids, attention_mask=torch.ones_like(ids))
        ).last_hidden_state
    except Exception:
        logger.exception("encoder forward failed; scoring the group one by one")
        for i, enc in rows:
            scores[i] = _plain_one(lm, keys[i], enc)
        return
    rows = sorted(rows, key=lambda row: -len(row[1].labels))  # collate: longest first
    lengths = [len(enc.labels) for _, enc in rows]
    for indices in plan_batches(lengths, max(1, batch_size), FORWARD_COST):
        batch = [rows[k] for k in indices]
        try:
            n = len(batch)
            width = len(batch[0][1].labels)
            decoder_input = torch.full((n, width), lm.pad_id, dtype=torch.long)
            decoder_mask = torch.zeros((n, width), dtype=torch.long)
            row_index: list[int] = []
            col_index: list[int] = []
            targets: list[int] = []
            for b, (_, enc) in enumerate(batch):
                length = len(enc.labels)
                decoder_input[b, :length] = torch.tensor([lm.decoder_start_id, *enc.labels[:-1]])
                decoder_mask[b, :length] = 1
                row_index.extend([b] * length)
                col_index.extend(range(length))
                targets.extend(enc.labels)
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
            picked = logprobs.gather(
                1, torch.tensor(targets, device=lm.device).unsqueeze(1)
            ).squeeze(1)
            flat: list[float] = picked.tolist()
        except Exception:
            logger.exception("batched decoder forward failed; scoring its targets one by one")
            for i, enc in batch:
                scores[i] = _plain_one(lm, keys[i], enc)
            continue
        start = 0
        for i, enc in batch:
            scores[i] = TargetScore.from_logprobs(
                keys[i], flat[start : start + len(enc.labels)], truncated=enc.truncated
            )
            start += len(enc.labels)
