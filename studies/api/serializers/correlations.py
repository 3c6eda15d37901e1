"""Correlation matrices, drill-downs and paper layouts: the query and the answers."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from scoring.stats import Average, Level, unsupported
from studies.api.serializers.choices import JudgmentChoices
from studies.services.analysis.params import AVERAGES, COEFFICIENT_NAMES, DEFAULT_MIN_COVERAGE

# Which query parameter to change when a combination names no statistic.
_PARAMETER_OF = {"coefficient": "coef", "tie_calibration": "ties", "average": "average"}


class MatrixQuerySerializer(JudgmentChoices):
    """The page's choices (unknown values, and statistics asked where they do not
    exist, are an error here, not a silent default)."""

    level = serializers.ChoiceField(choices=[lv.value for lv in Level], default="sample")
    coef = serializers.ChoiceField(
        choices=sorted(COEFFICIENT_NAMES),
        default="spearman",
        help_text="acc23, kendall_23 and kendall_like exist at sample and dataset level; "
        "spa at system level only.",
    )
    average = serializers.ChoiceField(
        choices=list(AVERAGES),
        default="macro",
        help_text="Sample level: documents weighted equally (macro) or by their scored "
        "outputs (micro; Kendall-like: by its counted pairs).",
    )
    ties = serializers.ChoiceField(
        choices=["exact", "calibrate"],
        default="exact",
        help_text="calibrate (acc23, kendall_23): metric differences up to the ε that "
        "maximises the statistic count as ties; each cell reports its ε.",
    )
    ci = serializers.BooleanField(
        default=True, help_text="95% bootstrap intervals and significance (as the page)."
    )
    source = serializers.RegexField(
        r"^((import|campaign):[0-9]{1,12}|file:[^\x00-\x1f]{1,255})?$",
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,  # a file name is taken as given
        help_text="Whose judgments make the human side: empty (all), import:<import job id> "
        "(one uploaded file), file:<file name> (a file imported by the command) "
        "or campaign:<campaign id> (one campaign's answers).",
    )
    mincov = serializers.FloatField(
        min_value=0,
        max_value=100,
        default=round(DEFAULT_MIN_COVERAGE * 100, 6),
        help_text="Coverage threshold in percent: a run that scored less of a column's "
        "judged outputs is marked partial, not ranked and never best.",
    )
    retry = serializers.BooleanField(
        default=False,
        help_text="Compute it again after a failure (without it, a failed computation is "
        "answered with its error, and nothing is computed again for an hour).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        refusal = unsupported(
            COEFFICIENT_NAMES[attrs["coef"]],
            Level(attrs["level"]),
            average=Average(attrs["average"]),
            tie_calibration=attrs["ties"] == "calibrate",
        )
        if refusal is not None:
            raise serializers.ValidationError({_PARAMETER_OF[refusal.option]: refusal.message})
        return attrs


class ExportQuerySerializer(MatrixQuerySerializer):
    file_format = serializers.ChoiceField(choices=["csv", "json", "tex"], default="csv")


class SentinelFailSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.IntegerField(help_text="the sentinel run")
    label = serializers.CharField()
    p = serializers.FloatField(help_text="one-sided paired bootstrap p that the metric beats it")
    n = serializers.IntegerField(help_text="the judged outputs both scored, which p compares")


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
    p_vs_best = serializers.FloatField(
        allow_null=True, help_text="one-sided paired bootstrap p that the best is better"
    )
    below_best = serializers.BooleanField(help_text="significantly below the column's best")
    rank = serializers.IntegerField(
        allow_null=True,
        help_text="significance cluster in the column (WMT's ranks); null without intervals",
    )
    epsilon = serializers.FloatField(
        allow_null=True, help_text="with tie calibration: the metric tie threshold ε"
    )
    coverage_outputs = serializers.IntegerField(help_text="judged outputs the run scored")
    coverage_documents = serializers.IntegerField(help_text="documents of those outputs")
    judged_outputs = serializers.IntegerField(help_text="outputs judged on this aspect")
    judged_documents = serializers.IntegerField(help_text="documents with a judged output")
    coverage = serializers.FloatField(help_text="coverage_outputs / judged_outputs")
    partial = serializers.BooleanField(
        help_text="below the coverage threshold (mincov): not ranked, never best"
    )
    sentinel = serializers.BooleanField(
        help_text="a sentinel baseline (length, random, source-free GPTScore): never ranked or best"
    )
    fails_sentinel = SentinelFailSerializer(
        allow_null=True,
        help_text="the sentinel this metric does not beat significantly "
        "(the one with the largest one-sided paired bootstrap p > 0.05); null if it beats them all",
    )
    in_sample = serializers.BooleanField(
        required=False,
        help_text="a learned metric read on documents it was trained on: not ranked, never best",
    )
    sentinels_pending = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="sentinels that mark nothing yet: not finished or below the coverage threshold",
    )
    n_shared_with_best = serializers.IntegerField(
        allow_null=True,
        help_text="outputs scored by both this run and the best, on which p_vs_best compares them",
    )


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
    sentinel = serializers.BooleanField(help_text="a sentinel baseline")
    partial_run = serializers.BooleanField(
        default=False,
        help_text="a computed run that has not scored every output (running, cancelled or failed)",
    )


class AnnotatorCeilingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    annotator = serializers.CharField(help_text="username, or 'file <name>' for an import")
    value = serializers.FloatField(allow_null=True)
    n_outputs = serializers.IntegerField(help_text="its outputs judged by someone else too")


class CeilingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """An aspect's human ceiling: each annotator against the mean of the others."""

    aspect = serializers.CharField()
    value = serializers.FloatField(allow_null=True, help_text="mean over the annotators")
    n_annotators = serializers.IntegerField()
    n_overlapping = serializers.IntegerField()
    per_annotator = AnnotatorCeilingSerializer(many=True)
    reason = serializers.CharField(allow_null=True, help_text="why value is null")


class MatrixSerializer(serializers.Serializer):  # type: ignore[type-arg]
    params = serializers.DictField()
    coefficient_label = serializers.CharField()
    runs = RunRefSerializer(many=True)
    average_rank = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="Each run's rank averaged over the aspects (aligned with runs).",
    )
    columns = ColumnSerializer(many=True)
    intercorrelation = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True))
    )
    intercorrelation_label = serializers.CharField()
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    seconds = serializers.FloatField()
    ceiling = CeilingSerializer(
        many=True,
        required=False,
        help_text="The human ceiling per column (leave one annotator out, same statistic).",
    )
    excluded_annotators = serializers.ListField(
        child=serializers.CharField(), help_text="Usernames left out (flagged on gold items)."
    )


class PendingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A large dataset's matrix is being computed by a worker: ask again later."""

    detail = serializers.CharField()
    progress = serializers.DictField(child=serializers.IntegerField(), allow_null=True)


class ComputationFailedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Computing the matrix or the report card failed (``retry=true`` computes it again)."""

    detail = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    error_id = serializers.CharField(help_text="The id the server's log has the details under.")
    failed_at = serializers.CharField()


class PaperSerializer(serializers.Serializer):  # type: ignore[type-arg]
    gptscore = serializers.DictField(help_text="GPTScore's layout (VAL/IST/IDM per model).")
    geval = serializers.DictField(help_text="G-Eval's ρ/τ table.")
    ranks = serializers.DictField(help_text="Significance clusters per aspect and average rank.")


class DrilldownSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run = serializers.DictField()
    aspect = serializers.DictField()
    value = serializers.FloatField(allow_null=True)
    coefficient_label = serializers.CharField()
    epsilon = serializers.FloatField(allow_null=True)
    level = serializers.CharField()
    n_outputs = serializers.IntegerField()
    n_documents = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    n_skipped = serializers.IntegerField()
    scatter = serializers.DictField(
        help_text="A Vega-Lite spec: the system means at system level, else the outputs "
        "(data.values: id, system, doc, x = metric, y = human, href)."
    )
    system_points = serializers.ListField(
        child=serializers.DictField(),
        allow_null=True,
        help_text="At system level: each system's mean metric (x) and human (y) score over n outputs.",
    )
    bars = serializers.DictField(
        help_text="A Vega-Lite spec: per-system mean metric and human scores with 95% CIs."
    )
    n_shown = serializers.IntegerField()
    disagreements = serializers.ListField(child=serializers.DictField())
    histogram = serializers.DictField(
        allow_null=True, help_text="Sample level: n, mean, median and a Vega-Lite chart."
    )
