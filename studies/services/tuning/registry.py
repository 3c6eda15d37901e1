"""Tuners by name: adding one is its module and one ``register`` line."""

from __future__ import annotations

import studies.services.tuning.calibration as calibration
import studies.services.tuning.few_shot as few_shot
import studies.services.tuning.instructions as instructions
from studies.services.tuning.types import Tuner

_TUNERS: dict[str, Tuner] = {}


def register(tuner: Tuner) -> None:
    if tuner.name in _TUNERS:
        raise ValueError(f"tuner {tuner.name!r} is registered twice")
    _TUNERS[tuner.name] = tuner


def tuner(name: str) -> Tuner:
    """The tuner called ``name``; KeyError names the known ones."""
    try:
        return _TUNERS[name]
    except KeyError:
        raise KeyError(f"unknown tuner {name!r}: one of {', '.join(names())}") from None


def names() -> list[str]:
    return sorted(_TUNERS)


register(calibration.TUNER)
register(few_shot.TUNER)
register(instructions.TUNER)
