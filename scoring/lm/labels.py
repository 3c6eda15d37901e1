"""What G-Eval on a binary or categorical aspect asks of a model: the probability of
each label word, read how exactly the model can.

A :class:`LabelReader` returns one :class:`LabelReading` per
:class:`~scoring.lm.rating.RatingRequest`: the label distribution and how it was read.
The local engine is a plain :class:`~scoring.lm.rating.RatingModel` (every label's
continuation scored token by token: exact); a served model (which registers its
reader here: :func:`register_reader`, so the model class stays as it is) reads the next token's
``top_logprobs`` and scores exactly, by prompt log-probabilities, the labels that were
not among the candidates (:mod:`scoring.lm.served.labels`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, runtime_checkable

from scoring.lm.rating import RatingDistribution, RatingRequest

READS = ("exact", "top-k")


@dataclass(frozen=True, slots=True)
class LabelReading:
    """A request's label distribution and how it was read.

    ``read``: ``"exact"`` (each label's continuation scored: the local engine, or a
    served model's prompt log-probabilities) or ``"top-k"`` (from the next token's
    candidates). ``outside``: the labels that were not among the top-k candidates; with
    ``read="top-k"`` they got probability 0 (the endpoint could not score them).
    """

    distribution: RatingDistribution
    read: str = "exact"
    outside: tuple[str, ...] = ()


@runtime_checkable
class LabelReader(Protocol):
    """A model that reads label distributions itself, saying how: lists in, aligned
    lists out."""

    def label_distributions(self, requests: Sequence[RatingRequest]) -> list[LabelReading]: ...


Reader = Callable[[Any, Sequence[RatingRequest]], list[LabelReading]]
_readers: dict[type, Reader] = {}


def register_reader(cls: type, read: Reader) -> None:
    """``read(model, requests)`` reads the label distributions of ``cls``'s models."""
    _readers[cls] = read


def reader_of(model: object) -> Callable[[Sequence[RatingRequest]], list[LabelReading]] | None:
    """How ``model`` reads labels itself (its own method, or a registered reader);
    ``None``: it is a plain rating model, or gives no probabilities."""
    if isinstance(model, LabelReader):
        return model.label_distributions
    for cls in type(model).__mro__:
        if cls in _readers:
            return partial(_readers[cls], model)
    return None
