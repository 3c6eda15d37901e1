"""Metric-corrected system means (PPI++): the query and the answer."""

from __future__ import annotations

from rest_framework import serializers

from studies.api.serializers.choices import RunAspectChoices


class PPIQuerySerializer(RunAspectChoices):
    """The page's choices; run and aspect default to the first run and judged aspect."""

    vs = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=512,
        help_text="The system the differences are taken against (default: the best by PPI).",
    )


class EstimateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    value = serializers.FloatField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="95% normal-approximation interval")
    high = serializers.FloatField(allow_null=True)


class SystemMeanSerializer(serializers.Serializer):  # type: ignore[type-arg]
    system = serializers.CharField()
    n_total = serializers.IntegerField(help_text="outputs the metric scored")
    n_judged = serializers.IntegerField(help_text="of them judged")
    no_interval = serializers.CharField(
        allow_blank=True,
        help_text="why the row shows no interval (too few judged outputs); '' when it does",
    )
    human = EstimateSerializer(help_text="the mean of the judged outputs")
    metric = EstimateSerializer(help_text="the calibrated metric's mean over all outputs")
    ppi = EstimateSerializer(help_text="PPI++")
    lam = serializers.FloatField(allow_null=True, help_text="the metric's weight λ in [0, 1]")
    variance_ratio = serializers.FloatField(allow_null=True, help_text="Var(human) / Var(PPI)")
    saved = serializers.FloatField(allow_null=True, help_text="1 − 1 / variance_ratio")
    effective_judged = serializers.FloatField(allow_null=True)


class DifferenceSerializer(serializers.Serializer):  # type: ignore[type-arg]
    system = serializers.CharField()
    n_documents = serializers.IntegerField()
    n_judged = serializers.IntegerField()
    no_interval = serializers.CharField(
        allow_blank=True,
        help_text="why the row shows no interval (too few judged outputs); '' when it does",
    )
    human = EstimateSerializer()
    ppi = EstimateSerializer()
    variance_ratio = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(help_text="the PPI++ interval excludes 0")


class PPITableSerializer(serializers.Serializer):  # type: ignore[type-arg]
    method = serializers.CharField()
    confidence = serializers.FloatField()
    query = serializers.DictField()
    run = serializers.DictField()
    aspect = serializers.DictField()
    n_outputs = serializers.IntegerField()
    n_scored = serializers.IntegerField()
    n_judged = serializers.IntegerField()
    calibration = serializers.DictField()
    systems = SystemMeanSerializer(many=True)
    reference = serializers.CharField(allow_null=True)
    differences = DifferenceSerializer(many=True)
    seconds = serializers.FloatField()
