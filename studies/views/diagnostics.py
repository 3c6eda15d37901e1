"""A dataset's diagnostics: length bias, and the systems and documents a metric gets
most wrong (studies.services.analysis.diagnostics builds the data; this only shows it)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from studies.permissions import visible_datasets
from studies.services.analysis.diagnostics import UnknownChoice, available_diagnostics
from studies.services.analysis.params import MatrixParams
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial

LEVELS = (("sample", "Sample-level"), ("dataset", "Dataset-level"), ("system", "System-level"))
COEFFICIENTS = (("spearman", "Spearman ρ"), ("pearson", "Pearson r"), ("kendall", "Kendall τ-b"))


@researcher_required
def dataset_diagnostics(request: HttpRequest, pk: int) -> HttpResponse:
    """``?run=<id>&aspect=<id>&level=…&coef=…`` (the correlations page's choices); a
    large dataset's are computed by a worker while the page polls."""
    dataset = get_object_or_404(visible_datasets(request.user), pk=pk)
    params = MatrixParams.from_query(request.GET)
    try:
        data = available_diagnostics(
            dataset, params, request.GET.get("run"), request.GET.get("aspect"), request.user
        )
    except UnknownChoice as exc:
        raise Http404(str(exc)) from exc
    poll = request.GET.copy()
    poll["poll"] = "1"
    context = {
        "dataset": dataset,
        "params": params,
        "d": data,
        "levels": LEVELS,
        "coefficients": COEFFICIENTS,
        "poll_query": poll.urlencode(),
    }
    partial = wants_partial(request, "diagnostics")
    template = "studies/partials/diagnostics.html" if partial else "studies/diagnostics.html"
    response = render(request, template, context)
    finished = partial and data is not None and "poll" in request.GET
    if finished:  # reload the page: its run and aspect choices come with the data
        response["HX-Refresh"] = "true"
    return stop_polling_when(response, finished)
