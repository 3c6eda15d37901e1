"""The precision a language-model run scores in, chosen per run and recorded with it.

* ``exact``: float32 with TF32 matrix products off. The numbers equal the CPU path's to
  within 1e-4 in mean log-probability on any device.
* ``fast``: bfloat16 on a GPU that supports it (float16 on older ones). On the CPU it
  stays float32: the CPU has no low-precision path that is faster for these models.
* ``auto`` (the default): ``exact`` on the CPU and for models under
  :data:`FAST_FROM_PARAMETERS` parameters (a GPU is not compute-bound on them, so low
  precision buys little and moves the scores: SmolLM2-135M in bfloat16 moved mean
  log-probabilities by up to 0.033 on an H100); ``fast`` for larger models on a GPU.

Nothing here imports torch at module level.
"""

from __future__ import annotations

from typing import Any

PRECISIONS = ("auto", "exact", "fast")
FAST_FROM_PARAMETERS = 1_000_000_000


def resolve(precision: str, device: str, parameters: int | None) -> str:
    """``exact`` or ``fast``: what ``precision`` means for a model of ``parameters``
    parameters (None: unknown, counted as small) on ``device``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision != "auto":
        return precision
    on_gpu = device.startswith("cuda")
    return "fast" if on_gpu and (parameters or 0) >= FAST_FROM_PARAMETERS else "exact"


def dtype_for(precision: str, device: str, bf16_supported: bool = True) -> str:
    """The torch dtype name a resolved precision loads the model in."""
    if precision == "exact" or not device.startswith("cuda"):
        return "float32"
    return "bfloat16" if bf16_supported else "float16"


def count_parameters(config: Any) -> int | None:
    """The parameter count of a model built from ``config``, without allocating it
    (the model is built on torch's ``meta`` device). None when it cannot be built."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    auto: Any = (
        AutoModelForSeq2SeqLM
        if getattr(config, "is_encoder_decoder", False)
        else AutoModelForCausalLM
    )
    try:
        with torch.device("meta"):
            model = auto.from_config(config)
    except Exception:  # an architecture transformers cannot build from its config alone
        return None
    return int(sum(p.numel() for p in model.parameters()))


def use_exact_matmul() -> None:
    """TF32 off for float32 matrix products and convolutions (the ``exact`` policy):
    PyTorch's default leaves cuDNN's TF32 on, which changes float32 results on Ampere
    and newer GPUs."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def environment(device: str) -> dict[str, Any]:
    """The software and hardware a run scored on: torch, CUDA and transformers versions,
    the GPU's name, whether float32 matrix products may use TF32."""
    import torch
    import transformers

    found: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.version.cuda,
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return found
