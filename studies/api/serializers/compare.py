"""Two metric runs against each other: the query and the answer."""

from __future__ import annotations

from rest_framework import serializers


class CompareQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]
    a = serializers.IntegerField(min_value=1, help_text="The first run's id (the x axis).")
    b = serializers.IntegerField(min_value=1, help_text="The second run's id (the y axis).")


class ComparedRunSerializer(serializers.Serializer):  # type: ignore[type-arg]
    pk = serializers.IntegerField()
    label = serializers.CharField()


class CompareSerializer(serializers.Serializer):  # type: ignore[type-arg]
    a = ComparedRunSerializer()
    b = ComparedRunSerializer()
    n_outputs = serializers.IntegerField(help_text="outputs both runs scored")
    n_shown = serializers.IntegerField(
        help_text="points in the chart (a seeded sample beyond 1500)"
    )
    pearson = serializers.FloatField(allow_null=True)
    spearman = serializers.FloatField(allow_null=True)
    kendall = serializers.FloatField(allow_null=True, help_text="Kendall τ-b")
    chart = serializers.DictField(
        help_text="A Vega-Lite spec of the scatter (data.values: id, system, doc, x, y, href)."
    )
