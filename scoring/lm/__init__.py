"""Language models for the scoring engine: per-token log-probabilities of target texts.

Importing this package is cheap: torch and transformers load only with a model
(:class:`scoring.lm.hf.HFLanguageModel`).
"""

from scoring.lm.base import LanguageModel, Reduction, TargetRequest, TargetScore
from scoring.lm.fake import FakeLanguageModel
from scoring.lm.hf import HFLanguageModel
from scoring.lm.store import ModelNotInstalled, convert_gguf, converted_copy, find_default_gguf

__all__ = [
    "FakeLanguageModel",
    "HFLanguageModel",
    "LanguageModel",
    "ModelNotInstalled",
    "Reduction",
    "TargetRequest",
    "TargetScore",
    "convert_gguf",
    "converted_copy",
    "find_default_gguf",
]
