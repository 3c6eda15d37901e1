"""A dataset's judge report card: the query and the answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from scoring.stats import Level, unsupported
from studies.services.analysis.params import COEFFICIENT_NAMES
from studies.services.analysis.report_card import COLUMNS
from studies.services.analysis.report_card.params import CONFIDENCES, DEFAULT_EPSILON

SORTS = [c.key for c in COLUMNS] + [f"-{c.key}" for c in COLUMNS]


class ReportCardQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The page's choices (a value that is not one is an error naming its parameter)."""

    level = serializers.ChoiceField(choices=[lv.value for lv in Level], default="sample")
    coef = serializers.ChoiceField(
        choices=sorted(COEFFICIENT_NAMES),
        default="spearman",
        help_text="The correlation with the humans, as the matrix computes it.",
    )
    eps = serializers.FloatField(
        min_value=0,
        max_value=0.99,
        default=DEFAULT_EPSILON,
        help_text="The alternative-annotator test's cost-benefit margin ε (the authors: 0.2 "
        "for experts, 0.15 for skilled annotators, 0.1 for crowd workers).",
    )
    ci = serializers.ChoiceField(
        choices=[f"{c:g}" for c in CONFIDENCES],
        default="0.95",
        help_text="The confidence level of every interval.",
    )
    aspects = serializers.RegexField(
        r"^([A-Za-z0-9_-]{1,32}(,[A-Za-z0-9_-]{1,32})*)?$",
        required=False,
        default="",
        allow_blank=True,
        help_text="Aspect codes, comma-separated (empty: every judged aspect).",
    )
    runs = serializers.ChoiceField(
        choices=["judges", "all"],
        default="judges",
        help_text="all: the reference-based baselines (ROUGE, BLEU, chrF, BERTScore) get "
        "rows too; sentinels never do.",
    )
    sort = serializers.ChoiceField(
        choices=SORTS,
        required=False,
        help_text="A column, best first (-column: the other way).",
    )
    retry = serializers.BooleanField(
        default=False,
        help_text="Compute it again after a failure (without it, a failed computation is "
        "answered with its error, and nothing is computed again for an hour).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        refusal = unsupported(COEFFICIENT_NAMES[attrs["coef"]], Level(attrs["level"]))
        if refusal is not None:
            raise serializers.ValidationError({"coef": refusal.message})
        return attrs


class ReportCardSerializer(serializers.Serializer):  # type: ignore[type-arg]
    params = serializers.DictField(help_text="What the card was computed with.")
    query = serializers.CharField(help_text="The same as the page's query string.")
    statistic = serializers.CharField(help_text="The correlation, e.g. Spearman ρ, sample-level.")
    coefficient_label = serializers.CharField()
    level = serializers.CharField()
    confidence = serializers.FloatField()
    epsilon = serializers.FloatField()
    aspects = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per aspect: the human ceiling, its annotators, the items three or more "
        "judged, and the annotators' agreement among themselves.",
    )
    rows = serializers.ListField(
        child=serializers.DictField(),
        help_text="One per judge run × aspect: correlation and interval beside the human "
        "ceiling, agreement (κ_w, AC1, α; how the judge's scores were put on the scale), "
        "the alternative-annotator test, the sentinel check, length bias, "
        "self-consistency, the change from its prompt variant, cost and time per 1,000 "
        "outputs, the verdict and links to the evidence.",
    )
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    links = serializers.DictField(child=serializers.CharField())
    seconds = serializers.FloatField()
