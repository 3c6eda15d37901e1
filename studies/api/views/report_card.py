"""A dataset's judge report card, and a study's (its dataset's card on the study's
aspects): the pages' data (same service), read-only."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import computation_failed
from studies.api.permissions import IsResearcher
from studies.api.serializers.correlations import ComputationFailedSerializer, PendingSerializer
from studies.api.serializers.report_card import ReportCardQuerySerializer, ReportCardSerializer
from studies.api.views.common import dataset_or_404, query_of
from studies.models import Dataset, Study
from studies.services import studies as study_service
from studies.services.analysis import report_card
from studies.services.analysis.report_card import CardParams
from studies.services.analysis.report_card.reference import with_reference


@extend_schema(
    summary="Can each judge replace the annotators? One row per judge run × aspect",
    parameters=[ReportCardQuerySerializer],
    responses={200: ReportCardSerializer, 202: PendingSerializer, 500: ComputationFailedSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def report_card_view(request: Request, pk: int) -> Response:
    return _card(request, dataset_or_404(request.user, pk))


@extend_schema(
    summary="A study's report card: its dataset's card on the study's aspects",
    parameters=[ReportCardQuerySerializer],
    responses={200: ReportCardSerializer, 202: PendingSerializer, 500: ComputationFailedSerializer},
)
@api_view(["GET"])
@permission_classes([IsResearcher])
def study_report_card_view(request: Request, pk: int) -> Response:
    study = get_object_or_404(study_service.owned_studies(request.user), pk=pk)
    codes = tuple(study.aspects.values_list("code", flat=True))
    return _card(request, study.dataset, codes, study)


def _card(
    request: Request, dataset: Dataset, only: tuple[str, ...] = (), study: Study | None = None
) -> Response:
    """The card of ``dataset`` as the query asks (``only``: the study's aspects, all
    judged ones when empty; thresholds on ``study``'s split, else the dataset's one
    study with a split), or 202 while a worker computes it, or 500 with why when
    computing it failed (``reference=adjudicated``: the adjudications of ``study``, else
    of every study of the dataset)."""
    query = ReportCardQuerySerializer(data=query_of(request))
    query.is_valid(raise_exception=True)
    data = query.validated_data
    params = CardParams(
        level=data["level"],
        coefficient=data["coef"],
        epsilon=data["eps"],
        confidence=float(data["ci"]),
        aspects=tuple(sorted({c for c in data["aspects"].split(",") if c})),
        all_runs=data["runs"] == "all",
        reference=data["reference"],
    )
    params = params.on_split(*report_card.split_params(dataset, study))
    params = with_reference(params, dataset, study)
    if only:
        params = params.only(only)
    if data["retry"]:
        report_card.try_again(dataset, params)
    card = report_card.available_card(dataset, params, request.user)
    if card is None and (failed := report_card.failed(dataset, params)) is not None:
        return computation_failed(failed, "report card")
    if card is None:
        body = {
            "detail": "A worker is computing the report card; ask again in a few seconds.",
            "progress": report_card.progress(dataset, params),
        }
        return Response(body, status=202, headers={"Retry-After": "5"})
    return Response({**card, "rows": report_card.sorted_rows(card, data.get("sort"))})
