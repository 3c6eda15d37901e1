"""A pretrained backbone as a feature extractor: one vector per input text.

Decoder-only models give the hidden state of the last non-padding token (``last``, the
paper's choice) or, by default, that state joined with the mean of the answer's own token
states (``last+answer``: the last token of a small decoder summarises the answer's end more
than the answer; the mean over its tokens carries the rest, measured in
``bench/learned_metric.py``). Encoders (and the encoder of an encoder-decoder) give the
mean of their token states (``mean``) or the first token's (``first``). Which one was used
is recorded as :attr:`Backbone.pooling`; :attr:`Backbone.feature_dim` is the vectors' size.

:meth:`Backbone.features` is the frozen path (head mode): inputs are grouped by their
prefix (instruction and context, shared by a document's outputs); for a decoder the
prefix runs once and its key/value cache is reused for every answer, so a 400-word
source is computed once per document, not once per output. :meth:`Backbone.encode` is
the plain path, with gradients when asked (full fine-tuning); both give the same numbers
to float rounding.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoring.learned.inputs import Formatted
from scoring.lm._util import cache_kwargs, returned_cache

logger = logging.getLogger(__name__)
POOLINGS = ("last+answer", "last", "mean", "first")
DECODER_POOLINGS = ("last+answer", "last")
_DECODER_SUFFIXES = ("ForCausalLM", "LMHeadModel")
DEFAULT_MAX_LENGTH = 1024  # tokens per input; the context is shortened to fit


class BackboneError(RuntimeError):
    """The backbone cannot be loaded or used; the message says why."""


class LayerError(BackboneError):
    """The asked layer does not exist in the backbone."""


@dataclass(frozen=True)
class BackboneInfo:
    """What a job freezes about its backbone, known from its configuration files alone."""

    name: str
    is_decoder: bool
    pooling: str
    dim: int
    feature_dim: int
    max_length: int
    n_layers: int  # blocks the model has (0: not known)
    layer: int  # blocks used

    def differences(self, other: BackboneInfo) -> list[str]:
        """What two descriptions disagree on (the blocks used only where both know the
        count: a configuration may not state it, and a model's blocks may not be found)."""
        fields = ["is_decoder", "pooling", "dim", "feature_dim", "max_length"]
        if self.n_layers and other.n_layers:
            fields.append("layer")
        return [
            f"{f} {getattr(self, f)!r} (planned) vs {getattr(other, f)!r} (loaded)"
            for f in fields
            if getattr(self, f) != getattr(other, f)
        ]


def _setting(config: Any, *names: str) -> Any:
    """The first of ``names`` set in a model configuration: a transformers config object
    or the plain ``config.json`` dictionary."""
    for name in names:
        value = config.get(name) if isinstance(config, dict) else getattr(config, name, None)
        if value is not None:
            return value
    return None


def _is_decoder(config: Any) -> bool:
    architectures = list(_setting(config, "architectures") or [])
    return not _setting(config, "is_encoder_decoder") and any(
        a.endswith(_DECODER_SUFFIXES) for a in architectures
    )


def _pooling(name: str, pooling: str | None, is_decoder: bool) -> str:
    chosen = pooling or ("last+answer" if is_decoder else "mean")
    if chosen not in POOLINGS or (chosen in DECODER_POOLINGS) != is_decoder:
        kinds = "decoder-only: last+answer or last" if is_decoder else "encoder: mean or first"
        raise BackboneError(f"pooling {chosen!r} does not suit {name!r} ({kinds})")
    return chosen


def _max_length(config: Any, tokenizer_limit: Any, asked: int | None) -> int:
    limits = [
        v
        for v in (
            _setting(config, "max_position_embeddings"),
            _setting(config, "n_positions"),
            tokenizer_limit,
            asked or DEFAULT_MAX_LENGTH,
        )
        if isinstance(v, int) and 1 < v < 1_000_000
    ]
    return min(limits)


def _dim(config: Any) -> int:
    return int(_setting(config, "hidden_size", "n_embd", "d_model") or 0)


def _check_layer(layer: int | None, total: int) -> int:
    if layer is None or layer == total:
        return total
    if not 1 <= layer <= total:
        raise LayerError(f"layer must be between 1 and {total}, not {layer}")
    return layer


_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackboneError(f"the backbone {str(path.parent)!r} cannot be loaded: {exc}") from exc
    if not isinstance(loaded, dict):
        raise BackboneError(
            f"the backbone {str(path.parent)!r} cannot be loaded: {path.name} is not an object"
        )
    return loaded


def _configuration(name: str) -> tuple[Any, Any]:
    """(model configuration, the tokenizer's ``model_max_length``) without loading weights
    or the tokenizer: a local folder's JSON files as they are, a hub id through
    transformers (which may download the small files)."""
    folder = Path(name)
    if folder.exists():
        if not (folder / "config.json").is_file():
            raise BackboneError(f"the backbone {name!r} cannot be loaded: it has no config.json")
        if not any((folder / f).is_file() for f in _TOKENIZER_FILES):
            raise BackboneError(
                f"the backbone {name!r} cannot be loaded: it has no tokenizer files"
            )
        config = _read_json(folder / "config.json")
        tokenizer_config = folder / "tokenizer_config.json"
        limit = (
            _read_json(tokenizer_config).get("model_max_length")
            if tokenizer_config.is_file()
            else None
        )
        return config, limit
    try:
        from transformers import AutoConfig
        from transformers.utils.hub import cached_file

        config = AutoConfig.from_pretrained(name)
        found = cached_file(
            name, "tokenizer_config.json", _raise_exceptions_for_missing_entries=False
        )
    except Exception as exc:  # OSError, ValueError, a hub id offline…
        raise BackboneError(f"the backbone {name!r} cannot be loaded: {exc}") from exc
    limit = _read_json(Path(found)).get("model_max_length") if found else None
    return config, limit


def describe_backbone(
    location: str | os.PathLike[str],
    *,
    pooling: str | None = None,
    max_length: int | None = None,
    layer: int | None = None,
) -> BackboneInfo:
    """What :class:`Backbone` would be, from the configuration files only (milliseconds,
    where loading the weights takes seconds): a web request plans a job with it and the
    worker that loads the weights checks they agree. A folder without a configuration or
    tokenizer, an unsuited pooling and a layer the model does not have are refused here;
    weights that cannot be loaded fail the job when the worker loads them."""
    name = os.fspath(location)
    config, tokenizer_limit = _configuration(name)
    is_decoder = _is_decoder(config)
    if _setting(config, "is_encoder_decoder"):
        total = _setting(config, "num_layers", "encoder_layers", "num_hidden_layers")
    else:
        total = _setting(config, "num_hidden_layers", "n_layer", "num_layers")
    n_layers = int(total) if isinstance(total, int) else 0
    if n_layers:
        used = _check_layer(layer, n_layers)
    elif layer is not None:
        used = layer  # the count is not in the configuration: the worker checks the cut
    else:
        used = 0
    chosen = _pooling(name, pooling, is_decoder)
    dim = _dim(config)
    return BackboneInfo(
        name,
        is_decoder,
        chosen,
        dim,
        dim * 2 if chosen == "last+answer" else dim,
        _max_length(config, tokenizer_limit, max_length),
        n_layers,
        used,
    )


def _keep_layers(model: Any, layer: int | None) -> tuple[int, int]:
    """(blocks the model has, blocks kept): cut the model's list of blocks at ``layer``."""
    from torch import nn

    owners = [model, getattr(model, "encoder", None)]
    for owner in owners:
        for name in ("layers", "h", "layer", "block"):
            blocks = getattr(owner, name, None) if owner is not None else None
            if isinstance(blocks, nn.ModuleList):
                total = len(blocks)
                used = _check_layer(layer, total)
                if used != total:
                    setattr(owner, name, blocks[:used])
                return total, used
    if layer is not None:
        raise LayerError("this backbone's blocks were not found, so it cannot be cut at a layer")
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
        self.is_decoder = _is_decoder(config)
        if getattr(config, "is_encoder_decoder", False):
            model = model.get_encoder()
        self.n_layers, self.layer = _keep_layers(model, layer)
        self.pooling = _pooling(self.name, pooling, self.is_decoder)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).float().eval()
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.pad_id = int(pad)
        self.max_length = _max_length(
            config, getattr(self.tokenizer, "model_max_length", None), max_length
        )
        self.dim = _dim(config)
        self.feature_dim = self.dim * 2 if self.pooling == "last+answer" else self.dim
        self.batch_size = batch_size
        # a document's outputs share one prefix: tokenise it once, not once per output
        self._prefix_ids = functools.lru_cache(maxsize=256)(self._token_ids)

    @property
    def info(self) -> BackboneInfo:
        """The loaded backbone described as :func:`describe_backbone` describes it."""
        return BackboneInfo(
            self.name,
            self.is_decoder,
            self.pooling,
            self.dim,
            self.feature_dim,
            self.max_length,
            self.n_layers,
            self.layer,
        )

    def count(self, text: str) -> int:
        """Tokens of ``text`` as the backbone reads it (special tokens included)."""
        return len(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def _token_ids(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def _tokens(self, item: Formatted) -> tuple[list[int], int]:
        """The input's token ids and where its answer starts among them: the first token
        the text does not share with its prefix tokenised alone (so a merge across the
        boundary counts as answer)."""
        ids = list(self.tokenizer(item.text, add_special_tokens=True)["input_ids"])
        if len(ids) > self.max_length:  # only an answer too long on its own: keep its end
            return ids[:1] + ids[len(ids) - self.max_length + 1 :], 1
        if self.pooling != "last+answer":
            return ids, len(ids) - 1
        before = self._prefix_ids(item.prefix)
        start = 0
        for a, b in zip(before, ids, strict=False):
            if a != b:
                break
            start += 1
        return ids, min(start, len(ids) - 1)  # at least the last token is the answer's

    def encode(self, inputs: Sequence[Formatted | str], *, grad: bool = False) -> Any:
        """Pooled vectors (len(inputs), feature_dim) from one padded forward per batch; a
        plain string is an answer without instruction or context."""
        import torch

        items = [Formatted("", i, False) if isinstance(i, str) else i for i in inputs]
        rows = []
        context = torch.enable_grad() if grad else torch.inference_mode()
        with context:
            for start in range(0, len(items), self.batch_size):
                batch = [self._tokens(i) for i in items[start : start + self.batch_size]]
                width = max(len(ids) for ids, _ in batch)
                input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for b, (ids, _) in enumerate(batch):
                    input_ids[b, : len(ids)] = torch.tensor(ids)
                    mask[b, : len(ids)] = 1
                input_ids, mask = input_ids.to(self.device), mask.to(self.device)
                hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
                if self.is_decoder:
                    rows.append(
                        torch.stack(
                            [
                                self._decoder_vector(hidden[b], answer, len(ids))
                                for b, (ids, answer) in enumerate(batch)
                            ]
                        )
                    )
                else:
                    rows.append(self._pool(hidden, mask))
        return torch.cat(rows).float()

    def _pool(self, hidden: Any, mask: Any) -> Any:
        """An encoder's vectors: its first token's state or the mean of its token states."""
        if self.pooling == "first":
            return hidden[:, 0]
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)

    def _decoder_vector(self, states: Any, answer: int, end: int) -> Any:
        """One row's vector from its states (tokens × dim): the last real token's state,
        joined with the mean over the answer's tokens ``[answer, end)`` for ``last+answer``."""
        import torch

        last = states[end - 1]
        if self.pooling == "last":
            return last
        return torch.cat([last, states[answer:end].mean(0)])

    def features(self, inputs: Sequence[Formatted]) -> Any:
        """Frozen vectors (len(inputs), dim), in order; a decoder reuses each prefix's cache."""
        import torch

        if not self.is_decoder:
            return self.encode(inputs)
        out: list[Any] = [None] * len(inputs)
        groups: dict[str, list[int]] = {}
        for i, item in enumerate(inputs):
            groups.setdefault(item.prefix, []).append(i)
        with torch.inference_mode():
            for members in groups.values():
                vectors = self._prefix_group([self._tokens(inputs[i]) for i in members])
                for i, vector in zip(members, vectors, strict=True):
                    out[i] = vector
        return torch.stack(out).float()

    def _prefix_group(self, tokens: list[tuple[list[int], int]]) -> list[Any]:
        """Vectors of inputs sharing a prefix: the tokens they share before every answer
        run once, and each batch of answers runs on a copy of that key/value cache."""
        import torch
        from transformers import DynamicCache

        encoded = [ids for ids, _ in tokens]
        shared = min(answer for _, answer in tokens)  # never into an answer (≤ len − 1)
        first = encoded[0]
        n = 0
        while n < shared and all(ids[n] == first[n] for ids in encoded):
            n += 1
        cache = None
        if n > 0:
            prefix = torch.tensor([first[:n]], dtype=torch.long, device=self.device)
            cache = returned_cache(
                self.model(
                    input_ids=prefix, **cache_kwargs(self.model, DynamicCache()), use_cache=True
                )
            )
        vectors: list[Any] = []
        for start in range(0, len(encoded), self.batch_size):
            rows = tokens[start : start + self.batch_size]
            batch = [ids[n:] for ids, _ in rows]
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
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=positions,
                **cache_kwargs(self.model, past),
                use_cache=past is not None,
            ).last_hidden_state
            for b, (ids, answer) in enumerate(rows):
                vectors.append(self._decoder_vector(hidden[b], answer - n, len(ids) - n))
        return vectors
