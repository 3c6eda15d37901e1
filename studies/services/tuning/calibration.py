"""The calibration tuner: a map from the judge's score to the human scale (isotonic;
Platt or a threshold for a binary aspect), fitted on the tune documents' labels only (the
humans', or the adjudicated ones where there are some: the ``gold`` option) and applied
to every output the judge scored."""

from __future__ import annotations

from scoring.stats.score_mapping import BINARY_ONLY, METHODS, fit
from studies.models import Aspect
from studies.services.tuning.labels import positive
from studies.services.tuning.types import Option, TuneContext, Tuned, Tuner


def _target(aspect: Aspect, human: float) -> float:
    return positive(aspect, human) if aspect.kind == Aspect.Kind.BINARY else human


def _stored(aspect: Aspect, mapped: float) -> float:
    """A binary map's 0/1 as the label position the aspect stores."""
    if aspect.kind != Aspect.Kind.BINARY:
        return mapped
    at = aspect.label_codes().get(aspect.positive, 1)
    return float(at if mapped >= 0.5 else 1 - at)


def tune(context: TuneContext) -> Tuned:
    aspect = context.aspect
    method = context.options["method"]
    if method == "auto":
        method = "threshold" if aspect.kind == Aspect.Kind.BINARY else "isotonic"
    if method in BINARY_ONLY and aspect.kind != Aspect.Kind.BINARY:
        raise ValueError(f"{method} maps onto a binary aspect; {aspect.code} is {aspect.kind}")
    tune_ids = [pk for pk in context.labels.outputs("tune") if pk in context.scores]
    human = context.labels.gold(tune_ids)
    ids = [pk for pk in tune_ids if pk in human]
    fitted = fit(
        method,
        [context.scores[pk] for pk in ids],
        [_target(aspect, human[pk]) for pk in ids],
    )
    ordered = list(context.scores)
    mapped = fitted.apply([context.scores[pk] for pk in ordered])
    return Tuned(
        scores={pk: _stored(aspect, float(v)) for pk, v in zip(ordered, mapped, strict=True)},
        provenance={"method": method, "params": fitted.params, "fitted_on_outputs": len(ids)},
    )


TUNER = Tuner(
    name="calibration",
    label="Calibration (score → human scale)",
    options=(
        Option(
            "method",
            str,
            "auto",
            "isotonic (scale), platt or threshold (binary); auto picks isotonic or threshold",
            choices=("auto", *METHODS),
        ),
    ),
    tune=tune,
)
