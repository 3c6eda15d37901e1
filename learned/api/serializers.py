"""Trained (learned) metrics: the training page's fields to start a job, and a job's
status, progress, pairs, results, configuration and split."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from learned.forms import MAX_SEED, SETUP_CHOICES, TrainForm
from learned.models import TrainedMetric
from learned.services.jobs import can_resume
from scoring.learned.pairs import DEFAULT_MARGIN
from studies.api.errors import form_errors
from studies.api.serializers.runs import form_data
from studies.api.serializers.types import StrictJsonTypes


class TrainedMetricCreateSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """The *Train a metric* page's form: same fields, same checks (the form validates)."""

    dataset = serializers.IntegerField(help_text="The target dataset's id.")
    aspect = serializers.IntegerField(
        help_text="The target aspect's id: one the dataset has judgments for."
    )
    setup = serializers.ChoiceField(
        choices=SETUP_CHOICES, default="single", help_text=TrainForm.base_fields["setup"].help_text
    )
    datasets = serializers.ListField(
        child=serializers.IntegerField(),
        default=list,
        help_text="Multi and cross only: ids of more datasets whose judged aspects join the training.",
    )
    backbone = serializers.CharField(
        default="default",
        max_length=500,
        help_text="'default' (SmolLM2-135M-Instruct), 'minilm' (all-MiniLM-L6-v2), an installed "
        "model's folder name or a hub id an admin allowed.",
    )
    mode = serializers.ChoiceField(
        choices=TrainedMetric.Mode.choices,
        default="head",
        help_text=TrainForm.base_fields["mode"].help_text,
    )
    margin = serializers.FloatField(default=DEFAULT_MARGIN, min_value=0, max_value=1000)
    seed = serializers.IntegerField(default=0, min_value=0, max_value=MAX_SEED)
    layer = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=1000,
        help_text="Features after the backbone's first N blocks; null: 12 for the default "
        "backbone, every block for the others.",
    )
    max_minutes = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0.1,
        max_value=7 * 24 * 60,
        help_text="Stop training after this long (the best epoch is kept); null: no limit.",
    )
    exclude_flagged = serializers.BooleanField(
        default=False, help_text="Leave out annotators flagged on gold items."
    )

    def validate_with_form(self, user: Any) -> TrainForm:
        """Run the page's form on the request (raises the form's errors)."""
        data = {k: v for k, v in self.validated_data.items() if v is not None}
        data["datasets"] = [str(d) for d in data.get("datasets", [])]
        if not data.get("exclude_flagged"):
            data.pop("exclude_flagged", None)  # an unchecked box is an absent field
        form = TrainForm(form_data(data), user=user)
        if not form.is_valid():
            raise form_errors(form)
        return form


class TrainedMetricSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    """A training job and, once it succeeded, the trained metric: score a dataset with it
    through ``POST /api/runs/`` with ``metric=learned`` and ``model=<id>``."""

    aspect_code = serializers.CharField(source="aspect.code", read_only=True)
    config = serializers.DictField(read_only=True)
    progress = serializers.DictField(read_only=True)
    pairs = serializers.DictField(read_only=True, help_text="Pairs per split and per task.")
    results = serializers.DictField(
        read_only=True,
        help_text="Test pairwise accuracy and sample-level Spearman, Base vs trained.",
    )
    curves = serializers.ListField(child=serializers.DictField(), read_only=True)
    split_sizes = serializers.SerializerMethodField()
    test_documents = serializers.SerializerMethodField()
    can_resume = serializers.SerializerMethodField()

    class Meta:
        model = TrainedMetric
        fields = [
            "id",
            "label",
            "dataset",
            "aspect",
            "aspect_code",
            "setup",
            "mode",
            "status",
            "progress",
            "pairs",
            "results",
            "curves",
            "config",
            "split_sizes",
            "test_documents",
            "checkpoint_sha256",
            "version",
            "error",
            "can_resume",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(
        serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))
    )
    def get_split_sizes(self, job: TrainedMetric) -> dict[str, dict[str, int]]:
        """Documents per split, per dataset: {dataset: {train, validation, test}}."""
        return {
            name: {part: len(keys) for part, keys in parts.items()}
            for name, parts in (job.split or {}).items()
        }

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_test_documents(self, job: TrainedMetric) -> list[str]:
        """The target dataset's test documents (their doc keys)."""
        return job.test_docs()

    def get_can_resume(self, job: TrainedMetric) -> bool:
        return can_resume(job)
