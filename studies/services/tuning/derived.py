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
    now = timezone.now()
    with transaction.atomic():
        run = MetricRun.objects.create(
            dataset=dataset,
            metric=metric,
            label=free_label(dataset.pk, label),
            kind=MetricRun.Kind.IMPORTED,
            config={},
            aspect_version=aspect.current_version(),
            status=MetricRun.Status.SUCCEEDED,
            created_by=by,
            started_at=now,
            finished_at=now,
        )
        write_derived_scores(run, aspect=aspect, config=config, scores=scores, details=details)
        if usage:
            MetricRun.objects.filter(pk=run.pk).update(usage=usage)
            run.usage = usage
    return run


def write_derived_scores(
    run: MetricRun,
    *,
    aspect: Aspect,
    config: dict[str, Any],
    scores: dict[int, float],
    details: dict[int, dict[str, Any]] | None = None,
) -> None:
    """Replace ``run``'s scores and configuration with these (NaN scores left out); its
    status is the caller's. One transaction: a job killed here wrote all or nothing."""
    details = details or {}
    kept = {pk: v for pk, v in scores.items() if v is not None and math.isfinite(v)}
    run.config = json_safe({**config, "aspect": aspect.code})
    with transaction.atomic():
        MetricScore.objects.filter(run=run).delete()  # an earlier attempt's
        MetricScore.objects.bulk_create(
            MetricScore(run=run, output_id=pk, value=value, details=details.get(pk, {}))
            for pk, value in kept.items()
        )
        MetricRun.objects.filter(pk=run.pk).update(
            config=run.config, done=len(kept), total=len(kept)
        )
        run.done = run.total = len(kept)
        run.dataset.bump_data_version()


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
