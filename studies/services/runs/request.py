"""What a researcher asks for (from the page, the command or the API), and where it goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from studies.models import Aspect, Dataset, MetricRun
from studies.services.catalog.model_catalog import check_model
from studies.services.runs.core import save_run
from studies.services.runs.registry import METRIC_GROUPS, METRICS, per_aspect, runner
from studies.services.runs.types import RunError, RunRequest


def start_run(
    dataset: Dataset,
    request: RunRequest,
    *,
    user: Any = None,
    enqueue: bool = True,
    local_paths: bool = False,
) -> MetricRun:
    """Save a PENDING run with its frozen configuration; enqueue it once committed.

    The model must be allowed (:func:`check_model`) where the metric's runner names one;
    ``local_paths`` (the operator's shell, never a web request) also accepts any local
    path or hub id.
    """
    found = runner(request.metric)
    if found is None:
        raise RunError(f"Unknown metric {request.metric!r}; use one of {', '.join(METRICS)}.")
    if found.checks_model:  # a learned metric names a trained metric's id instead
        check_model(request.model, local_paths=local_paths)
    plan = found.build(dataset, request, user)
    if request.doc_keys:
        plan.config["doc_keys"] = sorted(request.doc_keys)
    return save_run(dataset, plan, user=user, enqueue_it=enqueue)


def start_runs(
    dataset: Dataset,
    request: RunRequest,
    *,
    user: Any = None,
    enqueue: bool = True,
    local_paths: bool = False,
) -> list[MetricRun]:
    """Like :func:`start_run`; a group name (``rouge``) starts one run per member."""
    metrics = METRIC_GROUPS.get(request.metric, (request.metric,))
    return [
        start_run(
            dataset, replace(request, metric=m), user=user, enqueue=enqueue, local_paths=local_paths
        )
        for m in metrics
    ]


def start_requested(
    dataset: Dataset, base: RunRequest, aspects: Sequence[Aspect], *, user: Any = None
) -> list[MetricRun]:
    """What the run form asks for: one run per aspect for a per-aspect metric (GPTScore,
    G-Eval), one run per member of a group (``rouge``) otherwise."""
    if per_aspect(base.metric):
        return [start_run(dataset, replace(base, aspect=a.code), user=user) for a in aspects]
    return start_runs(dataset, base, user=user)
