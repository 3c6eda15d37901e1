"""A jury: several finished runs of one dataset combined into one new run (mean,
median, majority, weighted by each judge's agreement with the humans on the split's
tune documents, or Dawid–Skene with each judge an annotator). The new run's config
records the runs, the method and, for the weighted method, the weights and the split."""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats import Coefficient, Level, correlate
from scoring.stats.jury import METHODS, combine, dawid_skene_labels
from studies.models import Aspect, MetricRun, Study
from studies.services.tuning.derived import run_scores, save_derived_run
from studies.services.tuning.labels import TuneLabels
from studies.services.tuning.splits import split_for_dataset


class JuryError(ValueError):
    """A jury that cannot be formed; the message says why."""


def _runs(run_ids: list[int]) -> list[MetricRun]:
    if len(run_ids) < 2 or len(set(run_ids)) != len(run_ids):
        raise JuryError("a jury needs at least two distinct runs")
    runs = {r.pk: r for r in MetricRun.objects.filter(pk__in=run_ids).select_related("dataset")}
    missing = [pk for pk in run_ids if pk not in runs]
    if missing:
        raise JuryError(f"no run {', '.join(map(str, missing))}")
    ordered = [runs[pk] for pk in run_ids]
    if len({r.dataset_id for r in ordered}) > 1:
        raise JuryError("the runs must be of one dataset")
    unfinished = [r.pk for r in ordered if r.status != MetricRun.Status.SUCCEEDED]
    if unfinished:
        raise JuryError(f"runs {', '.join(map(str, unfinished))} have not succeeded")
    return ordered


def tune_weights(columns: list[dict[int, float]], labels: TuneLabels) -> list[float]:
    """Each judge's Spearman ρ with the mean human value over the tune outputs (dataset
    level), 0 where negative or undefined."""
    human = labels.human(labels.outputs("tune"))
    ids = sorted(human)
    weights = []
    for column in columns:
        x = np.array([column.get(pk, np.nan) for pk in ids])
        y = np.array([human[pk] for pk in ids])
        rho = correlate(x, y, level=Level.DATASET, coefficient=Coefficient.SPEARMAN).value
        weights.append(float(rho) if np.isfinite(rho) and rho > 0 else 0.0)
    if not any(weights):
        raise JuryError("no judge agrees with the humans on the tune documents: no weights")
    return weights


def make_jury(
    run_ids: list[int],
    aspect: Aspect,
    method: str,
    *,
    study: Study | None = None,
    by: Any = None,
) -> MetricRun:
    """Combine the runs' scores of every output any of them scored into a new run."""
    if method not in METHODS:
        raise JuryError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    runs = _runs(run_ids)
    columns = [run_scores(run) for run in runs]
    outputs = sorted(set().union(*columns))
    matrix = np.array([[c.get(pk, np.nan) for c in columns] for pk in outputs], dtype=float)
    config: dict[str, Any] = {"jury": {"method": method, "runs": run_ids}}
    weights = None
    if method == "weighted":
        split = split_for_dataset(runs[0].dataset_id, study)
        weights = tune_weights(columns, TuneLabels(split, aspect, parts=("tune",)))
        config["jury"]["weights"] = dict(zip(map(str, run_ids), weights, strict=True))
        config["split"] = split.pk
    details: dict[int, dict[str, Any]] = {}
    if method == "dawid-skene":
        values, confidence, expected = dawid_skene_labels(matrix)
        details = {
            pk: {"posterior": float(c), "expected": float(e)}
            for pk, c, e in zip(outputs, confidence, expected, strict=True)
            if np.isfinite(c)
        }
    else:
        values = combine(matrix, method, weights)
    label = f"jury:{method}:{aspect.code}:" + "+".join(map(str, run_ids))
    return save_derived_run(
        runs[0].dataset,
        metric="jury",
        label=label,
        aspect=aspect,
        config=config,
        scores=dict(zip(outputs, map(float, values), strict=True)),
        details=details,
        by=by,
    )
