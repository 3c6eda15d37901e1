"""A tuned run's evidence (``GET /api/runs/<id>/tuning/``): the tuner, the candidates and
their dev figures, the chosen one, the test Δ with its interval, the gap and the cost; and
what starts a tuning (``POST /api/runs/<id>/tune/``), its option fields derived from the
tuners' declared options."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.api.serializers.types import StrictJsonTypes
from studies.services.tuning.registry import names, tuner
from studies.services.tuning.types import COMMON_OPTIONS, Option


def option_field(tuner_name: str, option: Option) -> serializers.Field:  # type: ignore[type-arg]
    """The request field of a tuner's option (optional: absent, the tuner's default)."""
    common: dict[str, Any] = {
        "required": False,
        "allow_null": True,
        "help_text": f"{tuner_name}: {option.help} (default {option.default})",
    }
    if option.choices:
        return serializers.ChoiceField(choices=list(option.choices), **common)
    if option.type is int:
        return serializers.IntegerField(**common)
    if option.type is float:
        return serializers.FloatField(**common)
    return serializers.CharField(allow_blank=True, max_length=1000, **common)


def option_fields() -> dict[str, serializers.Field]:  # type: ignore[type-arg]
    """Every tuner's options as fields (an option two tuners declare: the first's), as
    ``manage.py tune_judge`` makes its flags."""
    fields: dict[str, serializers.Field] = {}  # type: ignore[type-arg]
    for name in names():
        for option in tuner(name).options:
            owner = "every tuner" if option in COMMON_OPTIONS else name
            fields.setdefault(option.name, option_field(owner, option))
    return fields


class TuneRequestSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """What starts a tuning: the aspect, the tuner, the study whose split to use, the
    seed and resamples of the test Δ, and the tuner's options (one field each, derived
    from the tuners' declarations)."""

    aspect = serializers.CharField(max_length=200, help_text="The aspect: its code or name.")
    tuner = serializers.ChoiceField(choices=names())
    study = serializers.IntegerField(
        required=False, allow_null=True, help_text="The study whose split to use."
    )
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1)
    resamples = serializers.IntegerField(default=1000, min_value=1, max_value=100_000)

    def options(self) -> dict[str, Any]:
        """The options given for the chosen tuner (another tuner's is refused)."""
        data = self.validated_data
        given = {k: data[k] for k in option_fields() if data.get(k) is not None}
        known = {o.name for o in tuner(data["tuner"]).options}
        other = sorted(set(given) - known)
        if other:
            raise serializers.ValidationError(
                {k: [f"{data['tuner']} has no option {k}"] for k in other}
            )
        return given

    def get_fields(self) -> dict[str, Any]:
        return {**super().get_fields(), **option_fields()}


class TuningCandidateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    label = serializers.CharField(help_text="Its settings as text, e.g. 'k=2, selection=worst'.")
    settings = serializers.DictField(help_text="What the tuner varied (k, selection, method …).")
    dev = serializers.FloatField(
        allow_null=True,
        help_text="The primary statistic on the dev outputs (null: not chosen on dev, or "
        "undefined there).",
    )
    chosen = serializers.BooleanField()
    examples = serializers.ListField(
        child=serializers.IntegerField(), help_text="The outputs shown as examples (few-shot)."
    )
    instructions = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        help_text="The candidate's evaluation criteria and steps (instruction search).",
    )


class TuningDevSerializer(serializers.Serializer):  # type: ignore[type-arg]
    source = serializers.CharField(
        help_text="dev (the split's dev documents) or tune-internal (a seeded part of tune)."
    )
    documents = serializers.IntegerField()
    outputs = serializers.IntegerField()
    start = serializers.FloatField(allow_null=True, help_text="The start judge on dev.")
    chosen = serializers.FloatField(allow_null=True, help_text="The chosen candidate on dev.")


class TuningDeltaSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Tuned minus start on the split's test documents, as measured at tuning time."""

    statistic = serializers.CharField(help_text="e.g. 'spearman (sample)' or 'mcc'.")
    start = serializers.FloatField(allow_null=True)
    tuned = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    alpha = serializers.FloatField()
    level = serializers.IntegerField(help_text="The interval's confidence, in percent.")
    resamples = serializers.IntegerField(help_text="Paired bootstrap resamples, by document.")
    n_undefined = serializers.IntegerField(help_text="Resamples where the Δ was undefined.")
    n_documents = serializers.IntegerField()
    n_outputs = serializers.IntegerField()


class TuningAltSideSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """One judge's alternative-annotator test on the test documents (the card's)."""

    passed = serializers.BooleanField(allow_null=True, required=False)
    winning_rate = serializers.FloatField(allow_null=True, required=False, help_text="ω")
    advantage_probability = serializers.FloatField(allow_null=True, required=False, help_text="ρ")
    epsilon = serializers.FloatField(allow_null=True, required=False)
    n_items = serializers.IntegerField(allow_null=True, required=False)
    problem = serializers.CharField(
        allow_null=True, help_text="Why the test was not run (null: it was)."
    )
    message = serializers.CharField(allow_blank=True)


class TuningAltTestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The alternative-annotator test before (the start run) and after (the tuned run),
    both on the split's test documents."""

    documents = serializers.IntegerField(help_text="Test documents.")
    start = TuningAltSideSerializer()
    tuned = TuningAltSideSerializer()


class TuningGapSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The chosen judge's figure where it was tuned, on test, and each minus test."""

    tune = serializers.FloatField(allow_null=True)
    dev = serializers.FloatField(allow_null=True)
    test = serializers.FloatField(allow_null=True)
    tune_gap = serializers.FloatField(allow_null=True, help_text="tune minus test")
    dev_gap = serializers.FloatField(allow_null=True, help_text="dev minus test")


class TuningCostSerializer(serializers.Serializer):  # type: ignore[type-arg]
    source = serializers.ChoiceField(
        choices=["served", "local"],
        allow_null=True,
        help_text="served: the endpoint's usage; local: prompts only, no cost; null: no "
        "judge was prompted.",
    )
    judge_requests = serializers.IntegerField(allow_null=True, help_text="Outputs rated.")
    requests = serializers.IntegerField(allow_null=True)
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    tokens = serializers.IntegerField(allow_null=True)
    cache_hits = serializers.IntegerField(allow_null=True)
    cost = serializers.FloatField(allow_null=True)


class TuningSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.IntegerField()
    label = serializers.CharField()
    tuner = serializers.CharField()
    tuner_label = serializers.CharField()
    options = serializers.DictField(help_text="The tuner's options as it resolved them.")
    seed = serializers.IntegerField(allow_null=True)
    start_run = serializers.IntegerField(allow_null=True)
    start_label = serializers.CharField(allow_null=True, help_text="null: since deleted.")
    split = serializers.IntegerField(allow_null=True)
    tuned_on_documents = serializers.IntegerField(allow_null=True)
    candidates = TuningCandidateSerializer(many=True)
    chosen = TuningCandidateSerializer(allow_null=True)
    dev = TuningDevSerializer(allow_null=True)
    test = TuningDeltaSerializer(allow_null=True)
    alt_test = TuningAltTestSerializer(
        allow_null=True, help_text="null: not recorded (a run tuned before it was)."
    )
    gap = TuningGapSerializer()
    cost = TuningCostSerializer()
    notes = serializers.ListField(child=serializers.CharField())
    provenance = serializers.DictField(
        help_text="The rest of the tuner's record (a calibration's map, few-shot examples …)."
    )
