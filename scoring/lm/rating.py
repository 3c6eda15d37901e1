"""What a language model gives G-Eval: a probability distribution over rating labels.

G-Eval (Liu et al. 2023) asks the model to fill in a form ("- Coherence:") and reads the
probability of each rating label at that position. A :class:`RatingModel` takes
:class:`RatingRequest` items (a key, the prompt, the label texts as they would follow
the prompt) and returns one :class:`RatingDistribution` per request, in order. The
distribution is normalised over the labels; ``label_mass`` keeps how much probability
the model put on the labels at all, before normalising.

A model that gives no probabilities (a remote API) can still be used through
:class:`TextSampler`: the distribution is then estimated from ``n`` samples at
temperature 1 and the result says so (``sampled``); nothing falls back silently.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class RatingRequest:
    """Read the probability of each of ``labels`` as the continuation of ``prompt``.

    ``labels`` are the exact texts that would follow the prompt (with a leading space
    when the prompt ends without one). ``group`` marks requests whose prompts share a
    long prefix (the outputs of one document): the fast path computes that prefix once
    per group. ``None`` puts every request of a call in one group.
    """

    key: Hashable
    prompt: str
    labels: tuple[str, ...]
    group: Hashable = None


@dataclass(frozen=True, slots=True)
class RatingDistribution:
    """Normalised probabilities of the labels, or the reason there are none.

    ``label_mass`` is the total probability the model gave the labels before
    normalising (``None`` when sampled). ``sampled`` says the probabilities are
    frequencies of ``n_samples`` sampled answers, of which ``n_unparsed`` named no label.

    A served model says how it read the labels (``label_mode``, "" for a local one):
    ``"top-k"`` from the next token's top-k candidates, ``"exact"`` from the prompt
    log-probabilities of each label's continuation. ``outside_top_k`` maps each label
    that was not among the top-k candidates (read as probability 0) to the upper bound
    on its probability (the k-th candidate's, along its path): never a silent 0.
    """

    key: Hashable
    labels: tuple[str, ...] = ()
    probs: tuple[float, ...] = ()
    label_mass: float | None = None
    sampled: bool = False
    n_samples: int = 0
    n_unparsed: int = 0
    error: str | None = None
    label_mode: str = ""
    outside_top_k: tuple[tuple[str, float], ...] = ()

    @classmethod
    def from_logprobs(
        cls, key: Hashable, labels: Sequence[str], logprobs: Sequence[float]
    ) -> RatingDistribution:
        """Normalise label log-probabilities (a softmax restricted to the labels)."""
        if len(labels) != len(logprobs) or not labels:
            return cls.failed(key, "one log-probability per label is needed")
        finite = [v for v in logprobs if math.isfinite(v)]
        if not finite or any(math.isnan(v) for v in logprobs):
            return cls.failed(key, "the model gave no finite probability to any label")
        top = max(finite)
        weights = [math.exp(v - top) if math.isfinite(v) else 0.0 for v in logprobs]
        total = math.fsum(weights)
        return cls(
            key=key,
            labels=tuple(labels),
            probs=tuple(w / total for w in weights),
            label_mass=min(1.0, math.exp(top) * total),
        )

    @classmethod
    def from_counts(
        cls, key: Hashable, labels: Sequence[str], counts: Sequence[int], n_samples: int
    ) -> RatingDistribution:
        """Frequencies of sampled answers; an error when no sample named a label."""
        parsed = sum(counts)
        if parsed == 0:
            return cls.failed(
                key, f"none of the {n_samples} sampled answers named a label", sampled=True
            )
        return cls(
            key=key,
            labels=tuple(labels),
            probs=tuple(c / parsed for c in counts),
            sampled=True,
            n_samples=n_samples,
            n_unparsed=n_samples - parsed,
        )

    @classmethod
    def failed(cls, key: Hashable, error: str, *, sampled: bool = False) -> RatingDistribution:
        return cls(key=key, error=error, sampled=sampled)

    @property
    def outside_bound(self) -> float:
        """The most probability the labels outside the top-k may hold together."""
        return min(1.0, math.fsum(bound for _, bound in self.outside_top_k))

    @property
    def ok(self) -> bool:
        return self.error is None

    def weighted(self, values: Sequence[float]) -> float:
        """Σ p(label)·value: G-Eval's score."""
        return math.fsum(p * v for p, v in zip(self.probs, values, strict=True))

    def argmax(self) -> int:
        """Index of the most probable label (the first on ties)."""
        return max(range(len(self.probs)), key=lambda i: (self.probs[i], -i))

    def entropy(self) -> float:
        """Shannon entropy in nats."""
        return -math.fsum(p * math.log(p) for p in self.probs if p > 0)


@runtime_checkable
class RatingModel(Protocol):
    """Anything that gives label distributions: lists in, aligned lists out."""

    def rating_distributions(
        self, requests: Sequence[RatingRequest]
    ) -> list[RatingDistribution]: ...


@runtime_checkable
class TextSampler(Protocol):
    """A model that can only answer with text (no probabilities)."""

    def sample(
        self, prompt: str, *, n: int, temperature: float, max_new_tokens: int, seed: int
    ) -> list[str]: ...


@runtime_checkable
class TextGenerator(Protocol):
    """Greedy (deterministic) text continuation, for G-Eval's evaluation steps."""

    def generate(self, prompt: str, *, max_new_tokens: int) -> str: ...


@runtime_checkable
class ChatFormatter(Protocol):
    """A model with a chat template: wraps a user message as the model expects."""

    def chat_prompt(self, message: str) -> str: ...
