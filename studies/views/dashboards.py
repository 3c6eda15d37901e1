"""Correlation dashboards: the metric × aspect matrix, a cell's drill-down, the paper
layouts and exports. Views only read the cache for big data; a cold matrix on a large
dataset is computed by a worker while the page polls."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render

from scoring.stats import Level, unsupported
from studies.permissions import visible_datasets
from studies.services.analysis import compare, dashboards, ppi, sentinels, tables
from studies.services.analysis.drilldown import drilldown
from studies.services.analysis.params import COEFFICIENT_LABELS, COEFFICIENT_NAMES, MatrixParams
from studies.services.contents import dataset_contents
from studies.views.helpers import (
    not_computed,
    researcher_required,
    stop_polling_when,
    wants_partial,
)

LEVELS = (("sample", "Sample-level"), ("dataset", "Dataset-level"), ("system", "System-level"))
# (value, label, the levels where it exists: the page offers it only there)
COEFFICIENTS = tuple(
    (
        name,
        COEFFICIENT_LABELS[coefficient],
        " ".join(v for v, _ in LEVELS if unsupported(coefficient, Level(v)) is None),
    )
    for name, coefficient in COEFFICIENT_NAMES.items()
)
EXPORTS = {
    "csv": ("text/csv", tables.to_csv),
    "json": ("application/json", tables.to_json),
    "tex": ("application/x-tex", tables.to_latex),
}


def _raw(request: HttpRequest) -> bool:
    """``?raw=1``: CSV text cells as stored, without the formula-neutralising quote."""
    return request.GET.get("raw") == "1"


def _dataset(request: HttpRequest, pk: int):  # type: ignore[no-untyped-def]
    return get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)


@researcher_required
def correlations(request: HttpRequest, pk: int) -> HttpResponse:
    """The matrix (``POST``: *Try again* after a failed computation, then the page)."""
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    problem = params.problem
    if request.method == "POST" and not problem:
        dashboards.try_again(dataset, params)
        return redirect(request.get_full_path())
    result = None if problem else dashboards.available_matrix(dataset, params, request.user)
    failed = None if result or problem else dashboards.failed(dataset, params)
    partial = wants_partial(request, "matrix")
    context = {
        "dataset": dataset,
        "params": params,
        "result": result,
        "problem": problem.message if problem else "",
        "failed": failed,
        "rows": tables.matrix_rows(result, request.GET.get("sort")) if result else [],
        "sort": request.GET.get("sort", ""),
        "levels": LEVELS,
        "coefficients": COEFFICIENTS,
        "progress": None if result or problem else dashboards.progress(dataset, params),
        "trained": dashboards.trained_metrics(dataset),
        "sources": dashboards.judgment_sources(dataset),
        "sentinel_estimate": "" if partial else sentinels.estimate(dataset),
    }
    if result and not (context["rows"] and result["columns"]):  # say what is there instead
        context["contents"] = dataset_contents(dataset)
    response = render(
        request, "studies/partials/matrix.html" if partial else "studies/correlations.html", context
    )
    return stop_polling_when(
        response,
        partial
        and (result is not None or bool(problem or failed))
        and bool(request.GET.get("poll")),
    )


@researcher_required
def correlation_cell(request: HttpRequest, pk: int, run: int, aspect: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    if params.problem:
        return HttpResponseBadRequest(params.problem.message)
    details = drilldown(dataset, run, aspect, params)
    if details is None:
        raise Http404("No such run or aspect in this dataset.")
    template = "studies/partials/cell.html" if wants_partial(request) else "studies/cell.html"
    others = [r for r in compare.runs(dataset) if r.pk != run]
    return render(
        request,
        template,
        {"dataset": dataset, "d": details, "params": params, "compare_runs": others},
    )


@researcher_required
def dataset_compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Two runs' scores against each other (``?a=<run>&b=<run>``)."""
    dataset = _dataset(request, pk)
    a = compare.parse_run(dataset, request.GET.get("a"))
    b = compare.parse_run(dataset, request.GET.get("b"))
    result = compare.compare(dataset, a, b) if a and b else None
    return render(
        request,
        "studies/compare.html",
        {"dataset": dataset, "runs": compare.runs(dataset), "a": a, "b": b, "result": result},
    )


@researcher_required
def correlation_paper(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    context = {"dataset": dataset, "params": params, "levels": LEVELS, "coefficients": COEFFICIENTS}
    if params.problem:
        return render(request, "studies/paper.html", {**context, "problem": params.problem.message})
    result = dashboards.available_matrix(dataset, params)
    if result is None:
        failed = dashboards.failed(dataset, params)
        return render(request, "studies/paper.html", {**context, "waiting": True, "failed": failed})
    sort = request.GET.get("sort", "")
    context |= {
        "gptscore": tables.gptscore_table(dataset, params),
        "sort": sort,
        "geval": tables.geval_table(dataset, params, sort),
        "ranks": tables.ranks_table(result, sort or "rank"),
    }
    return render(request, "studies/paper.html", context)


@researcher_required
def paper_export(request: HttpRequest, pk: int, file_format: str) -> HttpResponse:
    """A paper view table (``?table=ranks|gptscore|geval``) as CSV, JSON or LaTeX, sorted
    as on the page (``?sort=``); ``?ci=1``: the LaTeX values' bootstrap intervals."""
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    which = request.GET.get("table", "ranks")
    if params.problem or which not in tables.PAPER_TABLES:
        message = params.problem.message if params.problem else "Unknown table."
        return HttpResponseBadRequest(message)
    if dashboards.available_matrix(dataset, params) is None:
        return not_computed("correlation matrix", dashboards.failed(dataset, params))
    table = tables.paper_table(dataset, params, which, request.GET.get("sort"))
    ci = request.GET.get("ci") == "1"
    if file_format == "csv":
        body = tables.paper_to_csv(which, table, raw=_raw(request))
    elif file_format == "tex":
        body = tables.paper_to_latex(which, table, ci=ci)
    else:
        body = tables.paper_to_json(which, table)
    content_type = EXPORTS[file_format][0]
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    filename = f"{dataset.name}-{which}-{params.level}-{params.coefficient}.{file_format}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@researcher_required
def correlation_export(request: HttpRequest, pk: int, file_format: str) -> HttpResponse:
    dataset = _dataset(request, pk)
    params = MatrixParams.from_query(request.GET)
    if params.problem:
        return HttpResponseBadRequest(params.problem.message)
    result = dashboards.available_matrix(dataset, params)
    if result is None:
        return not_computed("correlation matrix", dashboards.failed(dataset, params))
    content_type, render_table = EXPORTS[file_format]
    if file_format == "csv":
        body = tables.to_csv(result, raw=_raw(request))
    elif file_format == "tex":  # ?ci=1: each value's bootstrap interval [low, high]
        body = tables.to_latex(result, ci=request.GET.get("ci") == "1")
    else:
        body = render_table(result)
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    filename = f"{dataset.name}-{params.level}-{params.coefficient}.{file_format}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@researcher_required
def dataset_ppi(request: HttpRequest, pk: int) -> HttpResponse:
    """Each system's mean human score corrected by a metric run (PPI++), beside the
    human-only and metric-only means: ``?run=<id>&aspect=<id>&vs=<system>``."""
    dataset = _dataset(request, pk)
    try:
        query, runs, aspects = ppi.parse_query(dataset, request.GET)
    except ppi.UnknownChoice as exc:
        raise Http404(str(exc)) from exc
    table = ppi.ppi_table(dataset, query) if query else None
    context = {"dataset": dataset, "query": query, "runs": runs, "aspects": aspects, "t": table}
    return render(request, "studies/ppi.html", context)


__all__ = [
    "correlation_cell",
    "correlation_export",
    "correlation_paper",
    "correlations",
    "dataset_compare",
    "dataset_ppi",
    "paper_export",
]
