"""The disagreement review's queue and adjudicated values (studies.services.adjudication)."""

from __future__ import annotations

from rest_framework import serializers

from studies.api.serializers.types import StrictJsonTypes


class AdjudicationQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Which queue: an aspect of the study and a judge run of its dataset (a value that is
    not one is an error naming its parameter)."""

    aspect = serializers.RegexField(
        r"^[A-Za-z0-9_-]{1,32}$",
        required=False,
        help_text="An aspect's code (default: the study's first).",
    )
    run = serializers.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        required=False,
        help_text="The judge run (default: the dataset's newest with scores; 0: none, the "
        "humans' disagreement alone).",
    )


class AdjudicationItemSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """One output of the queue and how much the judge and the humans disagree on it."""

    output = serializers.IntegerField(source="output_id")
    humans = serializers.IntegerField(help_text="How many judgments the output has.")
    human = serializers.FloatField(
        help_text="The judgments' mean (a label aspect: the most frequent label's position)."
    )
    judge = serializers.FloatField(
        allow_null=True,
        help_text="The judge's score on the aspect's scale (a label aspect: its label's "
        "position); null: not scored, or no judge chosen.",
    )
    gap = serializers.FloatField(help_text="|judge − humans| as a share of the scale (0..1).")
    spread = serializers.FloatField(help_text="How much the humans disagree (0..1).")
    priority = serializers.FloatField(help_text="The larger of gap and spread.")
    reason = serializers.CharField()
    adjudicated = serializers.FloatField(allow_null=True)


class AdjudicationQueueSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """A study's queue for one aspect and one judge run, largest disagreement first."""

    aspect = serializers.CharField(help_text="The aspect's code.")
    run = serializers.IntegerField(allow_null=True, help_text="The judge run; null: none.")
    total = serializers.IntegerField()
    left = serializers.IntegerField(help_text="Outputs of the queue not adjudicated yet.")
    items = AdjudicationItemSerializer(many=True)


class AdjudicateSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """An adjudicated value: a point of the aspect's scale, or a label's position."""

    output = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    aspect = serializers.CharField(max_length=32, help_text="The aspect's code.")
    run = serializers.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        required=False,
        help_text="The judge run whose queue it comes from (0 or absent: none).",
    )
    value = serializers.FloatField(
        help_text="A point of a scale aspect's scale, or a label aspect's label position."
    )


class AdjudicationSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """A stored adjudication (a source of its own; the judgments stay as they were)."""

    output = serializers.IntegerField(source="output_id")
    aspect = serializers.CharField(source="aspect.code")
    value = serializers.FloatField()
    run = serializers.IntegerField(source="run_id", allow_null=True)
    adjudicator = serializers.CharField(source="adjudicator.username")
    updated_at = serializers.DateTimeField()
