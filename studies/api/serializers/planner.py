"""Sentinel baselines and the sample-size planner: requests and answers."""

from __future__ import annotations

from rest_framework import serializers

from studies.api.serializers.runs import RunSerializer
from studies.api.serializers.types import StrictJsonTypes


class SentinelRequestSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    aspect = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The aspect (code) the source-free GPTScore is prompted for (default: the most judged).",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Its model (default: that of the dataset's latest GPTScore run, else the default).",
    )
    seed = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=2**31 - 1,
        help_text="The random sentinel's seed.",
    )


class SentinelsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    created = RunSerializer(many=True, help_text="Sentinel runs started now.")
    existing = RunSerializer(
        many=True, help_text="Sentinel runs with the same configuration already there."
    )
    skipped = serializers.ListField(
        child=serializers.CharField(), help_text="Sentinels not added, and why."
    )


class PlannerQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]
    aspect = serializers.IntegerField(min_value=1, help_text="An aspect's id.")
    a = serializers.IntegerField(min_value=1, help_text="A metric run's id.")
    b = serializers.IntegerField(
        required=False, min_value=1, help_text="A second run to compare with."
    )
    level = serializers.ChoiceField(choices=["sample"], default="sample")
    coef = serializers.ChoiceField(
        choices=[
            "pearson",
            "spearman",
            "kendall",
            "kendall_c",
            "kendall_23",
            "acc23",
            "kendall_like",
        ],
        default="spearman",
    )
    average = serializers.ChoiceField(choices=["macro", "micro"], default="macro")
    seed = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**31 - 1)


class PlannerRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    n = serializers.IntegerField(help_text="documents")
    here = serializers.BooleanField(help_text="the dataset's own number of usable documents")
    half_width_a = serializers.FloatField(help_text="95% CI half-width of run a's correlation")
    half_width_b = serializers.FloatField(required=False)
    half_width_diff = serializers.FloatField(required=False, help_text="of a − b")
    power = serializers.FloatField(
        required=False, help_text="share of simulated studies with p < 0.05"
    )


class PlannerSerializer(serializers.Serializer):  # type: ignore[type-arg]
    params = serializers.DictField()
    label = serializers.CharField()
    aspect = serializers.CharField()
    a = serializers.DictField()
    b = serializers.DictField(allow_null=True)
    n_documents = serializers.IntegerField(
        help_text="documents every chosen run and the humans scored"
    )
    n_outputs = serializers.IntegerField()
    sizes = serializers.ListField(child=serializers.IntegerField())
    rows = PlannerRowSerializer(many=True)
    needed = serializers.IntegerField(
        allow_null=True, help_text="smallest size with 80% power; null: more than the largest"
    )
    target_power = serializers.FloatField()
    alpha = serializers.FloatField()
    seconds = serializers.FloatField()
