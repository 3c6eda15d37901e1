"""A dataset's diagnostics: length bias, and the systems and documents a metric gets
most wrong (studies.services.diagnostics builds the data; this only shows it)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from studies.permissions import visible_datasets
from studies.services.dashboards import MatrixParams
from studies.services.diagnostics import UnknownChoice, diagnostics
from studies.views.helpers import researcher_required

LEVELS = (("sample", "Sample-level"), ("dataset", "Dataset-level"), ("system", "System-level"))
COEFFICIENTS = (("spearman", "Spearman ρ"), ("pearson", "Pearson r"), ("kendall", "Kendall τ-b"))


@researcher_required
def dataset_diagnostics(request: HttpRequest, pk: int) -> HttpResponse:
    """``?run=<id>&aspect=<id>&level=…&coef=…`` (the correlations page's choices)."""
    dataset = get_object_or_404(visible_datasets(request.user), pk=pk)
    params = MatrixParams.from_query(request.GET)
    try:
        data = diagnostics(dataset, params, request.GET.get("run"), request.GET.get("aspect"))
    except UnknownChoice as exc:
        raise Http404(str(exc)) from exc
    context = {"dataset": dataset, "params": params, "d": data, "levels": LEVELS,
               "coefficients": COEFFICIENTS}  # fmt: skip
    return render(request, "studies/diagnostics.html", context)
