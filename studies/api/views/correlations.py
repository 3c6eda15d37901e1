"""Correlations of a dataset: the matrix (the page's and the ``correlations`` command's
numbers, from the same cache), a cell's drill-down, the paper layouts, the exports."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes, renderer_classes
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import computation_failed, error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.correlations import (
    ComputationFailedSerializer,
    DrilldownSerializer,
    ExportQuerySerializer,
    MatrixQuerySerializer,
    MatrixSerializer,
    PaperSerializer,
    PendingSerializer,
)
from studies.api.views.common import PassthroughRenderer, dataset_or_404, query_of
from studies.models import Dataset
from studies.services.analysis import dashboards, tables
from studies.services.analysis.drilldown import drilldown
from studies.services.analysis.params import MatrixParams

EXPORTS = {
    "csv": ("text/csv", tables.to_csv),
    "json": ("application/json", tables.to_json),
    "tex": ("application/x-tex", tables.to_latex),
}


def _params(
    request: Request, serializer: type[MatrixQuerySerializer] = MatrixQuerySerializer
) -> tuple[MatrixParams, dict[str, Any]]:
    """The page's parameters, parsed as the page parses them (MatrixParams.from_query)
    once the query is known to be valid."""
    query = serializer(data=query_of(request))
    query.is_valid(raise_exception=True)
    data = query.validated_data
    params = MatrixParams.from_query(
        {
            "level": data["level"],
            "coef": data["coef"],
            "average": data["average"],
            "ties": data["ties"],
            "flagged": data["flagged"],
            "weights": data["weights"],
            "mincov": data["mincov"],
            "source": data.get("source", ""),
        }
    )
    return replace(params, ci=data["ci"]), data


def _available(
    dataset: Dataset, params: MatrixParams, data: dict[str, Any]
) -> dict[str, Any] | None:
    """The matrix as the pages get it (``retry``: after forgetting a failure)."""
    if data.get("retry"):
        dashboards.try_again(dataset, params)
    return dashboards.available_matrix(dataset, params)


def _pending(dataset: Dataset, params: MatrixParams) -> Response:
    """202 while a worker computes the matrix; 500 with why when computing it failed."""
    failed = dashboards.failed(dataset, params)
    if failed is not None:
        return computation_failed(failed, "correlation matrix")
    body = {
        "detail": "A worker is computing the correlations; ask again in a few seconds.",
        "progress": dashboards.progress(dataset, params),
    }
    return Response(body, status=202, headers={"Retry-After": "5"})


@extend_schema(
    summary="The metric × aspect correlation matrix",
    parameters=[MatrixQuerySerializer],
    responses={200: MatrixSerializer, 202: PendingSerializer, 500: ComputationFailedSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def matrix(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    params, data = _params(request)
    result = _available(dataset, params, data)
    if result is None:
        return _pending(dataset, params)
    return Response(
        {**result, "excluded_annotators": dashboards.excluded_annotators(dataset, params)}
    )


@extend_schema(
    summary="One cell in detail: scatter, per-document distribution, largest disagreements",
    parameters=[MatrixQuerySerializer],
    responses={200: DrilldownSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def cell(request: Request, pk: int, run: int, aspect: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    params, _ = _params(request)
    details = drilldown(dataset, run, aspect, params)
    if details is None:
        return error_response(404, "No such run or aspect in this dataset.")
    return Response(details)


@extend_schema(
    summary="The paper layouts: GPTScore's VAL/IST/IDM table, G-Eval's ρ/τ table, WMT's ranks",
    parameters=[MatrixQuerySerializer],
    responses={200: PaperSerializer, 202: PendingSerializer, 500: ComputationFailedSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def paper(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    params, data = _params(request)
    result = _available(dataset, params, data)
    if result is None:
        return _pending(dataset, params)
    return Response(
        {
            "gptscore": tables.gptscore_table(dataset, params),
            "geval": tables.geval_table(dataset, params),
            "ranks": tables.ranks_table(result),
        }
    )


@extend_schema(
    summary="The matrix as a file (CSV, JSON or LaTeX booktabs), as the page exports it",
    parameters=[ExportQuerySerializer],
    responses={
        (200, "text/csv"): OpenApiTypes.STR,
        (200, "application/json"): OpenApiTypes.OBJECT,
        (200, "application/x-tex"): OpenApiTypes.STR,
        202: PendingSerializer,
        500: ComputationFailedSerializer,
    },
)
@api_view(["GET"])
@permission_classes([IsResearcher])
@renderer_classes([JSONRenderer, PassthroughRenderer])
def export(request: Request, pk: int) -> Any:
    dataset = dataset_or_404(request.user, pk)
    params, data = _params(request, ExportQuerySerializer)
    result = _available(dataset, params, data)
    if result is None:
        return _pending(dataset, params)
    content_type, render_table = EXPORTS[data["file_format"]]
    response = HttpResponse(render_table(result), content_type=f"{content_type}; charset=utf-8")
    filename = f"{dataset.name}-{params.level}-{params.coefficient}.{data['file_format']}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
