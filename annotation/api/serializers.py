"""Campaigns (researchers) and assignments (annotators)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.forms import MAX_DB_INT
from annotation.models import Assignment, Campaign
from annotation.services.answers import COMMENT_LENGTH, current_answers
from annotation.services.items import item_references
from studies.api.serializers.types import StrictJsonTypes


class CampaignSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    systems = serializers.ListField(child=serializers.CharField(), read_only=True)
    annotators = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    n_items = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = [
            "id",
            "study",
            "name",
            "mode",
            "aspects",
            "overlap",
            "selection",
            "systems",
            "sample_size",
            "seed",
            "show_references",
            "lease_seconds",
            "gold_threshold",
            "annotators",
            "status",
            "created_at",
            "n_items",
            "routing",
            "question_run_a",
            "question_run_b",
            "question_aspect",
        ]
        read_only_fields = fields

    def get_n_items(self, campaign: Campaign) -> int:
        return campaign.items.count()


class AnnotatorCampaignSerializer(CampaignSerializer):
    """What an annotator sees of a campaign: no other annotators, seed or gold settings."""

    class Meta(CampaignSerializer.Meta):
        fields = [
            "id",
            "name",
            "mode",
            "aspects",
            "show_references",
            "lease_seconds",
            "status",
            "created_at",
            "n_items",
        ]
        read_only_fields = fields


class CampaignCreateSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """The *New campaign* page's form (it validates; the same service creates)."""

    study = serializers.IntegerField()
    name = serializers.CharField(max_length=200)
    mode = serializers.ChoiceField(choices=Campaign.Mode.choices, default=Campaign.Mode.LIKERT)
    aspects = serializers.ListField(
        child=serializers.IntegerField(), min_length=1, help_text="Aspect ids."
    )
    overlap = serializers.IntegerField(default=3, min_value=1, max_value=50)
    selection = serializers.ChoiceField(choices=Campaign.Selection.choices, default="all")
    systems = serializers.ListField(child=serializers.CharField(), default=list)
    sample_size = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_DB_INT
    )
    seed = serializers.IntegerField(default=0, min_value=-MAX_DB_INT, max_value=MAX_DB_INT)
    show_references = serializers.BooleanField(default=False)
    annotators = serializers.ListField(
        child=serializers.CharField(), default=list, help_text="Usernames of annotator accounts."
    )
    lease_seconds = serializers.IntegerField(default=300, min_value=30, max_value=3600)
    gold_threshold = serializers.FloatField(default=0.7, min_value=0, max_value=1)
    routing = serializers.ChoiceField(choices=Campaign.Routing.choices, default="random")
    question_run_a = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_DB_INT,
        help_text="Informative routing: run A's id (a finished run of the study's dataset).",
    )
    question_run_b = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_DB_INT,
        help_text="Informative routing: run B's id.",
    )
    question_aspect = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_DB_INT,
        help_text="Informative routing: the aspect's id (one of the campaign's aspects).",
    )


class RoutingDocumentSerializer(serializers.Serializer):  # type: ignore[type-arg]
    document = serializers.IntegerField()
    doc_key = serializers.CharField()
    rank = serializers.IntegerField(help_text="Place in the queue's document order, 0 first.")
    score = serializers.FloatField(help_text="Drop in the question's variance if judged next.")
    judged = serializers.BooleanField()
    reason = serializers.CharField()


class RoutingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    routing = serializers.CharField()
    question = serializers.DictField(allow_null=True)
    estimate = serializers.DictField(
        allow_null=True, help_text="null until every band has two judged documents"
    )
    documents = RoutingDocumentSerializer(many=True)


class ProgressSerializer(serializers.Serializer):  # type: ignore[type-arg]
    annotators = serializers.ListField(child=serializers.DictField())
    items = serializers.DictField(child=serializers.IntegerField())
    aspects = serializers.ListField(child=serializers.DictField())
    skipped = serializers.ListField(child=serializers.DictField())
    comments = serializers.ListField(
        child=serializers.DictField(), help_text="The annotators' comments on items, newest first."
    )


class AgreementSerializer(serializers.Serializer):  # type: ignore[type-arg]
    agreement = serializers.DictField(
        allow_null=True,
        help_text="null while a worker computes it; with stale: true (and 202), the latest "
        "result, older than the latest answers, while a worker computes the current one",
    )


class AssignmentSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    campaign = serializers.IntegerField(source="item.campaign_id", read_only=True)
    item = serializers.IntegerField(source="item_id", read_only=True)
    content = serializers.SerializerMethodField()
    answers = serializers.SerializerMethodField()

    class Meta:
        model = Assignment
        fields = [
            "id",
            "campaign",
            "item",
            "status",
            "leased_at",
            "expires_at",
            "submitted_at",
            "skip_reason",
            "comment",
            "content",
            "answers",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField())
    def get_content(self, a: Assignment) -> dict[str, Any]:
        """What the item page shows: the source, the output(s) on their sides."""
        item = a.item
        outputs = [item.output_a] + ([item.output_b] if item.output_b_id else [])
        if item.output_b_id and not a.left_is_a:
            outputs.reverse()
        content: dict[str, Any] = {
            "source": item.document.source,
            "context": item.document.context,
            "outputs": [o.text for o in outputs],  # left first for pairs
            "aspects": [
                {
                    "id": x.pk,
                    "code": x.code,
                    "name": x.name,
                    "definition": x.definition,
                    "scale_min": x.scale_min,
                    "scale_max": x.scale_max,
                    "kind": x.kind,  # binary, categorical: answer with a label's position
                    "labels": list(x.labels or []),
                }
                for x in item.campaign.aspect_list()
            ],
        }
        if item.campaign.show_references:
            content["references"] = item_references(item)
        return content

    @extend_schema_field(serializers.DictField())
    def get_answers(self, a: Assignment) -> dict[str, Any]:
        return {str(k): v for k, v in current_answers(a).items()}


class SubmitSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    answers = serializers.DictField(
        help_text="Aspect id → a scale point (Likert; for a binary or categorical aspect "
        "the position of its label in its labels, from 0) or left / right / tie (pairwise)."
    )
    comment = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=COMMENT_LENGTH,
        help_text="An optional comment on the item (left as it is when omitted; empty clears it).",
    )


class SkipSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    reason = serializers.CharField(default="", allow_blank=True, max_length=500)
