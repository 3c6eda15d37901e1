"""Resumable uploads: the session a client creates, then appends chunks to."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from studies.api.errors import form_errors
from studies.api.serializers.types import StrictJsonTypes, TaskField
from studies.forms import UploadSessionForm
from studies.models import TaskKind, UploadSession
from studies.services.uploads import chunk_limit


class UploadSessionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    """An upload under way: how much arrived (``offset``), the largest chunk the server
    takes (``chunk_max``), and the import job once complete."""

    dataset = serializers.CharField(source="dataset_name", read_only=True)
    task = serializers.CharField(source="task.code", read_only=True)
    status = serializers.ChoiceField(
        choices=["receiving", "received", "completed"],
        read_only=True,
        help_text="receiving: bytes missing; received: all in, not yet completed; "
        "completed: the import job exists.",
    )
    chunk_max = serializers.SerializerMethodField(
        help_text="The largest chunk (one request body, REQUEST_MAX_BODY_BYTES), in bytes."
    )

    class Meta:
        model = UploadSession
        fields = [
            "id",
            "file_name",
            "file_format",
            "size",
            "offset",
            "sha256",
            "dataset",
            "task",
            "create_aspects",
            "status",
            "job",
            "chunk_max",
            "created_at",
            "expires_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.IntegerField())
    def get_chunk_max(self, obj: UploadSession) -> int:
        return chunk_limit()


class StartUploadSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """A resumable upload's start: the file (name, size, optional SHA-256) and the upload
    page's import options. The page's form checks it (format from the name, the size
    against IMPORT_MAX_FILE_BYTES, the dataset name, the rescale ranges)."""

    file_name = serializers.CharField(max_length=255, help_text="The file's name (.jsonl, .csv).")
    size = serializers.IntegerField(min_value=1, help_text="The whole file's size in bytes.")
    sha256 = serializers.RegexField(
        r"^([0-9a-fA-F]{64})?$",
        required=False,
        default="",
        allow_blank=True,
        help_text="The file's SHA-256 (64 hexadecimal digits), checked once it is complete.",
    )
    dataset = serializers.SlugField(max_length=100, help_text="A new or existing dataset's name.")
    task = TaskField(default=TaskKind.SUMMARIZATION, help_text="Task code.")
    create_aspects = serializers.BooleanField(default=False)
    widen_aspects = serializers.BooleanField(default=False)
    rescale = serializers.CharField(
        max_length=1000,
        required=False,
        default="",
        allow_blank=True,
        help_text="Rescale from stated ranges, e.g. informativeness=1:6, naturalness=1:6.",
    )

    too_large = False  # the declared size is above the limit: a 413, not a 400

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = dict(attrs)
        # a tool export's format (the upload page's Format select): read, not declared, so
        # far (the schema fuzz's draws change with a new field: see the w39 report)
        chosen = self.initial_data.get("format") if hasattr(self.initial_data, "get") else None
        if isinstance(chosen, str):
            data["format"] = chosen
        for flag in ("create_aspects", "widen_aspects"):
            if not attrs.get(flag):
                data.pop(flag, None)
        form = UploadSessionForm(data, user=self.context["request"].user)
        if not form.is_valid():
            self.too_large = form.too_large
            raise form_errors(form)
        return {**form.cleaned_data, "file_format": form.file_format}
