"""A label aspect's statistics (binary: pass/fail; categorical): the judge's confusion
matrix against the annotators, accuracy, Cohen's κ (weighted for ordered labels) with its
base rates, MCC, macro-F1, per label recall, precision and F1 (a binary aspect's TPR,
TNR, precision and F1 of the positive label), each with its interval by document beside
the annotators' own (the human ceiling: the same statistic among them); a binary
aspect's prevalence by the annotators and by the judge with the Rogan–Gladen correction
and PPI++; and, where the judge stored a distribution over the labels
(``details["distribution"]``, or ``details["p_positive"]`` on a binary aspect), its
calibration (ECE with the reliability diagram's bins, MCE, Brier). The primary statistic
is MCC on a binary aspect, κ on a categorical one (:mod:`scoring.stats.labels`,
:mod:`~scoring.stats.prevalence`, :mod:`~scoring.stats.calibration`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from rest_framework import serializers

from scoring.stats.calibration import calibration
from scoring.stats.label_tables import LabelSet
from scoring.stats.labels import human_ceiling, label_agreement
from scoring.stats.prevalence import prevalence
from studies.models import MetricRun, MetricScore
from studies.services.analysis.label_cells import (
    PRIMARY,
    estimate,
    judge_problem,
    label_codes,
    label_set,
    statistics,
)
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import (
    CardEstimateSerializer,
    Column,
    Export,
    Piece,
    Primary,
    Row,
)
from studies.services.analysis.report_card.thresholds import threshold_labels
from studies.services.csvfile import number

NO_DISTRIBUTION = "the judge stored no distribution over the labels"
_estimate, _statistics = estimate, statistics


def distributions(run: MetricRun, output_ids: np.ndarray, labels: LabelSet) -> np.ndarray | None:
    """The judge's stored distributions (outputs × labels, NaN rows where none), from
    ``details["distribution"]`` (label → probability; renormalised over the labels) or a
    binary aspect's ``details["p_positive"]``; None when the run stored none (an
    imported run never does)."""
    if run.kind == MetricRun.Kind.IMPORTED:
        return None
    stored = MetricScore.objects.filter(
        run=run, details__has_any_keys=["distribution", "p_positive"]
    ).values_list("output_id", "details")
    index = {str(label): k for k, label in enumerate(labels.labels)}
    found = np.full((output_ids.size, labels.q), np.nan)
    any_row = False
    for output, details in stored.iterator(chunk_size=5000):
        where = int(np.searchsorted(output_ids, output))
        if where >= output_ids.size or output_ids[where] != output:
            continue
        row = _row(details or {}, index, labels)
        if row is not None:
            found[where], any_row = row, True
    return found if any_row else None


def _row(details: dict[str, Any], index: dict[str, int], labels: LabelSet) -> np.ndarray | None:
    shares = details.get("distribution")
    row = np.zeros(labels.q)
    if isinstance(shares, dict) and shares:
        for key, value in shares.items():
            k = index.get(str(key).strip())
            if k is None and str(key).strip().isdigit() and int(key) < labels.q:
                k = int(key)  # written as the label's position
            if k is not None and value is not None:
                row[k] += float(value)
    elif details.get("p_positive") is not None and labels.positive_index is not None:
        p = float(details["p_positive"])
        row[labels.positive_index], row[1 - labels.positive_index] = p, 1.0 - p
    total = row.sum()
    if not np.isfinite(total) or total <= 0 or (row < 0).any():
        return None
    return row / total


def compute(inp: RowInput) -> Row | None:
    aspect = inp.aspect
    if aspect.kind == "scale" or len(aspect.labels) < 2:
        return None
    labels, q = label_set(aspect), len(aspect.labels)
    base = {"kind": aspect.kind, "labels": list(aspect.labels), "positive": aspect.positive}
    base["primary"] = PRIMARY[aspect.kind][0]
    # the judge is compared with the card's reference (the annotators' answers, read as
    # the adjudicated label on an adjudicated output); the annotators' own agreement and
    # the alternative-annotator test stay the annotators'
    judge, humans = inp.metric, label_codes(inp.reference_humans, q)
    answers = label_codes(inp.humans, q)
    c = inp.context
    problem = judge_problem(judge, q)
    threshold = None
    if problem and labels.is_binary:  # a numeric judge: labels through a threshold
        judge, threshold = threshold_labels(
            judge, humans, c.frame.doc_codes, c.frame.output_ids, labels, c.split
        )
        base["threshold"] = threshold
        reasons = {t["reason"] for t in threshold["thresholds"] if t["reason"]}
        problem = None
        if not threshold["n_outputs_evaluated"]:
            problem = f"no threshold labels an output on {threshold['split']}: " + (
                "; ".join(sorted(reasons)) or "no evaluated document has a score"
            )
    if problem:
        return base | {"problem": problem}
    inp.scratch["labels"] = {"judge": judge, "humans": answers}
    confidence = c.params.confidence
    among = inp.shared.get("labels")
    if among is None and not np.array_equal(humans, answers, equal_nan=True):
        ceiling = human_ceiling(answers, c.docs, labels, plan=c.doc_plan, confidence=confidence)
        among = inp.shared.setdefault("labels", _statistics(ceiling))
    found = label_agreement(
        judge,
        humans,
        c.docs,
        labels,
        plan=c.doc_plan,
        confidence=confidence,
        annotator_intervals=among is None,
    )
    human = among if among is not None else _statistics(found.human)
    inp.shared.setdefault("labels", human)
    result = base | {
        "problem": None,
        "n_items": found.n_items,
        "n_human_items": found.n_human_items,
        "n_pairs": found.judge.n_pairs,
        "judge": _statistics(found.judge),
        "human": human,
        "confusion": found.judge.table.tolist(),  # rows: the annotators; columns: the judge
    }
    p = distributions(inp.run, c.frame.output_ids, labels)
    if labels.is_binary:
        positive = None if p is None else p[:, labels.positive_index]
        result["prevalence"] = _prevalence(judge, humans, labels, positive, inp)
    result["calibration"] = (
        {"problem": NO_DISTRIBUTION} if p is None else _calibration(p, humans, labels, inp)
    )
    return result


def _prevalence(
    judge: np.ndarray,
    humans: np.ndarray,
    labels: LabelSet,
    positive: np.ndarray | None,
    inp: RowInput,
) -> dict[str, Any]:
    c = inp.context
    found = prevalence(
        judge,
        humans,
        c.docs,
        labels,
        probability=positive,
        plan=c.doc_plan,
        confidence=c.params.confidence,
    )
    names = ("human", "judge", "sensitivity", "specificity", "corrected", "ppi")
    return {name: _estimate(getattr(found, name)) for name in names} | {
        "n_judged": found.n_judged,
        "n_labelled": found.n_labelled,
        "n_both": found.n_both,
    }


def _calibration(
    p: np.ndarray, humans: np.ndarray, labels: LabelSet, inp: RowInput
) -> dict[str, Any]:
    c = inp.context
    found = calibration(p, humans, c.docs, labels, plan=c.doc_plan, confidence=c.params.confidence)
    return {
        "problem": None,
        "target": found.target,
        "ece": _estimate(found.ece),
        "mce": _estimate(found.mce),
        "brier": _estimate(found.brier),
        "n_items": found.n_items,
        "n_pairs": found.n_pairs,
        "bins": [
            {
                "low": b.low,
                "high": b.high,
                "n": b.n,
                "confidence": num(b.confidence),
                "observed": num(b.observed),
            }
            for b in found.bins
        ],
    }


def primary(row: Row, statistic: str) -> Primary | None:
    """A label aspect's: MCC (binary) or κ (categorical), beside the annotators' own."""
    found = row.get("labels")
    if not found:
        return None
    if found.get("problem"):
        return Primary(PRIMARY[found["kind"]][1], None, None, None, None, reason=found["problem"])
    key, name = PRIMARY[found["kind"]]
    judge, human = found["judge"][key] or {}, found["human"][key] or {}
    return Primary(
        name,
        judge.get("value"),
        judge.get("low"),
        judge.get("high"),
        human.get("value"),
        human.get("reason"),
        judge.get("reason"),
    )


def value(row: Row, side: str, name: str) -> float | None:
    found = row.get("labels") or {}
    return ((found.get(side) or {}).get(name) or {}).get("value")


def _primary_value(row: Row) -> float | None:
    found = row.get("labels") or {}
    return value(row, "judge", PRIMARY[found["kind"]][0]) if found.get("judge") else None


def _f1(row: Row) -> float | None:
    found = row.get("labels") or {}
    return value(row, "judge", "positive_f1" if found.get("kind") == "binary" else "macro_f1")


def _prevalence_value(row: Row, name: str) -> float | None:
    return ((row.get("labels") or {}).get("prevalence") or {}).get(name, {}).get("value")


def _ece(row: Row) -> float | None:
    return (((row.get("labels") or {}).get("calibration") or {}).get("ece") or {}).get("value")


class CardPerLabelSerializer(serializers.Serializer):  # type: ignore[type-arg]
    label = serializers.CharField()
    recall = CardEstimateSerializer()
    precision = CardEstimateSerializer()
    f1 = CardEstimateSerializer()


class CardLabelStatisticsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    accuracy = CardEstimateSerializer()
    kappa = CardEstimateSerializer(help_text="Cohen's κ (weighted for ordered labels).")
    mcc = CardEstimateSerializer()
    macro_f1 = CardEstimateSerializer()
    majority_share = CardEstimateSerializer(help_text="Base rate: always the majority label.")
    chance_agreement = CardEstimateSerializer(help_text="κ's expected agreement.")
    tpr = CardEstimateSerializer(required=False, help_text="Binary: recall of the positive label.")
    tnr = CardEstimateSerializer(required=False, help_text="Binary: recall of the negative label.")
    positive_precision = CardEstimateSerializer(required=False)
    positive_f1 = CardEstimateSerializer(required=False)
    per_label = CardPerLabelSerializer(many=True)


class CardPrevalenceSerializer(serializers.Serializer):  # type: ignore[type-arg]
    human = CardEstimateSerializer()
    judge = CardEstimateSerializer()
    sensitivity = CardEstimateSerializer()
    specificity = CardEstimateSerializer()
    corrected = CardEstimateSerializer(help_text="Rogan–Gladen: the judge's, errors undone.")
    ppi = CardEstimateSerializer(help_text="PPI++ of the annotators' prevalence.")
    n_judged = serializers.IntegerField()
    n_labelled = serializers.IntegerField()
    n_both = serializers.IntegerField()


class CardBinSerializer(serializers.Serializer):  # type: ignore[type-arg]
    low = serializers.FloatField()
    high = serializers.FloatField()
    n = serializers.FloatField()
    confidence = serializers.FloatField(allow_null=True)
    observed = serializers.FloatField(allow_null=True)


class CardCalibrationSerializer(serializers.Serializer):  # type: ignore[type-arg]
    problem = serializers.CharField(allow_null=True)
    target = serializers.ChoiceField(choices=["positive", "top_label"], required=False)
    ece = CardEstimateSerializer(required=False)
    mce = CardEstimateSerializer(required=False)
    brier = CardEstimateSerializer(required=False)
    n_items = serializers.IntegerField(required=False)
    n_pairs = serializers.IntegerField(required=False)
    bins = CardBinSerializer(many=True, required=False, help_text="The reliability diagram.")


class CardCutSerializer(serializers.Serializer):  # type: ignore[type-arg]
    value = serializers.FloatField(allow_null=True, help_text="null: no cut (see reason)")
    higher_is_positive = serializers.BooleanField()
    n_positive = serializers.IntegerField(help_text="Positive outputs it was chosen on.")
    n_negative = serializers.IntegerField()
    statistic = serializers.FloatField(allow_null=True, help_text="The criterion there.")
    reason = serializers.CharField(allow_null=True)
    describe = serializers.CharField()


class CardThresholdSerializer(serializers.Serializer):  # type: ignore[type-arg]
    split = serializers.CharField(help_text="The declared split the threshold was chosen on.")
    split_kind = serializers.ChoiceField(
        choices=["study", "halves"],
        help_text="study: chosen on its split's tune documents, evaluated on its test ones; "
        "halves: cross-fitted seeded document halves.",
    )
    criterion = serializers.CharField()
    thresholds = CardCutSerializer(many=True, help_text="One per fold.")
    n_documents_chosen_on = serializers.IntegerField()
    n_documents_evaluated = serializers.IntegerField(
        help_text="Documents the judge's labels are evaluated on (none chosen on by their cut)."
    )
    n_outputs_evaluated = serializers.IntegerField()


class CardLabelsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    kind = serializers.ChoiceField(choices=["binary", "categorical"])
    labels = serializers.ListField(child=serializers.CharField())
    positive = serializers.CharField(allow_blank=True)
    primary = serializers.ChoiceField(
        choices=["mcc", "kappa"], help_text="The verdict's statistic: MCC binary, κ categorical."
    )
    problem = serializers.CharField(allow_null=True)
    n_items = serializers.IntegerField(required=False)
    n_human_items = serializers.IntegerField(required=False)
    n_pairs = serializers.FloatField(required=False)
    judge = CardLabelStatisticsSerializer(required=False)
    human = CardLabelStatisticsSerializer(required=False, help_text="Among the annotators.")
    confusion = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        required=False,
        help_text="Rows: the annotators' labels; columns: the judge's.",
    )
    prevalence = CardPrevalenceSerializer(required=False)
    calibration = CardCalibrationSerializer(required=False)
    threshold = CardThresholdSerializer(
        required=False,
        help_text="A numeric judge on a binary aspect: the threshold its labels come from.",
    )


HEADER = (
    "label_primary",
    "label_primary_value",
    "label_primary_low",
    "label_primary_high",
    "label_primary_human",
    "mcc",
    "mcc_low",
    "mcc_high",
    "human_mcc",
    "kappa",
    "kappa_low",
    "kappa_high",
    "human_kappa",
    "f1",
    "f1_low",
    "f1_high",
    "human_f1",
    "accuracy",
    "majority_share",
    "tpr",
    "tpr_low",
    "tpr_high",
    "tnr",
    "tnr_low",
    "tnr_high",
    "human_prevalence",
    "judge_prevalence",
    "rogan_gladen_prevalence",
    "rogan_gladen_low",
    "rogan_gladen_high",
    "ece",
    "ece_low",
    "ece_high",
    "brier",
    "confusion_matrix",
    "threshold_split",
    "threshold_documents_evaluated",
)


def _values(row: Row) -> list[Any]:
    found = row.get("labels") or {}
    cut = found.get("threshold") or {}
    split = [cut.get("split", ""), cut.get("n_documents_evaluated", "")]
    if not found.get("judge"):
        return [found.get("primary", "")] + [""] * (len(HEADER) - 3) + split
    judge, human = found["judge"], found["human"]
    f1 = "positive_f1" if found["kind"] == "binary" else "macro_f1"
    key = found["primary"]

    def ci(d: dict[str, Any] | None) -> list[Any]:
        d = d or {}
        return [number(d.get(k), 6) for k in ("value", "low", "high")]

    def v(d: dict[str, Any] | None) -> Any:
        return number((d or {}).get("value"), 6)

    prev = found.get("prevalence") or {}
    cal = found.get("calibration") or {}
    return [
        key,
        *ci(judge[key]),
        v(human[key]),
        *ci(judge["mcc"]),
        v(human["mcc"]),
        *ci(judge["kappa"]),
        v(human["kappa"]),
        *ci(judge[f1]),
        v(human[f1]),
        v(judge["accuracy"]),
        v(judge["majority_share"]),
        *ci(judge.get("tpr")),
        *ci(judge.get("tnr")),
        v(prev.get("human")),
        v(prev.get("judge")),
        *ci(prev.get("corrected")),
        *ci(cal.get("ece")),
        v(cal.get("brier")),
        "; ".join(" ".join(f"{x:g}" for x in line) for line in found["confusion"]),
        *split,
    ]


PIECE = Piece(
    key="labels",
    compute=compute,
    serializer=CardLabelsSerializer,
    template="studies/partials/card/labels.html",
    columns=(
        Column(
            "label",
            "MCC / κ",
            _primary_value,
            title="a label aspect's primary statistic: MCC (binary), Cohen's κ (categorical)",
        ),
        Column("f1", "F1", _f1, title="binary: F1 of the positive label; categorical: macro-F1"),
        Column("tpr", "TPR · TNR", lambda r: value(r, "judge", "tpr")),
        Column(
            "prevalence",
            "Prevalence",
            lambda r: _prevalence_value(r, "corrected"),
            title="the judge's, corrected by Rogan–Gladen",
        ),
        Column("ece", "ECE", _ece, best_high=False, title="expected calibration error"),
    ),
    export=Export(HEADER, _values),
    primary=primary,
    help="a label aspect's statistics: MCC, κ, F1, TPR/TNR, prevalence, calibration",
)
