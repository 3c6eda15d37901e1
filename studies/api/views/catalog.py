"""Documents, outputs and judgments of your datasets; aspects and prompt templates
(read by researchers, written by admins: each change is a new version)."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.exceptions import ValidationError

from studies.api.filters import FilterSet, IdFilter
from studies.api.permissions import IsResearcher, ResearcherReadAdminWrite
from studies.api.serializers.catalog import AspectSerializer, TemplateSerializer
from studies.api.serializers.datasets import (
    DocumentSerializer,
    JudgmentSerializer,
    OutputSerializer,
)
from studies.api.views.common import datasets_of
from studies.models import Aspect, Document, Judgment, MetricScore, Output, PromptTemplate
from studies.permissions import visible_aspects
from studies.services import browse

INCLUDABLE = ("judgments", "scores")
INCLUDE = OpenApiParameter(
    "include",
    {"type": "array", "items": {"type": "string", "enum": list(INCLUDABLE)}, "minItems": 1},
    style="form",
    explode=False,
    description="Comma-separated: judgments, scores (each output's human judgments and "
    "metric scores).",
)
# the output browser's parameters (studies.services.browse), with a dataset
SORT_PATTERN = r"^\s*(-?(run:[0-9]+|aspect:.+))?\s*$"
BROWSE = [
    OpenApiParameter(
        "q",
        {"type": "string", "maxLength": browse.MAX_QUERY},
        description="Text in the output, its source or its document key.",
    ),
    OpenApiParameter("system", OpenApiTypes.STR, description="One system's outputs."),
    OpenApiParameter(
        "sort",
        {"type": "string", "pattern": SORT_PATTERN},
        description="run:<id> (a run's score) or aspect:<code> (the mean human "
        "judgment), with a leading - for descending; missing values last.",
    ),
    OpenApiParameter(
        "run", OpenApiTypes.INT, description="Only outputs this run scored (within min..max)."
    ),
    OpenApiParameter("min", OpenApiTypes.NUMBER),
    OpenApiParameter("max", OpenApiTypes.NUMBER),
    OpenApiParameter(
        "aspect",
        OpenApiTypes.STR,
        description="Only outputs judged on this aspect code (mean within hmin..hmax).",
    ),
    OpenApiParameter("hmin", OpenApiTypes.NUMBER),
    OpenApiParameter("hmax", OpenApiTypes.NUMBER),
]
BROWSE_NAMES = {p.name for p in BROWSE}
BROWSE_NUMBERS = ("run", "min", "max", "hmin", "hmax")


class DocumentFilter(FilterSet):
    dataset = IdFilter(field_name="dataset_id")
    doc_key = django_filters.CharFilter()

    class Meta:
        model = Document
        fields = ["dataset", "doc_key"]


@extend_schema_view(
    list=extend_schema(summary="Documents of your datasets"),
    retrieve=extend_schema(summary="A document"),
)
class DocumentViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    serializer_class = DocumentSerializer
    permission_classes = [IsResearcher]
    filterset_class = DocumentFilter
    ordering_fields = ["doc_key", "id"]
    ordering = ["dataset", "doc_key"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Document.objects.none()
        return Document.objects.filter(dataset__in=datasets_of(self.request.user))


class OutputFilter(FilterSet):
    dataset = IdFilter(field_name="document__dataset_id")
    doc_key = django_filters.CharFilter(field_name="document__doc_key")
    system_id = django_filters.CharFilter()

    class Meta:
        model = Output
        fields = ["dataset", "doc_key", "system_id", "document"]


@extend_schema_view(
    list=extend_schema(
        summary="Outputs of your datasets",
        parameters=[INCLUDE, *BROWSE],
        description="With ``dataset``: searched, filtered and sorted as the output "
        "browser page does (q, system, sort, run, min, max, aspect, hmin, hmax).",
    ),
    retrieve=extend_schema(summary="An output", parameters=[INCLUDE]),
)
class OutputViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    serializer_class = OutputSerializer
    permission_classes = [IsResearcher]
    filterset_class = OutputFilter
    ordering_fields = ["id", "system_id", "document__doc_key"]
    ordering = ["document__doc_key", "system_id"]

    def _include(self) -> set[str]:
        raw = self.request.query_params.get("include")
        if raw is None:
            return set()
        wanted = {part.strip() for part in raw.split(",")}
        unknown = ", ".join(sorted(map(repr, wanted - set(INCLUDABLE))))
        if unknown:
            raise ValidationError({"include": [f"Unknown: {unknown}; use judgments, scores."]})
        return wanted

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Output.objects.none()
        outputs = Output.objects.filter(
            document__dataset__in=datasets_of(self.request.user)
        ).select_related("document")
        include = self._include() if self.request else set()
        if "judgments" in include:
            outputs = outputs.prefetch_related(
                Prefetch(
                    "judgments",
                    Judgment.objects.select_related("aspect", "annotator").order_by(
                        "aspect__code", "pk"
                    ),
                )
            )
        if "scores" in include:
            outputs = outputs.prefetch_related(
                Prefetch(
                    "metric_scores", MetricScore.objects.select_related("run").order_by("run_id")
                )
            )
        return outputs

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "include": self._include()}

    def filter_queryset(self, queryset: Any) -> Any:
        queryset = super().filter_queryset(queryset)
        params = self.request.query_params
        if self.action != "list":
            return queryset
        empty = [name for name in BROWSE_NUMBERS if params.get(name) == ""]
        if empty:  # the page's form sends empty fields; the schema's numbers are not empty
            raise ValidationError(dict.fromkeys(empty, ["Give a number, or leave it out."]))
        if not BROWSE_NAMES & {k for k, v in params.items() if v}:
            return queryset
        if not params.get("dataset"):
            raise ValidationError(
                {"dataset": [f"{', '.join(sorted(BROWSE_NAMES))} need a dataset."]}
            )
        dataset = datasets_of(self.request.user).filter(pk=params["dataset"]).first()
        if dataset is None:
            return queryset.none()
        offered = browse.choices(dataset)
        try:
            query = browse.parse_query(params, offered)
        except browse.BadQuery as exc:
            raise ValidationError({exc.parameter: [str(exc)]}) from exc
        found = browse.outputs(dataset, query, offered, base=queryset.order_by())
        return found if query.sort else found.order_by(*queryset.query.order_by)


class JudgmentFilter(FilterSet):
    dataset = IdFilter(field_name="output__document__dataset_id")
    aspect = IdFilter(field_name="aspect_id")
    aspect_code = django_filters.CharFilter(field_name="aspect__code", lookup_expr="iexact")
    source = django_filters.ChoiceFilter(
        choices=[("import", "imported from a file"), ("annotator", "an annotator account")],
        method="by_source",
    )
    import_file = django_filters.CharFilter()
    rater = django_filters.CharFilter(help_text="An imported judgment's annotator.")
    annotator = django_filters.CharFilter(field_name="annotator__username")
    doc_key = django_filters.CharFilter(field_name="output__document__doc_key")
    system_id = django_filters.CharFilter(field_name="output__system_id")

    class Meta:
        model = Judgment
        fields = ["dataset", "aspect", "output"]

    def by_source(self, queryset: Any, name: str, value: str) -> Any:
        return queryset.filter(annotator__isnull=value == "import")


@extend_schema_view(
    list=extend_schema(summary="Human judgments of your datasets"),
    retrieve=extend_schema(summary="A judgment"),
)
class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    serializer_class = JudgmentSerializer
    permission_classes = [IsResearcher]
    filterset_class = JudgmentFilter
    ordering_fields = ["id", "value", "updated_at"]
    ordering = ["id"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Judgment.objects.none()
        return Judgment.objects.filter(
            output__document__dataset__in=datasets_of(self.request.user)
        ).select_related("aspect", "annotator")


class VersionedWrites:
    """Saves record who made the change (each change is a new version row)."""

    def perform_create(self, serializer: Any) -> None:
        serializer.save(_changed_by=self.request.user)  # type: ignore[attr-defined]

    def perform_update(self, serializer: Any) -> None:
        serializer.save(_changed_by=self.request.user)  # type: ignore[attr-defined]


@extend_schema_view(
    list=extend_schema(summary="Aspects with their versions"),
    retrieve=extend_schema(summary="An aspect with its versions"),
    create=extend_schema(summary="Create an aspect (admins)"),
    update=extend_schema(summary="Change an aspect: a new version (admins)"),
    partial_update=extend_schema(summary="Change an aspect: a new version (admins)"),
)
class AspectViewSet(
    VersionedWrites, mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet
):  # type: ignore[type-arg]
    serializer_class = AspectSerializer
    permission_classes = [ResearcherReadAdminWrite]
    filterset_fields = ["code", "tasks__code"]
    ordering_fields = ["code", "name", "id"]
    ordering = ["code"]
    queryset = Aspect.objects.prefetch_related("tasks", "versions__created_by")

    def get_queryset(self) -> Any:
        # the shared aspects and the user's own (imports create them); admins see all
        return super().get_queryset().filter(pk__in=visible_aspects(self.request.user))


@extend_schema_view(
    list=extend_schema(summary="Prompt templates with their versions"),
    retrieve=extend_schema(summary="A prompt template with its versions"),
    create=extend_schema(summary="Create a prompt template (admins)"),
    update=extend_schema(summary="Change a prompt template: a new version (admins)"),
    partial_update=extend_schema(summary="Change a prompt template: a new version (admins)"),
)
class TemplateViewSet(
    VersionedWrites, mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet
):  # type: ignore[type-arg]
    serializer_class = TemplateSerializer
    permission_classes = [ResearcherReadAdminWrite]
    filterset_fields = ["task__code", "aspect", "kind", "setting", "dimension"]
    ordering_fields = ["id"]
    ordering = ["id"]
    queryset = PromptTemplate.objects.select_related("task").prefetch_related(
        "versions__created_by"
    )
