"""Metric runs: the run form's fields to start one (each run option's derived from the
runners' declarations), its status with progress."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from rest_framework import serializers

from studies.api.errors import form_errors
from studies.api.serializers.types import StrictJsonTypes
from studies.forms import RunForm, page_options
from studies.models import MetricRun
from studies.services.options import Option
from studies.services.runs import RunRequest, can_resume, eta, option_help, outcome, phase


def run_option_field(option: Option) -> serializers.Field:  # type: ignore[type-arg]
    """A run option as the runs API's field (absent: its declared default)."""
    common: dict[str, Any] = {"help_text": option_help(option)}
    if option.default is None:
        common.update(required=False, allow_null=True)
    else:
        common["default"] = option.default
    if option.choices:
        return serializers.ChoiceField(choices=option.choice_labels(), **common)
    if option.type is bool:
        return serializers.BooleanField(**common)
    if option.type is int:
        return serializers.IntegerField(
            min_value=option.minimum, max_value=option.maximum, **common
        )
    if option.type is float:
        return serializers.FloatField(min_value=option.minimum, max_value=option.maximum, **common)
    blank = option.default == ""
    return serializers.CharField(max_length=option.max_length, allow_blank=blank, **common)


class RunCreateSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    """The dataset page's *New metric run* form: same fields, same checks (the form
    validates), each run option's field derived from the runners' declarations (as the
    form's are). GPTScore and G-Eval start one run per aspect, ``rouge`` three runs."""

    dataset = serializers.IntegerField(help_text="The dataset's id.")
    metric = serializers.ChoiceField(  # the runs registry's, read for each serializer made
        choices=RunForm.base_fields["metric"].choices,  # type: ignore[attr-defined]
        default=RunRequest.metric,
    )
    aspects = serializers.ListField(
        child=serializers.IntegerField(),
        default=list,
        help_text="Aspect ids (GPTScore and G-Eval: at least one).",
    )

    def get_fields(self) -> dict[str, Any]:
        options = {o.name: run_option_field(o) for o in page_options()}
        return {**super().get_fields(), **options}

    def validate_with_form(self, dataset: Any) -> RunForm:
        """Run the page's form on the request (raises the form's errors)."""
        data = {k: v for k, v in self.validated_data.items() if k != "dataset" and v is not None}
        data["aspects"] = [str(a) for a in data.get("aspects", [])]
        form = RunForm(form_data(data), dataset=dataset)
        if not form.is_valid():
            raise form_errors(form)
        return form


def form_data(data: dict[str, Any]) -> Any:
    """API data as a page form's POST data (lists become repeated keys)."""
    query = QueryDict(mutable=True)
    for key, value in data.items():
        if isinstance(value, list):
            query.setlist(key, value)
        else:
            query[key] = str(value)
    return query


class RunSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    aspect = serializers.SerializerMethodField()
    outputs_per_s = serializers.SerializerMethodField()
    eta_seconds = serializers.SerializerMethodField()
    can_resume = serializers.SerializerMethodField()
    phase = serializers.SerializerMethodField(
        help_text='"loading model" ("connecting to the endpoint" on a served endpoint), '
        '"writing evaluation steps" or "scoring" while running; empty otherwise.'
    )
    is_partial = serializers.BooleanField(
        read_only=True, help_text="Ended without scoring every output (cancelled, failed)."
    )
    outcome = serializers.SerializerMethodField(help_text="What a cancelled or failed run kept.")
    config = serializers.DictField(read_only=True)
    provenance = serializers.DictField(read_only=True)
    timings = serializers.DictField(read_only=True)
    usage = serializers.DictField(
        read_only=True, help_text="A served run's requests, tokens, cost, retries, cache hits."
    )

    class Meta:
        model = MetricRun
        fields = [
            "id",
            "dataset",
            "metric",
            "label",
            "kind",
            "status",
            "done",
            "total",
            "outputs_per_s",
            "eta_seconds",
            "can_resume",
            "phase",
            "is_partial",
            "outcome",
            "error",
            "aspect",
            "config",
            "timings",
            "provenance",
            "usage",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_aspect(self, run: MetricRun) -> str | None:
        code = (run.config or {}).get("aspect")
        return str(code) if code else None

    def get_outputs_per_s(self, run: MetricRun) -> float | None:
        rate = (run.timings or {}).get("outputs_per_s")
        return float(rate) if rate else None

    def get_eta_seconds(self, run: MetricRun) -> float | None:
        return eta(run)

    def get_can_resume(self, run: MetricRun) -> bool:
        return can_resume(run)

    def get_phase(self, run: MetricRun) -> str:
        return phase(run)

    def get_outcome(self, run: MetricRun) -> str:
        return outcome(run)


class RunScoreSerializer(serializers.Serializer):  # type: ignore[type-arg]
    output = serializers.IntegerField(source="output_id")
    doc_key = serializers.CharField(source="output.document.doc_key")
    system_id = serializers.CharField(source="output.system_id")
    value = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    details = serializers.DictField()


class RunRenameSerializer(StrictJsonTypes, serializers.Serializer):  # type: ignore[type-arg]
    label = serializers.CharField(
        max_length=200, help_text="the new name; no other run of the dataset may have it"
    )
