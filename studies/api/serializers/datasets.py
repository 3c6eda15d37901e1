"""Datasets, import jobs, documents, outputs and judgments."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from studies.api.errors import form_errors
from studies.api.serializers.types import StrictJsonTypes, TaskField
from studies.forms import UploadForm
from studies.models import (
    Dataset,
    Document,
    ImportJob,
    Judgment,
    MetricScore,
    Output,
    TaskKind,
)
from studies.services.imports.converted import CONCORDIA, IMPORT_FORMATS


class DatasetSerializer(StrictJsonTypes, serializers.ModelSerializer):  # type: ignore[type-arg]
    task = TaskField()
    owner = serializers.CharField(
        source="owner.username", read_only=True, default=None, allow_null=True
    )
    n_documents = serializers.IntegerField(read_only=True, default=None, allow_null=True)

    class Meta:
        model = Dataset
        fields = [
            "id",
            "name",
            "task",
            "description",
            "owner",
            "data_version",
            "created_at",
            "n_documents",
        ]
        read_only_fields = ["data_version", "created_at"]

    def validate_name(self, name: str) -> str:
        """Names are unique per owner: the writer's own datasets only are checked."""
        user = self.context["request"].user
        mine = Dataset.objects.filter(owner=user, name=name)
        if self.instance is not None:
            mine = mine.exclude(pk=self.instance.pk)
        if mine.exists():
            raise serializers.ValidationError(f"You already have a dataset named {name!r}.")
        return name


class ImportJobSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    task = serializers.CharField(source="task.code", read_only=True)
    errors = serializers.ListField(child=serializers.CharField(), read_only=True)
    summary = serializers.DictField(read_only=True)

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "status",
            "original_name",
            "file_format",
            "dataset_name",
            "dataset",
            "task",
            "create_aspects",
            "summary",
            "errors",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class UploadSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The upload page's form (same checks: format from the file name, size, a dataset
    name that is new or yours)."""

    file = serializers.FileField(help_text="JSONL or CSV, UTF-8 (the import formats).")
    dataset = serializers.SlugField(max_length=100, help_text="A new or existing dataset's name.")
    task = TaskField(default=TaskKind.SUMMARIZATION, help_text="Task code.")
    create_aspects = serializers.BooleanField(default=False)
    format = serializers.ChoiceField(
        choices=list(IMPORT_FORMATS),
        default=CONCORDIA,
        help_text="concordia (JSONL or CSV by the file's name) or a tool's export: "
        "label-studio, argilla, langfuse, langsmith, otel.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in self.initial_data.items() if k != "file"}
        data.setdefault("task", attrs["task"])
        if attrs.get("create_aspects"):
            data["create_aspects"] = "on"
        else:
            data.pop("create_aspects", None)
        form = UploadForm(data, {"file": attrs["file"]}, user=self.context["request"].user)
        if not form.is_valid():
            raise form_errors(form)
        return {**form.cleaned_data, "file_format": form.file_format}


class UploadIntoSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """An upload into an existing dataset (its name and task are the dataset's)."""

    file = serializers.FileField(help_text="JSONL or CSV, UTF-8 (the import formats).")
    create_aspects = serializers.BooleanField(default=False)
    format = serializers.ChoiceField(
        choices=list(IMPORT_FORMATS),
        default=CONCORDIA,
        help_text="concordia (JSONL or CSV by the file's name) or a tool's export.",
    )


class DocumentSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    dataset = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta:
        model = Document
        fields = ["id", "dataset", "doc_key", "source", "references", "context"]


class JudgmentSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    aspect_code = serializers.CharField(source="aspect.code", read_only=True)
    annotator = serializers.CharField(
        source="annotator.username", read_only=True, default=None, allow_null=True
    )
    source = serializers.SerializerMethodField()

    class Meta:
        model = Judgment
        fields = [
            "id",
            "output",
            "aspect",
            "aspect_code",
            "value",
            "annotator",
            "import_file",
            "rater",
            "source",
            "created_at",
            "updated_at",
        ]

    def get_source(self, obj: Judgment) -> str:
        return "annotator" if obj.annotator_id else "import"


class ScoreSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    run_label = serializers.CharField(source="run.label", read_only=True)
    details = serializers.DictField(read_only=True)

    class Meta:
        model = MetricScore
        fields = ["id", "run", "run_label", "output", "value", "error", "details"]


class OutputSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    doc_key = serializers.CharField(source="document.doc_key", read_only=True)
    dataset = serializers.IntegerField(source="document.dataset_id", read_only=True)
    judgments = serializers.SerializerMethodField()
    scores = serializers.SerializerMethodField()

    class Meta:
        model = Output
        fields = [
            "id",
            "dataset",
            "document",
            "doc_key",
            "system_id",
            "text",
            "judgments",
            "scores",
        ]

    def _included(self, name: str) -> bool:
        return name in self.context.get("include", ())

    @extend_schema_field(JudgmentSerializer(many=True, allow_null=True))
    def get_judgments(self, obj: Output) -> list[dict[str, Any]] | None:
        if not self._included("judgments"):
            return None
        return JudgmentSerializer(obj.judgments.all(), many=True).data  # type: ignore[return-value]

    @extend_schema_field(ScoreSerializer(many=True, allow_null=True))
    def get_scores(self, obj: Output) -> list[dict[str, Any]] | None:
        if not self._included("scores"):
            return None
        return ScoreSerializer(obj.metric_scores.all(), many=True).data  # type: ignore[return-value]


def sync_import_limit() -> int:
    """Files up to this size are imported in the request when ``?wait=`` asks for it."""
    return int(settings.API_SYNC_IMPORT_MAX_BYTES)
