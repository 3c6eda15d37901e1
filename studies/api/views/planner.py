"""Sentinel baselines (POST: add them once) and the sample-size planner (GET), through
the same services as the pages."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.correlations import PendingSerializer
from studies.api.serializers.planner import (
    PlannerQuerySerializer,
    PlannerSerializer,
    SentinelRequestSerializer,
    SentinelsSerializer,
)
from studies.api.serializers.runs import RunSerializer
from studies.api.views.common import dataset_or_404, query_of
from studies.services.analysis import planner
from studies.services.analysis.planner import PlannerParams
from studies.services.analysis.sentinels import add_sentinels


@extend_schema(
    summary="Add the sentinel baselines (length, random, source-free GPTScore) once",
    request=SentinelRequestSerializer,
    responses={201: SentinelsSerializer, 200: SentinelsSerializer},
)
@api_view(["POST"])
@permission_classes([IsResearcher])
def sentinels(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    body = SentinelRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    added = add_sentinels(dataset, user=request.user, **body.validated_data)
    data = {
        "created": RunSerializer(added.created, many=True).data,
        "existing": RunSerializer(added.existing, many=True).data,
        "skipped": added.skipped,
    }
    return Response(data, status=status.HTTP_201_CREATED if added.created else status.HTTP_200_OK)


@extend_schema(
    summary="Sample-size planner: CI half-width against documents, documents for 80% power",
    parameters=[PlannerQuerySerializer],
    responses={200: PlannerSerializer, 202: PendingSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def plan(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    query = PlannerQuerySerializer(data=query_of(request))
    query.is_valid(raise_exception=True)
    params = PlannerParams.from_query({k: str(v) for k, v in query.validated_data.items()})
    try:
        planner.validate(dataset, params)
    except planner.UnknownChoice as exc:
        return error_response(404, str(exc))
    if params.problem:
        return error_response(400, params.problem)
    found = planner.available_plan(dataset, params)
    if found is None:
        body = {
            "detail": "A worker is computing the plan; ask again in a few seconds.",
            "progress": None,
        }
        return Response(body, status=202, headers={"Retry-After": "5"})
    return Response(found)
