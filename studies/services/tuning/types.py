"""What a tuner is: a name, the options it declares once (an
:class:`~studies.services.options.Option` each, as a metric runner declares its own: the
command's flags, the form's and the serializer's fields are derived from them; every tuner
also takes :data:`COMMON_OPTIONS`: ``gold``, the labels it tunes on) and a function from a
start run's scores and the tune/dev labels to new scores with their provenance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from studies.models import Aspect, MetricRun
from studies.services.options import Option
from studies.services.tuning.labels import GOLDS, TuneLabels

GOLD = Option(
    "gold",
    str,
    "humans",
    "the labels tuned on: humans (each output's judgments) or adjudicated (the study's "
    "adjudicated value where a tune/dev output has one, the humans' elsewhere; a test "
    "document's is never read)",
    choices=GOLDS,
)
# the options every tuner takes besides its own (read by the tuning, not the tuner)
COMMON_OPTIONS = (GOLD,)


@dataclass(frozen=True)
class TuneContext:
    """What a tuner gets: the start run, the aspect, its scores by output id, the labels
    it may read (never a test document's), its options, a seeded generator (and its
    seed) and, for a tuner that prompts the judge again, how to load its model."""

    run: MetricRun
    aspect: Aspect
    scores: dict[int, float]
    labels: TuneLabels
    options: dict[str, Any]
    rng: np.random.Generator
    seed: int = 0
    # the judge's model, for a tuner that prompts it again (None: the run's own model)
    model_factory: Callable[[MetricRun], Any] | None = None
    # told (done, total) as the tuner goes (a worker's job writes it to the tuned run's
    # progress, and stops there when the run was cancelled)
    report: Callable[[int, int], None] | None = None

    def progress(self, done: int, total: int) -> None:
        """Say how far the tuner is: ``done`` of ``total`` steps (outputs rated)."""
        if self.report is not None:
            self.report(done, total)


@dataclass(frozen=True)
class Tuned:
    """A tuner's result: a score for each output it scored and what to record of how
    (``provenance``: parameters, candidates tried, documents used)."""

    scores: dict[int, float]
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tuner:
    """A registered kind of tuner."""

    name: str
    label: str
    options: tuple[Option, ...]
    tune: Callable[[TuneContext], Tuned]
    # whether it prompts the judge again (its job then runs where the judge's model is:
    # the model worker, or the io worker for a served judge); else it maps stored scores
    prompts: bool = False

    def __post_init__(self) -> None:
        """Its options are its own, then :data:`COMMON_OPTIONS` (those it did not declare)."""
        own = {o.name for o in self.options}
        common = tuple(o for o in COMMON_OPTIONS if o.name not in own)
        object.__setattr__(self, "options", (*self.options, *common))

    def resolve(self, given: dict[str, Any]) -> dict[str, Any]:
        """The options with defaults filled in; unknown names and values outside the
        choices are refused."""
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"{self.name} has no option {', '.join(unknown)}")
        out = {}
        for name, option in known.items():
            value = given.get(name)
            value = option.default if value is None else option.type(value)
            if option.choices and value not in option.choices:
                raise ValueError(f"{option.flag} must be one of {', '.join(option.choices)}")
            out[name] = value
        return out
