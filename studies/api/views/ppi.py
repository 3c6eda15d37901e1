"""Metric-corrected system means of a dataset (PPI++): the page's table, read-only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.ppi import PPIQuerySerializer, PPITableSerializer
from studies.api.views.common import dataset_or_404, query_of
from studies.services.analysis import ppi


@extend_schema(
    summary="Each system's mean human score corrected by a metric run (PPI++)",
    parameters=[PPIQuerySerializer],
    responses={200: PPITableSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def table(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    query = PPIQuerySerializer(data=query_of(request))
    query.is_valid(raise_exception=True)
    try:
        found, _, _ = ppi.parse_query(dataset, query.validated_data)
    except ppi.UnknownChoice as exc:
        return error_response(404, str(exc))
    if found is None:
        return error_response(404, "The dataset needs a metric run and judgments for this table.")
    return Response(ppi.ppi_table(dataset, found))
