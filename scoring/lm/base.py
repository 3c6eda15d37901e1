"""What a language model gives the metrics: per-token log-probabilities of a target text.

GPTScore (Fu et al. 2023) scores an output ``h`` as the mean over its tokens of
``log p(h_t | h_<t, prompt)``. A :class:`LanguageModel` takes :class:`TargetRequest`
items (a key, the prompt, the target text) and returns one :class:`TargetScore` per
request, in the same order. A request that cannot be scored gets a result with
``error`` set; it is never dropped and never scored 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable


class Reduction(StrEnum):
    """How token log-probabilities become one number; stored with a run."""

    MEAN = "mean"
    SUM = "sum"


@dataclass(frozen=True, slots=True)
class TargetRequest:
    """Score ``target`` as the continuation of ``prompt``.

    The model sees exactly ``prompt + target``: a separator (a space, a newline) belongs
    at the end of the prompt or the start of the target, and is not added here.
    ``key`` (usually the output id) is handed back unchanged on the result.
    """

    key: Hashable
    prompt: str
    target: str


@dataclass(frozen=True, slots=True)
class TargetScore:
    """Log-probabilities of one target's tokens, or the reason there are none.

    ``token_logprobs`` holds natural-log probabilities, one per target token, first token
    included. ``mean`` and ``sum`` reduce them; all three are empty/``None`` when
    ``error`` is set. ``truncated`` says the prompt was cut on the left to fit the
    model's context (the target never is).
    """

    key: Hashable
    token_logprobs: tuple[float, ...] = ()
    mean: float | None = None
    sum: float | None = None
    n_tokens: int = 0
    truncated: bool = False
    error: str | None = None

    @classmethod
    def from_logprobs(
        cls, key: Hashable, logprobs: Sequence[float], *, truncated: bool = False
    ) -> TargetScore:
        """A successful result; an empty or non-finite list becomes an error result."""
        values = tuple(float(v) for v in logprobs)
        if not values:
            return cls.failed(key, "the target has no tokens to score", truncated=truncated)
        if not all(math.isfinite(v) for v in values):
            return cls.failed(
                key, "the model gave a non-finite log-probability", truncated=truncated
            )
        total = math.fsum(values)
        return cls(
            key=key,
            token_logprobs=values,
            mean=total / len(values),
            sum=total,
            n_tokens=len(values),
            truncated=truncated,
        )

    @classmethod
    def failed(cls, key: Hashable, error: str, *, truncated: bool = False) -> TargetScore:
        """A result that carries ``error`` instead of numbers."""
        return cls(key=key, truncated=truncated, error=error)

    @property
    def ok(self) -> bool:
        """True when the target was scored."""
        return self.error is None

    def reduced(self, reduction: Reduction | str) -> float | None:
        """The score under ``reduction`` (``"mean"`` or ``"sum"``); ``None`` on error."""
        return self.mean if Reduction(reduction) is Reduction.MEAN else self.sum


@runtime_checkable
class LanguageModel(Protocol):
    """Anything that scores targets given prompts: lists in, aligned lists out."""

    def score_targets(self, requests: Sequence[TargetRequest]) -> list[TargetScore]:
        """One result per request, in request order; failures carry ``error``."""
        ...
