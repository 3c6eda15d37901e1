"""Meta-evaluation diagnostics beside the matrix: the sentinel baselines (one POST adds
them) and the sample-size planner (computed by a worker while the page polls)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies.permissions import visible_datasets
from studies.services.analysis import planner
from studies.services.analysis.planner import PlannerParams
from studies.services.analysis.sentinels import add_sentinels
from studies.views.dashboards import COEFFICIENTS
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial


def _dataset(request: HttpRequest, pk: int):  # type: ignore[no-untyped-def]
    return get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)


@require_POST
@researcher_required
def sentinels(request: HttpRequest, pk: int) -> HttpResponse:
    """Start the sentinel runs the dataset lacks (length, random, source-free GPTScore)."""
    dataset = _dataset(request, pk)
    added = add_sentinels(dataset, user=request.user)
    if added.created:
        messages.success(
            request,
            f"Started {len(added.created)} sentinel run(s); they join the matrix as they score.",
        )
    if added.existing:
        messages.info(request, f"{len(added.existing)} sentinel run(s) already there.")
    for why in added.skipped:
        messages.warning(request, f"Sentinel skipped: {why}")
    return redirect("studies:correlations", pk=pk)


@researcher_required
def planner_page(request: HttpRequest, pk: int) -> HttpResponse:
    """How the CI narrows with more documents, and how many separate two runs."""
    dataset = _dataset(request, pk)
    params = PlannerParams.from_query(request.GET)
    try:
        planner.validate(dataset, params)
    except planner.UnknownChoice as exc:
        raise Http404(str(exc)) from exc
    runs, aspects = planner.choices(dataset)
    plan = planner.available_plan(dataset, params, request.user) if params.ready else None
    context = {
        "dataset": dataset,
        "params": params,
        "plan": plan,
        "runs": runs,
        "aspects": aspects,
        "coefficients": COEFFICIENTS,
    }
    partial = wants_partial(request, "planner")
    template = "studies/partials/planner.html" if partial else "studies/planner.html"
    return stop_polling_when(render(request, template, context), partial and plan is not None)


__all__ = ["planner_page", "sentinels"]
