"""Correlation dashboards: the metric × aspect matrix, a cell's drill-down, the paper
layouts and exports. Views only read the cache for big data; a cold matrix on a large
dataset is computed by a worker while the page polls."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers

from studies.permissions import visible_datasets
from studies.services import dashboards, tables
from studies.services.dashboards import MatrixParams
from studies.services.drilldown import drilldown
from studies.views.datasets import HTMX_STOP_POLLING, researcher_required

LEVELS = (("sample", "Sample-level"), ("dataset", "Dataset-level"), ("system", "System-level"))
COEFFICIENTS = (("spearman", "Spearman ρ"), ("pearson", "Pearson r"), ("kendall", "Kendall τ-b"),
                ("kendall_c", "Kendall τ-c"))  # fmt: skip
EXPORTS = {"csv": ("text/csv", tables.to_csv), "json": ("application/json", tables.to_json),
           "tex": ("application/x-tex", tables.to_latex)}  # fmt: skip


def _raw(request: HttpRequest) -> bool:
    """``?raw=1``: CSV text cells as stored, without the formula-neutralising quote."""
    return request.GET.get("raw") == "1"


def _dataset(request: HttpRequest, pk: int):  # type: ignore[no-untyped-def]
    return get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)


@researcher_required
def correlations(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    result = dashboards.available_matrix(dataset, params)
    context = {
        "dataset": dataset, "params": params, "result": result,
        "rows": tables.matrix_rows(result, request.GET.get("sort")) if result else [],
        "sort": request.GET.get("sort", ""), "levels": LEVELS, "coefficients": COEFFICIENTS,
        "progress": None if result else dashboards.progress(dataset, params),
        "trained": dashboards.trained_metrics(dataset),
    }  # fmt: skip
    partial = request.htmx and request.htmx.target == "matrix"
    response = render(request, "studies/partials/matrix.html" if partial else "studies/correlations.html",
                      context)  # fmt: skip
    if partial and result is not None and request.GET.get("poll"):
        response.status_code = HTMX_STOP_POLLING
    patch_vary_headers(response, ["HX-Request"])
    return response


@researcher_required
def correlation_cell(request: HttpRequest, pk: int, run: int, aspect: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    details = drilldown(dataset, run, aspect, params)
    if details is None:
        raise Http404("No such run or aspect in this dataset.")
    template = "studies/partials/cell.html" if request.htmx else "studies/cell.html"
    response = render(request, template, {"dataset": dataset, "d": details, "params": params})
    patch_vary_headers(response, ["HX-Request"])
    return response


@researcher_required
def correlation_paper(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    if dashboards.available_matrix(dataset, params) is None:
        return render(
            request, "studies/paper.html", {"dataset": dataset, "params": params, "waiting": True}
        )
    context = {
        "dataset": dataset, "params": params, "levels": LEVELS, "coefficients": COEFFICIENTS,
        "gptscore": tables.gptscore_table(dataset, params), "geval": tables.geval_table(dataset, params),
    }  # fmt: skip
    return render(request, "studies/paper.html", context)


@researcher_required
def correlation_export(request: HttpRequest, pk: int, file_format: str) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    result = dashboards.available_matrix(dataset, params)
    if result is None:
        return HttpResponse("The table is being computed; try again in a moment.", status=503,
                            headers={"Retry-After": "5"})  # fmt: skip
    content_type, render_table = EXPORTS[file_format]
    body = (
        tables.to_csv(result, raw=_raw(request)) if file_format == "csv" else render_table(result)
    )
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    filename = f"{dataset.name}-{params.level}-{params.coefficient}.{file_format}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


__all__ = ["correlation_cell", "correlation_export", "correlation_paper", "correlations"]
