"""Two metric runs of a dataset against each other: the page's numbers, read-only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.compare import CompareQuerySerializer, CompareSerializer
from studies.api.views.common import dataset_or_404, query_of
from studies.services.analysis import compare


@extend_schema(
    summary="Two metric runs' scores against each other (Pearson, Spearman, Kendall, scatter)",
    parameters=[CompareQuerySerializer],
    responses={200: CompareSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def runs(request: Request, pk: int) -> Response:
    dataset = dataset_or_404(request.user, pk)
    query = CompareQuerySerializer(data=query_of(request))
    query.is_valid(raise_exception=True)
    a = compare.parse_run(dataset, str(query.validated_data["a"]))
    b = compare.parse_run(dataset, str(query.validated_data["b"]))
    if a is None or b is None:
        return error_response(404, "No such run in this dataset.")
    return Response(compare.compare(dataset, a, b))
