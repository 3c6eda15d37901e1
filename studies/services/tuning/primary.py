"""The primary statistic of one judge on some outputs, as the tuners and the test-split
evidence compute it: Spearman ρ at sample level on a scale aspect, MCC on a binary one
(a point estimate)."""

from __future__ import annotations

from scoring.stats import Coefficient, Level, correlate
from scoring.stats.score_mapping import mcc
from studies.models import Aspect
from studies.services.tuning.labels import positive


def is_binary(aspect: Aspect) -> bool:
    return bool(aspect.kind == Aspect.Kind.BINARY)


def statistic(aspect: Aspect, docs: list[int], x: list[float], y: list[float]) -> float:
    """The judge's ``x`` against the humans' ``y`` (``docs``: each output's document)."""
    if is_binary(aspect):
        return mcc([positive(aspect, v) for v in x], [positive(aspect, v) for v in y])
    return float(
        correlate(x, y, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs).value
    )
