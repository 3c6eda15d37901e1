"""What a researcher asks for (from the page, the command or the API), and where it goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from studies.models import Aspect, Dataset, Endpoint, MetricRun
from studies.services.catalog import endpoints
from studies.services.catalog.model_catalog import check_model
from studies.services.runs.core import save_run
from studies.services.runs.registry import METRIC_GROUPS, METRICS, per_aspect, runner
from studies.services.runs.types import Plan, RunError, Runner, RunRequest


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
    path or hub id. A run on a served endpoint (``request.endpoint``: one the user may
    use) is refused here, before it starts, when the endpoint's stored probe found it
    lacks what the metric needs (never probed: the worker probes and refuses it).
    """
    found = runner(request.metric)
    if found is None:
        raise RunError(f"Unknown metric {request.metric!r}; use one of {', '.join(METRICS)}.")
    if request.endpoint and found.served is None:
        raise RunError(f"{found.label} does not run on a served endpoint.")
    if found.checks_model and not request.endpoint:  # learned: a trained metric's id instead
        check_model(request.model, local_paths=local_paths)
    plan = found.build(dataset, request, user)
    if request.endpoint:
        endpoint = check_served(found, plan)
        plan.config["cost_estimate"] = endpoints.estimate_cost(
            endpoint,
            dataset,
            plan.metric,
            limit_docs=request.limit_docs,
            n_samples=request.n_samples if request.estimation == "sampled" else 0,
            directions=2 if plan.config.get("dimension") == "avg_f" else 1,
            pairs=plan.config.get("n_pairs"),
            shape=endpoints.prompt_shape(plan.metric, plan.config),
        )
    if request.doc_keys and not plan.config.get("doc_keys"):  # a runner may narrow them
        plan.config["doc_keys"] = sorted(request.doc_keys)
    return save_run(dataset, plan, user=user, enqueue_it=enqueue)


def check_served(found: Runner, plan: Plan) -> Endpoint:
    """Refuse a run the endpoint cannot serve, from its stored probe, naming what it
    lacks. An endpoint never probed is not probed here (a web request never waits on a
    server): the worker probes it before the run scores, and refuses the run then."""
    frozen = plan.config["endpoint"]
    endpoint = Endpoint.objects.get(pk=frozen["id"])
    capabilities = endpoints.stored_capabilities(endpoint)
    if capabilities is None:
        return endpoint
    missing = found.served(plan.config, capabilities) if found.served else "no runs on endpoints"
    if missing:
        raise RunError(f"The endpoint {endpoint.name!r} cannot run {plan.label}: {missing}.")
    return endpoint


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
