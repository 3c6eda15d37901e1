"""Studies, members and campaigns for researchers; the annotation queue for annotators
(same services as the pages: lease, overlap, one stored answer per double submit)."""

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
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

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
from studies.api.serializers.annotation import (
    AgreementSerializer,
    AnnotatorAccountSerializer,
    AnnotatorCampaignSerializer,
    AssignmentSerializer,
    CampaignCreateSerializer,
    CampaignSerializer,
    MemberSerializer,
    ProgressSerializer,
    RoutingSerializer,
    SkipSerializer,
    StudySerializer,
    SubmitSerializer,
)
from studies.api.views.common import datasets_of
from studies.models import Study
from studies.permissions import may_manage_members, research_studies
from studies.services import studies


@extend_schema_view(
    list=extend_schema(summary="Studies you own or research in"),
    retrieve=extend_schema(summary="A study"),
    create=extend_schema(summary="Create a study of one of your datasets"),
)
class StudyViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):  # type: ignore[type-arg]
    serializer_class = StudySerializer
    permission_classes = [IsResearcher]
    filterset_fields = ["dataset"]
    ordering_fields = ["id", "name", "created_at"]
    ordering = ["-created_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Study.objects.none()
        return (
            research_studies(self.request.user)
            .select_related("owner")
            .prefetch_related("aspects", "campaigns")
        )

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if getattr(self, "request", None) is not None and self.request.user.is_authenticated:
            context["datasets"] = datasets_of(self.request.user)
        return context

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        try:
            serializer.instance = studies.create_study(
                data["dataset"],
                data["name"],
                self.request.user,
                aspects=list(data.get("aspects", [])),
                description=data.get("description", ""),
            )
        except studies.StudyError as exc:
            raise _refused(exc) from None

    @extend_schema(
        methods=["GET"], summary="The study's members", responses={200: MemberSerializer(many=True)}
    )
    @extend_schema(
        methods=["POST"],
        summary="Add or change a member's role (the dataset's owner or an admin)",
        request=MemberSerializer,
        responses={201: MemberSerializer},
    )
    @action(
        detail=True,
        methods=["get", "post"],
        pagination_class=None,
        filterset_fields=[],
        ordering_fields=[],
    )
    def members(self, request: Request, pk: Any = None) -> Response:
        study = self.get_object()
        if request.method == "GET":
            rows = study.memberships.select_related("user").order_by("user__username")
            return Response(MemberSerializer(rows, many=True).data)
        _require_manager(request, study)
        body = MemberSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            member = studies.add_member(
                study, data["user"].get_username(), data["role"], by=request.user
            )
        except studies.StudyError as exc:
            raise _refused(exc) from None
        return Response(MemberSerializer(member).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Remove a member (the dataset's owner or an admin): every route the "
        "membership opened answers them 404 from then on",
        request=None,
        responses={204: None},
    )
    @action(
        detail=True,
        methods=["delete"],
        url_path=r"members/(?P<user_id>[0-9]{1,18})",
        url_name="member",
        pagination_class=None,
        filterset_fields=[],
        ordering_fields=[],
    )
    def remove_member(self, request: Request, pk: Any = None, user_id: str = "") -> Response:
        study = self.get_object()
        _require_manager(request, study)
        try:
            studies.remove_member(study, int(user_id), by=request.user)
        except studies.StudyError as exc:
            if exc.forbidden:
                raise _refused(exc) from None
            raise NotFound(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Create an annotator account in the study (the dataset's owner or an admin, "
        "with the permission create_annotator_accounts)",
        request=AnnotatorAccountSerializer,
        responses={201: MemberSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        pagination_class=None,
        filterset_fields=[],
        ordering_fields=[],
    )
    def annotators(self, request: Request, pk: Any = None) -> Response:
        study = self.get_object()
        _require_manager(request, study)
        body = AnnotatorAccountSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            member = studies.create_annotator(
                study, data["username"], data["password"], request.user
            )
        except studies.StudyError as exc:
            raise _refused(exc, field_names={}) from None
        return Response(MemberSerializer(member).data, status=status.HTTP_201_CREATED)


def _require_manager(request: Request, study: Study) -> None:
    """Members are the dataset owner's (or an admin's) to change: others get 403 before
    their request body is even read."""
    if not may_manage_members(request.user, study):
        raise PermissionDenied(studies.MANAGE_MEMBERS)


def _refused(exc: Any, field_names: dict[str, str] | None = None) -> Exception:
    """A service's refusal as the API's error: 403 for a change the user may not make,
    otherwise a 400 naming the field."""
    if exc.forbidden:
        return PermissionDenied(str(exc))
    names = {"username": "user"} if field_names is None else field_names
    return ValidationError({names.get(exc.field, exc.field): [str(exc)]})


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
        summary="Progress per annotator and per aspect, skipped items",
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
        return Response(
            {
                "annotators": annotators,
                "items": report.item_summary(campaign),
                "aspects": aspects,
                "skipped": skipped,
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
        summary="Agreement per aspect (Krippendorff α with CI, pairwise ρ)",
        responses={200: AgreementSerializer, 202: AgreementSerializer},
    )
    @action(
        detail=True, methods=["get"], pagination_class=None, filterset_fields=[], ordering_fields=[]
    )
    def agreement(self, request: Request, pk: Any = None) -> Response:
        result = agreement.available_agreement(self.get_object())
        return Response({"agreement": result}, status=200 if result is not None else 202)


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
        summary="Submit your answers (submitting twice stores one judgment)",
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
            answers.submit(current.pk, request.user, given)
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
