"""Studies and their members (researchers, annotators)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from studies.api.serializers.types import StrictJsonTypes
from studies.models import Study, StudyMember
from studies.services.tuning.splits import split_summary


class SplitSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """A study's frozen split of its documents (read only; ``manage.py split`` makes it)."""

    seed = serializers.IntegerField()
    dev_share = serializers.FloatField()
    test_share = serializers.FloatField()
    stratified_by = serializers.CharField(help_text="The aspect's code; empty: unstratified.")
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="Documents per part: tune, dev, test."
    )
    created_at = serializers.DateTimeField()
    runs = serializers.IntegerField(help_text="Runs tuned or weighed on its tune documents.")


class StudySerializer(StrictJsonTypes, serializers.ModelSerializer):  # type: ignore[type-arg]
    """A study; created through ``studies.services.studies.create_study`` (its aspects
    must be of the dataset's task)."""

    owner = serializers.CharField(source="owner.username", read_only=True)
    campaigns = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    correlations = serializers.SerializerMethodField(
        help_text="The dataset's correlation matrix (runs against human judgments)."
    )
    split = serializers.SerializerMethodField(
        help_text="The study's tune / dev / test split of its documents (null: none yet)."
    )

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "dataset",
            "aspects",
            "description",
            "owner",
            "created_at",
            "campaigns",
            "correlations",
            "split",
        ]
        read_only_fields = ["created_at"]
        extra_kwargs = {"aspects": {"required": False}}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        datasets = self.context.get("datasets")
        if datasets is not None:
            self.fields["dataset"].queryset = datasets  # type: ignore[attr-defined]

    def get_correlations(self, study: Study) -> str:
        return reverse("api:correlations", args=[study.dataset_id])

    @extend_schema_field(SplitSerializer(allow_null=True))
    def get_split(self, study: Study) -> dict[str, Any] | None:
        summary = split_summary(study)
        return None if summary is None else SplitSerializer(summary).data


class AnnotatorAccountSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """A new annotator account for the study (needs the create_annotator_accounts
    permission)."""

    username = serializers.CharField(max_length=150)
    password = serializers.CharField(write_only=True, max_length=128)


class MemberSerializer(StrictJsonTypes, serializers.ModelSerializer):  # type: ignore[type-arg]
    user = serializers.SlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all()
    )

    class Meta:
        model = StudyMember
        fields = ["id", "user", "role"]
