"""A dataset's diagnostics (length bias, per-system and per-document agreement)."""

from __future__ import annotations

from rest_framework import serializers

from scoring.stats import Level
from studies.api.serializers.choices import RunAspectChoices


class DiagnosticsQuerySerializer(RunAspectChoices):
    """The page's choices; run and aspect default to the first run and judged aspect."""

    level = serializers.ChoiceField(choices=[lv.value for lv in Level], default="sample")
    coef = serializers.ChoiceField(
        choices=["spearman", "pearson", "kendall"],
        default="spearman",
        help_text="Length bias uses Pearson's r for pearson, else Spearman's ρ (a partial "
        "correlation exists for these); within documents: Spearman's ρ for "
        "pearson and spearman, Kendall τ-b for kendall.",
    )


class DiagnosticsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    runs = serializers.ListField(child=serializers.DictField(), help_text="The run choices.")
    aspects = serializers.ListField(child=serializers.DictField(), help_text="The aspects.")
    run = serializers.IntegerField(allow_null=True, help_text="The chosen run's id.")
    aspect = serializers.IntegerField(allow_null=True, help_text="The chosen aspect's id.")
    level = serializers.CharField()
    length = serializers.DictField(
        help_text="Each aspect's and run's correlation with output length (whitespace "
        "tokens), and each run × aspect correlation raw and with length partialled out."
    )
    agreement = serializers.DictField(
        allow_null=True,
        help_text="For the chosen run and aspect: systems by rank gap (largest first) and "
        "the documents with the lowest within-document correlation, with their outputs.",
    )
