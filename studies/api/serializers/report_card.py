"""A dataset's judge report card: the query and the answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from scoring.stats import Level, unsupported
from studies.services.analysis.params import COEFFICIENT_NAMES
from studies.services.analysis.report_card import COLUMNS
from studies.services.analysis.report_card.params import CONFIDENCES, DEFAULT_EPSILON
from studies.services.analysis.report_card.pieces.registry import PIECES
from studies.services.analysis.report_card.reference import HUMANS, REFERENCES

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
    reference = serializers.ChoiceField(
        choices=list(REFERENCES),
        default=HUMANS,
        help_text="What each judge is compared with: humans, the annotators' judgments; "
        "adjudicated, the disagreement review's adjudicated value of each output that has "
        "one (the study's on a study card, every study's of the dataset on a dataset card), "
        "the annotators' elsewhere.",
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


class CardTunedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Where a tuned run's row was computed: its split's test documents only."""

    split = serializers.IntegerField(help_text="The study split the run was tuned on.")
    tuned_on_documents = serializers.IntegerField(help_text="The split's tune and dev documents.")
    test_documents = serializers.IntegerField(help_text="The test documents the row is of.")
    replaced = serializers.BooleanField(
        help_text="The split was since replaced: the row is of every document, not held out."
    )
    text = serializers.CharField()


class CardRunSerializer(serializers.Serializer):  # type: ignore[type-arg]
    pk = serializers.IntegerField()
    label = serializers.CharField()
    metric = serializers.CharField()
    kind = serializers.CharField()
    model = serializers.CharField(allow_blank=True, allow_null=True)
    partial_run = serializers.BooleanField()
    tuned = CardTunedSerializer(
        allow_null=True,
        required=False,
        default=None,
        help_text="A tuned run (its configuration names a split): the row is computed on "
        "the split's test documents only. Null: every document.",
    )


class CardAspectSerializer(serializers.Serializer):  # type: ignore[type-arg]
    pk = serializers.IntegerField()
    code = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["scale", "binary", "categorical"])


class VerdictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    code = serializers.ChoiceField(choices=["can", "cannot", "unclear"])
    text = serializers.CharField()


class CardLinksSerializer(serializers.Serializer):  # type: ignore[type-arg]
    cell = serializers.CharField()
    diagnostics = serializers.CharField()
    run = serializers.CharField(allow_null=True)


def _row_serializer() -> type[serializers.Serializer]:  # type: ignore[type-arg]
    """The row's type: its own fields, then one per registered piece (its serializer;
    null where the piece says nothing of the judge)."""
    fields: dict[str, Any] = {
        "run": CardRunSerializer(),
        "aspect": CardAspectSerializer(),
        **{
            p.key: p.serializer(allow_null=True, help_text=p.help or None)  # type: ignore[call-arg]
            for p in PIECES
        },
        "links": CardLinksSerializer(),
        "verdict": VerdictSerializer(),
        "__doc__": "One judge run × aspect of the report card.",
    }
    return type("ReportCardRowSerializer", (serializers.Serializer,), fields)


ReportCardRowSerializer = _row_serializer()


class CardReferenceCountSerializer(serializers.Serializer):  # type: ignore[type-arg]
    adjudicated = serializers.IntegerField(help_text="Judged outputs with an adjudicated value.")
    outputs = serializers.IntegerField(help_text="Judged outputs.")


class CardReferenceSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What the judges were compared with."""

    reference = serializers.ChoiceField(choices=list(REFERENCES))
    study = serializers.IntegerField(
        allow_null=True,
        help_text="Whose adjudications: a study's, or null (every study's of the dataset; "
        "null too when the reference is the annotators').",
    )
    aspects = serializers.DictField(
        child=CardReferenceCountSerializer(),
        help_text="Per aspect code (the adjudicated reference only): how many of its judged "
        "outputs were compared with an adjudicated value.",
    )


class ReportCardSerializer(serializers.Serializer):  # type: ignore[type-arg]
    params = serializers.DictField(help_text="What the card was computed with.")
    reference = CardReferenceSerializer()
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
    rows = ReportCardRowSerializer(
        many=True,
        help_text="One per judge run × aspect: each piece of evidence (correlation and "
        "interval beside the human ceiling; a label aspect's MCC, κ, F1, TPR/TNR, "
        "prevalence and calibration; agreement; the alternative-annotator test; the "
        "sentinel check; length bias; self-consistency; position; the change from its "
        "prompt variant; cost and time per 1,000 outputs), the verdict and links.",
    )
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    links = serializers.DictField(child=serializers.CharField())
    seconds = serializers.FloatField()
