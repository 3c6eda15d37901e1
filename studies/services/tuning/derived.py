"""Saving a run made from other runs (a jury, a tuned judge): an imported-kind run,
finished at once, whose ``config`` records where it came from."""

from __future__ import annotations

import math
from typing import Any

from django.db import transaction
from django.utils import timezone

from studies.models import Aspect, Dataset, MetricRun, MetricScore
from studies.services.runs.labels import MAX_LABEL
from studies.services.runs.served import COUNTS


def free_label(dataset_id: int, label: str) -> str:
    """``label``, or ``label #2``, ``#3`` … where an imported run of the dataset has it."""
    taken = set(
        MetricRun.objects.filter(dataset_id=dataset_id, kind=MetricRun.Kind.IMPORTED)
        .filter(label__startswith=label[: MAX_LABEL - 8])
        .values_list("label", flat=True)
    )
    label = label[: MAX_LABEL - 8]
    if label not in taken:
        return label
    n = 2
    while f"{label} #{n}" in taken:
        n += 1
    return f"{label} #{n}"


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON has no NaN: an undefined
    statistic is stored as null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def save_derived_run(
    dataset: Dataset,
    *,
    metric: str,
    label: str,
    aspect: Aspect,
    config: dict[str, Any],
    scores: dict[int, float],
    details: dict[int, dict[str, Any]] | None = None,
    by: Any = None,
    usage: dict[str, Any] | None = None,
) -> MetricRun:
    """Write the run and its scores in one transaction (NaN scores are left out;
    ``usage``: what a served judge spent making it)."""
    details = details or {}
    kept = {pk: v for pk, v in scores.items() if v is not None and math.isfinite(v)}
    now = timezone.now()
    with transaction.atomic():
        run = MetricRun.objects.create(
            dataset=dataset,
            metric=metric,
            label=free_label(dataset.pk, label),
            kind=MetricRun.Kind.IMPORTED,
            config=json_safe({**config, "aspect": aspect.code}),
            aspect_version=aspect.current_version(),
            status=MetricRun.Status.SUCCEEDED,
            done=len(kept),
            total=len(kept),
            created_by=by,
            usage=usage or {},
            started_at=now,
            finished_at=now,
        )
        MetricScore.objects.bulk_create(
            MetricScore(run=run, output_id=pk, value=value, details=details.get(pk, {}))
            for pk, value in kept.items()
        )
        dataset.bump_data_version()
    return run


def run_scores(run: MetricRun) -> dict[int, float]:
    """A run's scored outputs (errors left out)."""
    return dict(
        run.scores.filter(value__isnull=False)
        .values_list("output_id", "value")
        .order_by("output_id")
    )


def usage_of(run: MetricRun) -> dict[str, Any]:
    """A run's ``usage`` as stored now (served clients add to it as they go)."""
    return dict(MetricRun.objects.filter(pk=run.pk).values_list("usage", flat=True).first() or {})


def spent_between(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a run's served client spent between two readings of its ``usage``: its
    counts (requests, tokens, cache hits …) and cost; empty where nothing was spent."""
    spent: dict[str, Any] = {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in COUNTS}
    spent["cost"] = round(float(after.get("cost", 0.0)) - float(before.get("cost", 0.0)), 10)
    return spent if any(spent.values()) else {}
