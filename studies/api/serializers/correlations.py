"""Correlation matrices, drill-downs and paper layouts: the query and the answers."""

from __future__ import annotations

from rest_framework import serializers

from scoring.stats import Level
from studies.services.dashboards import COEFFICIENT_NAMES


class MatrixQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The page's choices (unknown values are an error here, not a silent default)."""

    level = serializers.ChoiceField(choices=[lv.value for lv in Level], default="sample")
    coef = serializers.ChoiceField(choices=sorted(COEFFICIENT_NAMES), default="spearman")
    ci = serializers.BooleanField(
        default=True, help_text="95% bootstrap intervals and significance (as the page)."
    )
    flagged = serializers.ChoiceField(
        choices=["include", "exclude"], default="include",
        help_text="exclude: leave out annotators flagged on gold items.",
    )  # fmt: skip


class ExportQuerySerializer(MatrixQuerySerializer):
    file_format = serializers.ChoiceField(choices=["csv", "json", "tex"], default="csv")


class CellSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.IntegerField()
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="95% bootstrap interval")
    high = serializers.FloatField(allow_null=True)
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    n_skipped = serializers.IntegerField()
    best = serializers.BooleanField()
    p_vs_best = serializers.FloatField(allow_null=True)
    below_best = serializers.BooleanField(help_text="significantly below the column's best")


class AspectRefSerializer(serializers.Serializer):  # type: ignore[type-arg]
    pk = serializers.IntegerField()
    code = serializers.CharField()
    name = serializers.CharField()


class ColumnSerializer(serializers.Serializer):  # type: ignore[type-arg]
    aspect = AspectRefSerializer()
    cells = CellSerializer(many=True)


class RunRefSerializer(serializers.Serializer):  # type: ignore[type-arg]
    pk = serializers.IntegerField()
    label = serializers.CharField()
    metric = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    setting = serializers.CharField(allow_blank=True)
    dimension = serializers.CharField(allow_blank=True)
    kind = serializers.CharField()
    status = serializers.CharField()
    aspect = serializers.CharField(allow_blank=True)


class MatrixSerializer(serializers.Serializer):  # type: ignore[type-arg]
    params = serializers.DictField()
    coefficient_label = serializers.CharField()
    runs = RunRefSerializer(many=True)
    columns = ColumnSerializer(many=True)
    intercorrelation = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True))
    )
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    seconds = serializers.FloatField()
    excluded_annotators = serializers.ListField(
        child=serializers.CharField(), help_text="Usernames left out (flagged on gold items)."
    )


class PendingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A large dataset's matrix is being computed by a worker: ask again later."""

    detail = serializers.CharField()
    progress = serializers.DictField(child=serializers.IntegerField(), allow_null=True)


class PaperSerializer(serializers.Serializer):  # type: ignore[type-arg]
    gptscore = serializers.DictField(help_text="GPTScore's layout (VAL/IST/IDM per model).")
    geval = serializers.DictField(help_text="G-Eval's ρ/τ table.")


class DrilldownSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.DictField()
    aspect = serializers.DictField()
    value = serializers.FloatField(allow_null=True)
    coefficient_label = serializers.CharField()
    level = serializers.CharField()
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_skipped = serializers.IntegerField()
    scatter = serializers.DictField()
    n_shown = serializers.IntegerField()
    disagreements = serializers.ListField(child=serializers.DictField())
    histogram = serializers.DictField(allow_null=True)
