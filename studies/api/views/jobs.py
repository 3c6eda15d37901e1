"""Queued and running work, as the jobs page shows it."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.permissions import IsResearcher
from studies.api.serializers.jobs import JobSerializer
from studies.services.jobs import as_rows, lanes_for, waiting_runs


@extend_schema(
    summary="The work queued and running in the workers, lane by lane, in order; then the "
    "runs waiting for batch answers (lane 'batch')",
    responses={200: JobSerializer(many=True)},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def job_list(request: Request) -> Response:
    rows = as_rows(lanes_for(request.user), waiting_runs(request.user))
    return Response(JobSerializer(rows, many=True).data)
