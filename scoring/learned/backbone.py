"""A pretrained backbone as a feature extractor: one vector per input text.

Decoder-only models give the hidden state of the last non-padding token; encoders (and
the encoder of an encoder-decoder) give the mean of their token states (``mean``) or the
first token's (``first``). Which one was used is recorded as :attr:`Backbone.pooling`.

:meth:`Backbone.features` is the frozen path (head mode): inputs are grouped by their
prefix (instruction and context, shared by a document's outputs); for a decoder the
prefix runs once and its key/value cache is reused for every answer, so a 400-word
source is computed once per document, not once per output. :meth:`Backbone.encode` is
the plain path, with gradients when asked (full fine-tuning); both give the same numbers
to float rounding.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Sequence
from typing import Any

from scoring.learned.inputs import Formatted

logger = logging.getLogger(__name__)
POOLINGS = ("last", "mean", "first")
_DECODER_SUFFIXES = ("ForCausalLM", "LMHeadModel")
DEFAULT_MAX_LENGTH = 1024  # tokens per input; the context is shortened to fit


class BackboneError(RuntimeError):
    """The backbone cannot be loaded or used; the message says why."""


def _keep_layers(model: Any, layer: int | None) -> tuple[int, int]:
    """(blocks the model has, blocks kept): cut the model's list of blocks at ``layer``."""
    from torch import nn

    owners = [model, getattr(model, "encoder", None)]
    for owner in owners:
        for name in ("layers", "h", "layer", "block"):
            blocks = getattr(owner, name, None) if owner is not None else None
            if isinstance(blocks, nn.ModuleList):
                total = len(blocks)
                if layer is None or layer == total:
                    return total, total
                if not 1 <= layer <= total:
                    raise BackboneError(f"layer must be between 1 and {total}, not {layer}")
                setattr(owner, name, blocks[:layer])
                return total, layer
    if layer is not None:
        raise BackboneError("this backbone's blocks were not found, so it cannot be cut at a layer")
    return 0, 0


class Backbone:
    """A Hugging Face model without its output head, on ``device`` in float32."""

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        pooling: str | None = None,
        max_length: int | None = None,
        device: str | None = None,
        batch_size: int = 16,
        layer: int | None = None,
    ) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.name = os.fspath(location)
        try:
            config = AutoConfig.from_pretrained(self.name)
            self.tokenizer = AutoTokenizer.from_pretrained(self.name)
            model = AutoModel.from_pretrained(self.name)
        except Exception as exc:  # OSError, ValueError, a hub id offline…
            raise BackboneError(f"the backbone {self.name!r} cannot be loaded: {exc}") from exc
        architectures = list(getattr(config, "architectures", None) or [])
        self.is_decoder = not getattr(config, "is_encoder_decoder", False) and any(
            a.endswith(_DECODER_SUFFIXES) for a in architectures
        )
        if getattr(config, "is_encoder_decoder", False):
            model = model.get_encoder()
        self.n_layers, self.layer = _keep_layers(model, layer)
        self.pooling = pooling or ("last" if self.is_decoder else "mean")
        if self.pooling not in POOLINGS or (self.pooling == "last") != self.is_decoder:
            raise BackboneError(
                f"pooling {self.pooling!r} does not suit {self.name!r} "
                f"({'decoder-only: last' if self.is_decoder else 'encoder: mean or first'})"
            )
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).float().eval()
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.pad_id = int(pad)
        limits = [
            v
            for v in (
                getattr(config, "max_position_embeddings", None),
                getattr(config, "n_positions", None),
                getattr(self.tokenizer, "model_max_length", None),
                max_length or DEFAULT_MAX_LENGTH,
            )
            if isinstance(v, int) and 1 < v < 1_000_000
        ]
        self.max_length = min(limits)
        self.dim = int(
            getattr(config, "hidden_size", 0)
            or getattr(config, "n_embd", 0)
            or getattr(config, "d_model", 0)
        )
        self.batch_size = batch_size

    def count(self, text: str) -> int:
        """Tokens of ``text`` as the backbone reads it (special tokens included)."""
        return len(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def _ids(self, text: str) -> list[int]:
        ids = list(self.tokenizer(text, add_special_tokens=True)["input_ids"])
        if len(ids) > self.max_length:  # only an answer too long on its own: keep its end
            ids = ids[:1] + ids[len(ids) - self.max_length + 1 :]
        return ids

    def encode(self, texts: Sequence[str], *, grad: bool = False) -> Any:
        """Pooled vectors (len(texts), dim) from one padded forward per batch."""
        import torch

        rows = []
        context = torch.enable_grad() if grad else torch.inference_mode()
        with context:
            for start in range(0, len(texts), self.batch_size):
                batch = [self._ids(t) for t in texts[start : start + self.batch_size]]
                width = max(len(ids) for ids in batch)
                input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for b, ids in enumerate(batch):
                    input_ids[b, : len(ids)] = torch.tensor(ids)
                    mask[b, : len(ids)] = 1
                input_ids, mask = input_ids.to(self.device), mask.to(self.device)
                hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
                rows.append(self._pool(hidden, mask))
        return torch.cat(rows).float()

    def _pool(self, hidden: Any, mask: Any) -> Any:
        import torch

        if self.pooling == "first":
            return hidden[:, 0]
        if self.pooling == "mean":
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
        last = mask.sum(1) - 1
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]

    def features(self, inputs: Sequence[Formatted]) -> Any:
        """Frozen vectors (len(inputs), dim), in order; a decoder reuses each prefix's cache."""
        import torch

        if not self.is_decoder:
            return self.encode([f.text for f in inputs])
        out: list[Any] = [None] * len(inputs)
        groups: dict[str, list[int]] = {}
        for i, item in enumerate(inputs):
            groups.setdefault(item.prefix, []).append(i)
        with torch.inference_mode():
            for members in groups.values():
                encoded = [self._ids(inputs[i].text) for i in members]
                vectors = self._prefix_group(encoded)
                for i, vector in zip(members, vectors, strict=True):
                    out[i] = vector
        return torch.stack(out).float()

    def _prefix_group(self, encoded: list[list[int]]) -> list[Any]:
        import torch
        from transformers import DynamicCache

        shared = min(len(ids) for ids in encoded) - 1  # each row keeps at least one token
        first = encoded[0]
        n = 0
        while n < shared and all(ids[n] == first[n] for ids in encoded):
            n += 1
        cache = None
        if n > 0:
            prefix = torch.tensor([first[:n]], dtype=torch.long, device=self.device)
            cache = self.model(
                input_ids=prefix, past_key_values=DynamicCache(), use_cache=True
            ).past_key_values
        vectors: list[Any] = []
        for start in range(0, len(encoded), self.batch_size):
            batch = [ids[n:] for ids in encoded[start : start + self.batch_size]]
            width = max(len(ids) for ids in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), n + width), dtype=torch.long)
            mask[:, :n] = 1
            for b, ids in enumerate(batch):
                input_ids[b, : len(ids)] = torch.tensor(ids)
                mask[b, n : n + len(ids)] = 1
            past = None
            if cache is not None:
                past = copy.deepcopy(cache)  # the forward appends to the cache it is given
                if len(batch) > 1:
                    past.batch_repeat_interleave(len(batch))
            positions = torch.arange(n, n + width, device=self.device).expand(len(batch), -1)
            hidden = self.model(
                input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                position_ids=positions, past_key_values=past, use_cache=past is not None,
            ).last_hidden_state  # fmt: skip
            for b, ids in enumerate(batch):
                vectors.append(hidden[b, len(ids) - 1])
        return vectors
