"""Hugging Face language models: target log-probabilities for GPTScore.

:class:`HFLanguageModel` wraps any causal LM (``AutoModelForCausalLM``) or
encoder-decoder (``AutoModelForSeq2SeqLM``), given as a hub id, a local directory, or a
``.gguf`` file. torch and transformers are imported only when a model is loaded, so
importing this module is cheap.

A model loads once per process: :func:`load` keeps a cache keyed by the model, the
device and the dtype, and every :class:`HFLanguageModel` over the same triple shares
the weights.

``score_targets`` is the fast path (shared prompt prefix computed once);
``score_targets_plain`` mirrors the GPTScore reference code (one full forward per
request). Both give the same numbers to float rounding; the tests hold them to 1e-4.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import scoring.lm._causal as _causal
import scoring.lm._doc_packs as _doc_packs
import scoring.lm._seq2seq as _seq2seq
import scoring.lm._tree_attention as _tree_attention
import scoring.lm.precision as _precision
from scoring.lm._causal_encoding import CausalModel
from scoring.lm._hf_rating import RatingMixin
from scoring.lm._util import sane_limit
from scoring.lm.base import TargetRequest, TargetScore

logger = logging.getLogger(__name__)

# Config fields that make a model's logits differ from lm_head(last hidden state):
# soft-capping (Gemma 2), logit scaling (Cohere, Granite, muP-style heads). For these the
# fast path takes the model's own logits instead of projecting hidden states itself.
_HEAD_TRANSFORMS = (
    "final_logit_softcapping",
    "logit_softcapping",
    "logit_scale",
    "logits_scaling",
    "logit_multiplier",
    "lm_head_multiplier",
    "output_multiplier_scale",
    "mup_width_multiplier",
    "scale_emb",
    "dim_model_base",
)
_CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_seq_len")


@dataclass(frozen=True)
class LoadedModel:
    """A model and tokenizer in memory, with what scoring needs to know about them."""

    name: str
    model: Any
    tokenizer: Any
    device: str
    dtype: str
    is_seq2seq: bool
    context_limit: int | None
    load_seconds: float
    causal: CausalModel | None = None
    seq2seq: _seq2seq.Seq2SeqModel | None = None


_CACHE: dict[tuple[str, str, str], LoadedModel] = {}
_LOCK = threading.Lock()


def pick_device(device: str | None = None, dtype: str | None = None) -> tuple[str, str]:
    """``(device, dtype)``: CUDA when present, else the CPU; ``dtype`` defaults to float32
    (the ``exact`` precision; :func:`load` chooses by the run's precision policy)."""
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        dtype = "float32"
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, not {dtype!r}")
    return device, dtype


def choose_precision(
    name: str, gguf_file: str | None, device: str | None, dtype: str | None, policy: str
) -> tuple[str, str, str]:
    """``(device, dtype, precision)`` for loading ``name``: an explicit ``dtype`` wins
    (float32 is ``exact``, anything else ``fast``); otherwise the policy decides
    (:mod:`scoring.lm.precision`), counting the model's parameters from its
    configuration alone when ``auto`` needs the size (on a GPU)."""
    import torch

    _precision.resolve(policy, "cpu", None)  # an unknown policy is an error either way
    device, _ = pick_device(device, dtype)
    if dtype is not None:
        return device, dtype, "exact" if dtype == "float32" else "fast"
    parameters = None
    if policy == "auto" and device.startswith("cuda"):
        from transformers import AutoConfig

        extra: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        parameters = _precision.count_parameters(AutoConfig.from_pretrained(name, **extra))
    chosen = _precision.resolve(policy, device, parameters)
    bf16 = device.startswith("cuda") and torch.cuda.is_bf16_supported()
    dtype = _precision.dtype_for(chosen, device, bf16)
    return device, dtype, "exact" if dtype == "float32" else "fast"  # fast on a CPU is float32


def resolve(model: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``(name_or_dir, gguf_file)`` for ``from_pretrained``: a hub id, a directory, or a GGUF file."""
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ValueError(
                f"{path} is a file but not a .gguf model; give a directory or a .gguf file"
            )
        return str(path.resolve().parent), path.name
    if path.is_dir():
        return str(path.resolve()), None
    if path.suffix.lower() == ".gguf" or path.is_absolute() or text.startswith((".", "~")):
        raise FileNotFoundError(f"no model at {path}")
    return text, None  # a hub id


def load(
    model: str | os.PathLike[str],
    *,
    device: str | None = None,
    dtype: str | None = None,
    precision: str = "auto",
) -> LoadedModel:
    """Load ``model`` once per process (cached by model, device and dtype)."""
    name, gguf_file = resolve(model)
    device, dtype, chosen = choose_precision(name, gguf_file, device, dtype, precision)
    if chosen == "exact":
        _precision.use_exact_matmul()
    key = (f"{name}::{gguf_file or ''}", device, dtype)
    with _LOCK:
        loaded = _CACHE.get(key)
        if loaded is None:
            loaded = _load(name, gguf_file, device, dtype)
            _CACHE[key] = loaded
    return loaded


def clear_cache() -> None:
    """Forget every loaded model (tests; freeing memory)."""
    with _LOCK:
        _CACHE.clear()


def _dtype_kwargs(dtype: Any) -> dict[str, Any]:
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    # ``dtype`` replaced ``torch_dtype`` in transformers 4.56.
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


def _load(name: str, gguf_file: str | None, device: str, dtype: str) -> LoadedModel:
    import torch
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
    )

    started = time.perf_counter()
    extra: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    config = AutoConfig.from_pretrained(name, **extra)
    tokenizer = AutoTokenizer.from_pretrained(name, **extra)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{name}: a fast tokenizer (with offsets) is needed, got {type(tokenizer).__name__}"
        )
    is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    auto: Any = AutoModelForSeq2SeqLM if is_seq2seq else AutoModelForCausalLM
    torch_dtype = getattr(torch, dtype)
    model = auto.from_pretrained(name, config=config, **_dtype_kwargs(torch_dtype), **extra)
    model.to(device)
    model.eval()
    pad_id = _pad_id(tokenizer, config)
    limit = _context_limit(config, tokenizer)
    causal = seq2seq = None
    if is_seq2seq:
        start = _first_id(
            getattr(config, "decoder_start_token_id", None),
            getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None),
        )
        if start is None:
            raise ValueError(f"{name}: the config names no decoder_start_token_id")
        seq2seq = _seq2seq.Seq2SeqModel(model, tokenizer, device, limit, pad_id, start)
    else:
        causal = causal_model(model, tokenizer, device)
    seconds = time.perf_counter() - started
    logger.info(
        "loaded %s%s on %s/%s in %.1f s",
        name,
        f"/{gguf_file}" if gguf_file else "",
        device,
        dtype,
        seconds,
    )
    return LoadedModel(
        name=f"{name}/{gguf_file}" if gguf_file else name,
        model=model,
        tokenizer=tokenizer,
        device=device,
        dtype=dtype,
        is_seq2seq=is_seq2seq,
        context_limit=limit,
        load_seconds=seconds,
        causal=causal,
        seq2seq=seq2seq,
    )


def causal_model(
    model: Any, tokenizer: Any, device: str, tree_rows: int | None = None
) -> CausalModel:
    """What the causal scoring paths need to know about a loaded decoder-only ``model``
    (checked on probes: whether its logits are a plain projection, whether a prefix
    cache can be reused). Also for models built in memory (bench/gpu_speed.py).

    ``tree_rows`` (default: the device's, :func:`._tree_attention.default_rows`) above 0
    switches an ``sdpa`` model to the blocked tree attention; a model on another
    attention implementation keeps it and gets 0."""
    config = model.config
    prefix_cache = _full_attention_only(config)
    rows = _tree_attention.default_rows(device) if tree_rows is None else tree_rows
    # Only models that can run tree packs (every layer attends to the whole past) switch.
    if rows > 0 and not (prefix_cache and _tree_attention.install(model)):
        rows = 0
    return CausalModel(
        model=model,
        tokenizer=tokenizer,
        device=device,
        context_limit=_context_limit(config, tokenizer),
        pad_id=_pad_id(tokenizer, config),
        context_token=_first_id(tokenizer.bos_token_id, tokenizer.eos_token_id),
        project_at_targets=_head_is_plain(model, config),
        prefix_cache=prefix_cache,
        tree_rows=rows,
    )


def _pad_id(tokenizer: Any, config: Any) -> int:
    """The id that pads a batch: the tokenizer's pad, else its end of sequence, else the
    configuration's pad, else 0."""
    return _first_id(tokenizer.pad_token_id, tokenizer.eos_token_id, config.pad_token_id) or 0


def _first_id(*candidates: object) -> int | None:
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if isinstance(value, list | tuple) and value and isinstance(value[0], int):
            return int(value[0])
    return None


def _context_limit(config: Any, tokenizer: Any) -> int | None:
    """The model's context length: config's position limit and the tokenizer's, if sane.

    ``tokenizer.model_max_length`` is often a sentinel (``int(1e30)``) and some configs
    carry huge placeholders; both are ignored. T5 has relative positions and no config
    limit, so its tokenizer's limit (512) applies.
    """
    text_config = (
        config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    )
    found = [sane_limit(getattr(text_config, field, None)) for field in _CONTEXT_FIELDS]
    from_config = next((value for value in found if value is not None), None)
    from_tokenizer = sane_limit(getattr(tokenizer, "model_max_length", None))
    limits = [value for value in (from_config, from_tokenizer) if value is not None]
    return min(limits) if limits else None


def _full_attention_only(config: Any) -> bool:
    """True when every layer attends to the whole past, so a prefix cache can be reused."""
    text_config = (
        config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    )
    layer_types = getattr(text_config, "layer_types", None)
    if layer_types is not None:
        return all(kind == "full_attention" for kind in layer_types)
    if getattr(text_config, "sliding_window", None) is not None and getattr(
        text_config, "use_sliding_window", True
    ):
        return False
    return getattr(text_config, "attention_chunk_size", None) is None


def _head_is_plain(model: Any, config: Any) -> bool:
    """True when the model's logits are exactly ``lm_head(base_model(...).last_hidden_state)``.

    Then the fast path may project only the target positions. Checked two ways: no
    config field that transforms logits is set, and on a short probe the model's logits
    equal the projection of the base model's last hidden state. The base model applies
    the final norm (LlamaModel.norm, GPT2Model.ln_f); if the head applied it again, or
    the base model left it out, the probe would differ.
    """
    import torch

    text_config = (
        config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    )
    for field in _HEAD_TRANSFORMS:
        value = getattr(text_config, field, None)
        if value is not None and value is not False and value != 1:
            logger.info("%s=%r: the fast path uses the model's own logits", field, value)
            return False
    head = model.get_output_embeddings()
    base = getattr(model, "base_model", None)
    if head is None or base is None or base is model:
        return False
    vocab = int(getattr(text_config, "vocab_size", 0) or 0)
    if vocab < 2:
        return False
    device = next(model.parameters()).device
    probe = (torch.arange(16, device=device).unsqueeze(0) * 7919 + 11) % vocab
    with torch.inference_mode():
        full = model(input_ids=probe).logits.float()
        projected = head(base(input_ids=probe).last_hidden_state).float()
    scale = max(1.0, float(full.abs().max()))
    tolerance = (
        1e-5 if full.dtype == torch.float32 and projected.dtype == torch.float32 else 1e-2
    ) * scale
    same = full.shape == projected.shape and float((full - projected).abs().max()) <= tolerance
    if not same:
        logger.info("lm_head(base hidden state) differs from the model's logits; using full logits")
    return same


class HFLanguageModel(RatingMixin):
    """Target log-probabilities (GPTScore) and rating distributions (G-Eval, from
    :class:`RatingMixin`) from a Hugging Face model.

    ``model`` is a hub id, a local directory or a ``.gguf`` file. ``batch_size`` is the
    number of targets per forward. ``max_length`` caps the context (defaults to the
    model's own limit): longer prompts are cut on the left, and a target that does not
    fit on its own is an error result. ``device`` and ``dtype`` default to CUDA with
    bfloat16 (float16 where unsupported) when a GPU is present, else CPU float32.
    ``doc_pack_tokens`` is the token budget of a forward that packs several documents
    together (:mod:`scoring.lm._doc_packs`; it applies when one call hands over several
    documents): ``None`` picks the device's default (4,096 on CUDA; 0 on the CPU, where
    documents run one at a time against their prefix cache), 0 turns packing off.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        batch_size: int = 8,
        max_length: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        precision: str = "auto",
        doc_pack_tokens: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if max_length is not None and max_length < 2:
            raise ValueError("max_length must be at least 2")
        if doc_pack_tokens is not None and doc_pack_tokens < 0:
            raise ValueError("doc_pack_tokens must be 0 (off) or more")
        self.loaded = load(model, device=device, dtype=dtype, precision=precision)
        self.policy = precision
        self.batch_size = batch_size
        limit = self.loaded.context_limit
        if max_length is not None:
            limit = max_length if limit is None else min(limit, max_length)
        self.max_length = limit
        if self.loaded.causal is not None:
            budget = doc_pack_tokens
            if budget is None:
                budget = _doc_packs.default_budget(self.loaded.device)
            self._causal: CausalModel | None = replace(
                self.loaded.causal, context_limit=limit, doc_pack_tokens=budget
            )
            self._seq2seq: _seq2seq.Seq2SeqModel | None = None
        else:
            assert self.loaded.seq2seq is not None
            self._causal = None
            self._seq2seq = replace(self.loaded.seq2seq, context_limit=limit)

    @property
    def is_seq2seq(self) -> bool:
        return self.loaded.is_seq2seq

    @property
    def precision(self) -> str:
        """The precision scored in: ``exact`` (float32) or ``fast`` (bfloat16/float16)."""
        return "exact" if self.loaded.dtype == "float32" else "fast"

    def provenance(self) -> dict[str, Any]:
        """How this model scores, for a run's record: device, dtype, the precision policy
        asked for and the one used, the attention implementation, whether tree attention
        passed its probe, the per-forward budgets and attention blocks, library and CUDA
        versions."""
        lm = self.loaded
        found = {
            **_precision.environment(lm.device),
            "dtype": lm.dtype,
            "precision": self.precision,
            "precision_asked": self.policy,
            "attention": _tree_attention.kernel(lm.model),
            "parameters": sum(p.numel() for p in lm.model.parameters()),
            "batch_size": self.batch_size,
            "context_limit": self.max_length,
        }
        if self._causal is not None:
            found["tree_attention"] = _causal.tree_attention_works(self._causal)
            found["pack_tokens"] = _causal.pack_budget(self._causal)
            found["doc_pack_tokens"] = self._causal.doc_pack_tokens
            found["tree_rows"] = _causal.tree_rows_used(self._causal)
        return found

    def score_targets(self, requests: Sequence[TargetRequest]) -> list[TargetScore]:
        """Fast path: one result per request, in order; failures carry ``error``."""
        if not requests:
            return []
        if self._causal is not None:
            return _causal.score_fast(self._causal, requests, self.batch_size)
        assert self._seq2seq is not None
        return _seq2seq.score_fast(self._seq2seq, requests, self.batch_size)

    def score_targets_plain(self, requests: Sequence[TargetRequest]) -> list[TargetScore]:
        """Reference path: one full forward per request with full-vocabulary logits."""
        if not requests:
            return []
        if self._causal is not None:
            return _causal.score_plain(self._causal, requests)
        assert self._seq2seq is not None
        return _seq2seq.score_plain(self._seq2seq, requests)
