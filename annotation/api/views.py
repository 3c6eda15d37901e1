"""Campaigns for researchers; the annotation queue for annotators (same services as the
pages: lease, overlap, one stored answer per double submit)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import QueryDict
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.serializers import (
    AgreementSerializer,
    AnnotatorCampaignSerializer,
    AssignmentSerializer,
    CampaignCreateSerializer,
    CampaignSerializer,
    ProgressSerializer,
    RoutingSerializer,
    SkipSerializer,
    SubmitSerializer,
)
from annotation.forms import CampaignForm
from annotation.models import Assignment, Campaign
from annotation.services import agreement, answers, assignment, report, routing
from annotation.services.campaigns import (
    CampaignError,
    annotator_campaigns,
    create_campaign,
    researcher_campaigns,
)
from studies.api.errors import error_response, form_errors
from studies.api.permissions import IsResearcher


def _form_data(data: dict[str, Any]) -> QueryDict:
    query = QueryDict(mutable=True)
    users = get_user_model().objects
    for key, value in data.items():
        if key == "annotators":
            found = dict(users.filter(username__in=value).values_list("username", "pk"))
            unknown = sorted(set(value) - set(found))
            if unknown:
                raise ValidationError({"annotators": [f"Unknown accounts: {', '.join(unknown)}."]})
            query.setlist(key, [str(found[u]) for u in value])
        elif key == "aspects":
            query.setlist(key, [str(v) for v in value])
        elif key == "systems":
            query[key] = ",".join(value)
        elif key == "show_references":
            if value:
                query[key] = "on"
        elif value is not None:
            query[key] = str(value)
    return query


@extend_schema_view(
    list=extend_schema(summary="Campaigns of your studies"),
    retrieve=extend_schema(summary="A campaign"),
)
class CampaignViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    serializer_class = CampaignSerializer
    permission_classes = [IsResearcher]
    filterset_fields = ["study", "status", "mode"]
    ordering_fields = ["id", "created_at"]
    ordering = ["-created_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Campaign.objects.none()
        return researcher_campaigns(self.request.user).prefetch_related("aspects", "annotators")

    @extend_schema(
        summary="Create a campaign (as the New campaign page)",
        request=CampaignCreateSerializer,
        responses={201: CampaignSerializer},
    )
    def create(self, request: Request) -> Response:
        body = CampaignCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        form = CampaignForm(_form_data(dict(body.validated_data)), user=request.user)
        if not form.is_valid():
            raise form_errors(form)
        try:
            campaign = create_campaign(form.cleaned_data["study"], form.spec(), request.user)
        except CampaignError as exc:
            return error_response(400, str(exc), {"non_field_errors": [str(exc)]})
        return Response(CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Progress per annotator and per aspect, skipped items, comments",
        responses={200: ProgressSerializer},
    )
    @action(
        detail=True, methods=["get"], pagination_class=None, filterset_fields=[], ordering_fields=[]
    )
    def progress(self, request: Request, pk: Any = None) -> Response:
        campaign = self.get_object()
        annotators = []
        for row in report.annotator_rows(campaign):
            gold = asdict(row.gold) if row.gold is not None else None
            annotators.append(
                {
                    "username": row.username,
                    "done": row.done,
                    "skipped": row.skipped,
                    "leased": row.leased,
                    "median_seconds": row.median_seconds,
                    "gold": gold,
                }
            )
        aspects = [
            {"id": row["aspect"].pk, "code": row["aspect"].code, "answers": row["answers"]}
            for row in report.aspect_rows(campaign)
        ]
        skipped = [
            {"item": a.item_id, "annotator": a.annotator.get_username(), "reason": a.skip_reason}
            for a in report.skipped_items(campaign)
        ]
        comments = [
            {"item": a.item_id, "annotator": a.annotator.get_username(), "comment": a.comment}
            for a in report.commented_items(campaign)
        ]
        return Response(
            {
                "annotators": annotators,
                "items": report.item_summary(campaign),
                "aspects": aspects,
                "skipped": skipped,
                "comments": comments,
            }
        )

    @extend_schema(
        summary="Informative routing: the question, its estimate, the documents in "
        "queue order with why (empty for random routing)",
        responses={200: RoutingSerializer},
    )
    @action(
        detail=True, methods=["get"], pagination_class=None, filterset_fields=[], ordering_fields=[]
    )
    def routing(self, request: Request, pk: Any = None) -> Response:
        return Response(routing.summary(self.get_object()))

    @extend_schema(
        summary="Agreement per aspect (α with CI, pairwise ρ; label aspects: κ, nominal α)",
        responses={200: AgreementSerializer, 202: AgreementSerializer},
    )
    @action(
        detail=True, methods=["get"], pagination_class=None, filterset_fields=[], ordering_fields=[]
    )
    def agreement(self, request: Request, pk: Any = None) -> Response:
        result = agreement.available_agreement(self.get_object())
        current = result is not None and not result.get("stale")
        return Response({"agreement": result}, status=200 if current else 202)


@extend_schema_view(
    list=extend_schema(summary="Campaigns you are invited to annotate"),
    retrieve=extend_schema(summary="A campaign you annotate"),
)
class AnnotateCampaignViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    serializer_class = AnnotatorCampaignSerializer
    permission_classes = [IsAuthenticated]
    filterset_fields = ["status"]
    ordering_fields = ["id", "created_at"]
    ordering = ["-created_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Campaign.objects.none()
        return annotator_campaigns(self.request.user).prefetch_related("aspects", "annotators")

    @extend_schema(
        summary="Lease your next item (or renew your current lease)",
        request=None,
        responses={200: AssignmentSerializer, 204: None},
    )
    @action(detail=True, methods=["post"], url_path="next")
    def next_item(self, request: Request, pk: Any = None) -> Response:
        claimed = assignment.claim_next(self.get_object(), request.user)
        if claimed is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(claimed).data)


@extend_schema_view(
    list=extend_schema(summary="Your assignments (leased, done, skipped)"),
    retrieve=extend_schema(summary="An assignment with its item and your answers"),
)
class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    serializer_class = AssignmentSerializer
    permission_classes = [IsAuthenticated]
    filterset_fields = ["status", "item__campaign"]
    ordering_fields = ["id", "submitted_at"]
    ordering = ["id"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Assignment.objects.none()
        return Assignment.objects.filter(
            annotator=self.request.user, item__campaign__in=annotator_campaigns(self.request.user)
        ).select_related(*assignment.ITEM_RELATED, "item__campaign")

    @extend_schema(
        summary="Submit your answers and an optional comment (submitting twice stores one "
        "judgment; submitting again while the campaign is open changes the answers)",
        request=SubmitSerializer,
        responses={200: AssignmentSerializer},
    )
    @action(detail=True, methods=["post"])
    def submit(self, request: Request, pk: Any = None) -> Response:
        current = self.get_object()
        body = SubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        campaign = current.item.campaign
        fields = {f"aspect-{k}": v for k, v in body.validated_data["answers"].items()}
        try:
            given = answers.parse_answers(campaign, fields)
            comment = answers.parse_comment(body.validated_data.get("comment"))
            answers.submit(current.pk, request.user, given, comment)
        except answers.InvalidAnswer as exc:
            return error_response(400, str(exc), {"answers": [str(exc)]})
        except assignment.AnnotationError as exc:
            return error_response(exc.status, str(exc))
        return Response(AssignmentSerializer(self._fresh(current.pk)).data)

    @extend_schema(
        summary="Skip the item (with an optional reason)",
        request=SkipSerializer,
        responses={200: AssignmentSerializer},
    )
    @action(detail=True, methods=["post"])
    def skip(self, request: Request, pk: Any = None) -> Response:
        current = self.get_object()
        body = SkipSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            assignment.skip(current.pk, request.user, body.validated_data["reason"])
        except assignment.AnnotationError as exc:
            return error_response(exc.status, str(exc))
        return Response(AssignmentSerializer(self._fresh(current.pk)).data)

    def _fresh(self, pk: int) -> Assignment:
        with transaction.atomic():
            return get_object_or_404(self.get_queryset(), pk=pk)
