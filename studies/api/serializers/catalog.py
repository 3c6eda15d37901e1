"""Aspects and prompt templates with their versions (a write makes a new version)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.api.serializers.types import StrictJsonTypes, TaskField
from studies.models import Aspect, AspectVersion, PromptTemplate, PromptTemplateVersion
from studies.models.aspects import MAX_LABEL_LENGTH, MAX_LABELS


class VersionedSerializer(StrictJsonTypes, serializers.ModelSerializer):  # type: ignore[type-arg]
    """Writes through the model's own checks (``full_clean``: constraints, template
    safety) and records who changed it; the model's ``save`` writes the new version."""

    def _save(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        user = validated_data.pop("_changed_by", None)
        related = {f: validated_data.pop(f) for f in ("tasks",) if f in validated_data}
        for name, value in validated_data.items():
            setattr(instance, name, value)
        instance._changed_by = user
        instance.full_clean()
        instance.save()
        for name, value in related.items():
            getattr(instance, name).set(value)
        return instance

    def create(self, validated_data: dict[str, Any]) -> Any:
        return self._save(self.Meta.model(), validated_data)

    def update(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        return self._save(instance, validated_data)


class AspectVersionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    created_by = serializers.CharField(
        source="created_by.username", default=None, read_only=True, allow_null=True
    )
    anchors = serializers.DictField(child=serializers.CharField(), read_only=True)
    kind = serializers.ChoiceField(choices=Aspect.Kind.choices, read_only=True)
    labels = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = AspectVersion
        fields = [
            "version",
            "name",
            "definition",
            "scale_min",
            "scale_max",
            "anchors",
            "kind",
            "labels",
            "positive",
            "ordered",
            "created_at",
            "created_by",
        ]


class AspectSerializer(VersionedSerializer):
    """An aspect; ``kind`` says what a judgment is: a number on ``scale_min..scale_max``
    (``scale``) or one of ``labels`` (``binary``, with ``positive``; ``categorical``,
    ``ordered`` or not), stored as the label's index. A label aspect's scale is
    ``0..len(labels) - 1``, set from its labels. Once judged, its kind is fixed and the
    labels its judgments use keep their places (a 400 says why)."""

    tasks = TaskField(many=True, required=False)
    anchors = serializers.DictField(child=serializers.CharField(), required=False)
    labels = serializers.ListField(
        child=serializers.CharField(max_length=MAX_LABEL_LENGTH),
        required=False,
        max_length=MAX_LABELS,
        help_text="Binary and categorical aspects: the labels in order; a judgment stores "
        "its label's index.",
    )
    versions = AspectVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Aspect
        fields = [
            "id",
            "code",
            "name",
            "key",
            "aliases",
            "owner",
            "definition",
            "scale_min",
            "scale_max",
            "anchors",
            "kind",
            "labels",
            "positive",
            "ordered",
            "tasks",
            "source",
            "version",
            "updated_at",
            "versions",
        ]
        read_only_fields = ["key", "aliases", "owner", "version", "updated_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        low = attrs.get("scale_min", getattr(self.instance, "scale_min", 1))
        high = attrs.get("scale_max", getattr(self.instance, "scale_max", 5))
        kind = attrs.get("kind", getattr(self.instance, "kind", Aspect.Kind.SCALE))
        if kind == Aspect.Kind.SCALE and low >= high:  # labels set a label aspect's scale
            raise serializers.ValidationError({"scale_max": ["Must be above scale_min."]})
        # an admin's write makes or changes an aspect of its owner (shared when new):
        # codes and names are unique per owner, which the field's own checks cannot say
        owner_id = getattr(self.instance, "owner_id", None)
        others = Aspect.objects.filter(owner_id=owner_id).exclude(
            pk=getattr(self.instance, "pk", None)
        )
        for field in ("code", "name"):
            if field in attrs and others.filter(**{f"{field}__iexact": attrs[field]}).exists():
                raise serializers.ValidationError({field: [f"An aspect with this {field} exists."]})
        return attrs


class TemplateVersionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    created_by = serializers.CharField(
        source="created_by.username", default=None, read_only=True, allow_null=True
    )

    class Meta:
        model = PromptTemplateVersion
        fields = ["version", "text", "target", "created_at", "created_by"]


class TemplateSerializer(VersionedSerializer):
    task = TaskField()
    versions = TemplateVersionSerializer(many=True, read_only=True)

    class Meta:
        model = PromptTemplate
        fields = [
            "id",
            "task",
            "aspect",
            "dimension",
            "kind",
            "setting",
            "variant",
            "text",
            "target",
            "source",
            "notes",
            "version",
            "updated_at",
            "versions",
        ]
        read_only_fields = ["version", "updated_at"]
