"""The run page's warning that a G-Eval model does not follow the form, computed from
the run's stored distributions (:mod:`scoring.metrics.geval_check` holds the checks and
their thresholds)."""

from __future__ import annotations

from typing import Any

from scoring.metrics.geval_check import FormCheck, check_distributions
from studies.models import MetricRun, MetricScore


def _label_mass(details: dict[str, Any]) -> float | None:
    """The probability on the labels, or for sampled runs the share of answers naming one."""
    if details.get("label_mass") is not None:
        return float(details["label_mass"])
    n = details.get("n_samples") or 0
    return (n - (details.get("n_unparsed") or 0)) / n if details.get("sampled") and n else None


def top_k_flags(run: MetricRun) -> dict[str, Any] | None:
    """A served G-Eval run's scores read from an endpoint's top-k candidates alone with
    some label outside them (read as 0, each at most its bound): how many, and the
    largest bound on the mass they could hide; None when there are none."""
    if run.metric != "geval" or not run.config.get("endpoint"):
        return None
    bounds = [
        float((d or {}).get("outside_bound") or 0.0)
        for d in MetricScore.objects.filter(
            run=run, value__isnull=False, details__has_key="outside_top_k"
        ).values_list("details", flat=True)
    ]
    if not bounds:
        return None
    return {"scores": len(bounds), "max_bound": max(bounds)}


def form_check(run: MetricRun) -> FormCheck | None:
    """The checks over a finished G-Eval run's scored outputs; ``None`` for another
    metric, an unfinished run, or one without stored distributions."""
    if run.metric != "geval" or not run.is_finished:
        return None
    stored = MetricScore.objects.filter(run=run, value__isnull=False).values_list(
        "details", flat=True
    )
    details = [d for d in stored if isinstance(d, dict) and isinstance(d.get("distribution"), dict)]
    return check_distributions(
        [{str(k): float(v) for k, v in d["distribution"].items()} for d in details],
        [_label_mass(d) for d in details],
    )
