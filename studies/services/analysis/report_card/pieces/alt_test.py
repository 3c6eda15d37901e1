"""The alternative-annotator test (Calderon, Reichart & Dror 2025) of the judge against
each annotator: alignment by negative RMSE on a scale aspect (the answers are numbers on
one scale), by accuracy on a label aspect (AltTest's scoring function for labels), with
the paper's requirements (three annotators per item, 30 items per annotator)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rest_framework import serializers

from scoring.stats.alttest import AltTestResult, alt_test, alt_test_labels, neg_rmse_plain
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import MIN_ANNOTATORS, MIN_ITEMS, num
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number


def alternative_annotator(
    scores: np.ndarray,
    humans: np.ndarray,
    names: list[str],
    output_ids: np.ndarray,
    epsilon: float,
) -> dict[str, Any]:
    """The alternative-annotator test of the judge's ``scores`` (aligned with the frame's
    ``output_ids``) against each annotator, alignment by negative RMSE (the answers are
    numbers on one scale), with the paper's requirements."""
    judge = {int(o): float(s) for o, s in zip(output_ids, scores, strict=True) if math.isfinite(s)}
    answers = {
        name: {int(o): float(v) for o, v in zip(output_ids, row, strict=True) if math.isfinite(v)}
        for name, row in zip(names, humans, strict=True)
    }
    found = alt_test(
        judge,
        answers,
        epsilon=epsilon,
        metric=neg_rmse_plain,
        min_annotators_per_item=MIN_ANNOTATORS,
        min_items=MIN_ITEMS,
    )
    return as_dict(found, len(names), "neg_rmse")


def on_labels(
    codes: np.ndarray, humans: np.ndarray, names: list[str], epsilon: float
) -> dict[str, Any]:
    """The test of the judge's label ``codes`` with the accuracy alignment score."""
    found = alt_test_labels(
        codes,
        humans,
        names,
        epsilon=epsilon,
        min_annotators_per_item=MIN_ANNOTATORS,
        min_items=MIN_ITEMS,
    )
    return as_dict(found, len(names), "accuracy")


def as_dict(found: AltTestResult, n_annotators: int, scoring: str) -> dict[str, Any]:
    wins = sum(t.judge_wins for t in found.per_annotator)
    return {
        "passed": found.passed,
        "winning_rate": num(found.winning_rate),
        "advantage_probability": num(found.advantage_probability),
        "epsilon": found.epsilon,
        "scoring": scoring,
        "wins": wins,
        "n_annotators_tested": len(found.per_annotator),
        "n_annotators": n_annotators,
        "n_items": found.n_items,
        "n_items_with_three": found.n_items_with_three,
        "problem": found.problem,
        "message": found.message,
        "per_annotator": [
            {
                "annotator": str(t.annotator),
                "n_items": t.n_items,
                "rho_judge": num(t.rho_judge),
                "p_value": num(t.adjusted_p_value),
                "judge_wins": t.judge_wins,
            }
            for t in found.per_annotator
        ],
        "skipped": [{"annotator": str(a), "n_items": n} for a, n in found.skipped],
    }


def compute(inp: RowInput) -> Row:
    epsilon = inp.context.params.epsilon
    labels = inp.scratch.get("labels")
    if labels is not None:  # a label aspect whose judge answered with its labels
        return on_labels(labels["judge"], labels["humans"], inp.names, epsilon)
    compared = inp.scratch.get("compared", inp.metric)
    return alternative_annotator(
        compared, inp.humans, inp.names, inp.context.frame.output_ids, epsilon
    )


class CardAnnotatorTestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    annotator = serializers.CharField()
    n_items = serializers.IntegerField()
    rho_judge = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    judge_wins = serializers.BooleanField()


class CardSkippedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    annotator = serializers.CharField()
    n_items = serializers.IntegerField()


class CardAltTestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    passed = serializers.BooleanField()
    winning_rate = serializers.FloatField(allow_null=True, help_text="ω")
    advantage_probability = serializers.FloatField(allow_null=True, help_text="ρ")
    epsilon = serializers.FloatField()
    scoring = serializers.ChoiceField(
        choices=["neg_rmse", "accuracy"],
        required=False,
        help_text="The alignment score: negative RMSE on a scale, accuracy on labels.",
    )
    wins = serializers.IntegerField()
    n_annotators_tested = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    n_items = serializers.IntegerField()
    n_items_with_three = serializers.IntegerField()
    problem = serializers.CharField(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    per_annotator = CardAnnotatorTestSerializer(many=True)
    skipped = CardSkippedSerializer(many=True)


def _values(r: Row) -> list[Any]:
    alt = r["alt_test"]
    return [
        "" if alt["problem"] else int(alt["passed"]),
        number(alt["winning_rate"], 4),
        number(alt["advantage_probability"], 4),
        number(alt["epsilon"]),
        alt["n_annotators_tested"],
        alt["n_items_with_three"],
        alt["message"],
    ]


PIECE = Piece(
    key="alt_test",
    compute=compute,
    serializer=CardAltTestSerializer,
    template="studies/partials/card/alt_test.html",
    columns=(
        Column("omega", "ω", lambda r: r["alt_test"]["winning_rate"], title="winning rate"),
        Column("rho", "Adv. prob.", lambda r: r["alt_test"]["advantage_probability"]),
    ),
    export=Export(
        (
            "alt_test_passed",
            "winning_rate",
            "advantage_probability",
            "epsilon",
            "annotators_tested",
            "items_with_three_annotators",
            "alt_test_problem",
        ),
        _values,
    ),
    help="the alternative-annotator test",
)
