"""A dataset's diagnostics: the page's data (same service), read-only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.correlations import PendingSerializer
from studies.api.serializers.diagnostics import DiagnosticsQuerySerializer, DiagnosticsSerializer
from studies.api.views.common import dataset_or_404, query_of
from studies.services.analysis.diagnostics import UnknownChoice, available_diagnostics
from studies.services.analysis.params import MatrixParams


@extend_schema(
    summary="Length bias, and the systems and documents a metric gets most wrong",
    parameters=[DiagnosticsQuerySerializer],
    responses={200: DiagnosticsSerializer, 202: PendingSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def diagnostics_view(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    query = DiagnosticsQuerySerializer(data=query_of(request))
    query.is_valid(raise_exception=True)
    data = query.validated_data
    params = MatrixParams.from_query({k: data[k] for k in ("level", "coef", "flagged", "weights")})
    try:
        found = available_diagnostics(dataset, params, data.get("run"), data.get("aspect"))
    except UnknownChoice as exc:
        return error_response(404, str(exc))
    if found is None:
        body = {
            "detail": "A worker is computing the diagnostics; ask again in a few seconds.",
            "progress": None,
        }
        return Response(body, status=202, headers={"Retry-After": "5"})
    return Response(found)
