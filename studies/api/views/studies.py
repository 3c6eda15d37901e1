"""Studies and their members, for researchers (the same services as the study pages)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.permissions import IsResearcher
from studies.api.serializers.adjudication import (
    AdjudicateSerializer,
    AdjudicationQuerySerializer,
    AdjudicationQueueSerializer,
    AdjudicationSerializer,
)
from studies.api.serializers.studies import (
    AnnotatorAccountSerializer,
    MemberSerializer,
    StudySerializer,
)
from studies.api.views.common import datasets_of, query_of
from studies.models import Study
from studies.permissions import may_manage_members, research_studies
from studies.services import adjudication, studies


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
        if not studies.may_create_annotators(request.user):  # 403 before the body is read
            raise PermissionDenied(studies.CREATE_REFUSED)
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

    @extend_schema(
        methods=["GET"],
        summary="The disagreement review's queue: outputs a judge run and the humans (or "
        "the humans among themselves) disagree on most, largest first",
        parameters=[AdjudicationQuerySerializer],
        responses={200: AdjudicationQueueSerializer},
    )
    @extend_schema(
        methods=["POST"],
        summary="Store the study's adjudicated value of an output (its own source: the "
        "judgments stay as they were; adjudicating again replaces it)",
        request=AdjudicateSerializer,
        responses={201: AdjudicationSerializer},
    )
    @action(
        detail=True,
        methods=["get", "post"],
        pagination_class=None,
        filterset_fields=[],
        ordering_fields=[],
    )
    def adjudication(self, request: Request, pk: Any = None) -> Response:
        study = self.get_object()
        if request.method == "GET":
            query = AdjudicationQuerySerializer(data=query_of(request))
            query.is_valid(raise_exception=True)
            aspect, run = _named(study, query.validated_data)
            return _queue(study, aspect, run)
        body = AdjudicateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = {"run": 0, **body.validated_data}  # no run named: none
        aspect, run = _named(study, data)
        try:
            found = adjudication.adjudicate(
                study,
                aspect,
                data["output"],
                adjudication.format_value(data["value"]),
                request.user,
                run,
            )
        except adjudication.AdjudicationError as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response(AdjudicationSerializer(found).data, status=status.HTTP_201_CREATED)


def _named(study: Study, data: dict[str, Any]) -> tuple[Any, Any]:
    """The aspect and the run a request names (each refused, naming it, when it is not
    the study's), else the defaults of the page."""
    aspect, run = adjudication.choose(study, "", "")
    if "aspect" in data:
        aspect = adjudication.study_aspects(study).filter(code=data["aspect"]).first()
        if aspect is None:
            raise ValidationError({"aspect": ["Not an aspect this study adjudicates."]})
    if data.get("run"):
        run = adjudication.judge_runs(study.dataset).filter(pk=data["run"]).first()
        if run is None:
            raise ValidationError({"run": ["Not a run with scores of the study's dataset."]})
    elif "run" in data:  # 0: no judge
        run = None
    return aspect, run


def _queue(study: Study, aspect: Any, run: Any) -> Response:
    if aspect is None:
        raise NotFound("No aspect of this study is judged yet.")
    queue = adjudication.build_queue(study, aspect, run)
    items = [
        {**vars(item), "priority": item.priority, "reason": item.reason} for item in queue.items
    ]
    for row in items:
        row["adjudicated"] = queue.done.get(row["output_id"])
    body = {
        "aspect": aspect.code,
        "run": run.pk if run else None,
        "total": len(items),
        "left": queue.left,
        "items": items,
    }
    return Response(AdjudicationQueueSerializer(body).data)


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
