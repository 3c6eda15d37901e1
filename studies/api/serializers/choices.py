"""Query choices that several read-outs share: whose judgments count, and how."""

from __future__ import annotations

from rest_framework import serializers


class JudgmentChoices(serializers.Serializer):  # type: ignore[type-arg]
    """Leave out flagged annotators; weight judgments equally or by competence."""

    flagged = serializers.ChoiceField(
        choices=["include", "exclude"],
        default="include",
        help_text="exclude: leave out annotators flagged on gold items.",
    )
    weights = serializers.ChoiceField(
        choices=["equal", "competence"],
        default="equal",
        help_text="competence: each output's judgments weighted by their annotators' MACE "
        "competence (annotators without an estimate weigh 1).",
    )


class RunAspectChoices(JudgmentChoices):
    """The page's choices; run and aspect default to the first run and judged aspect."""

    run = serializers.IntegerField(required=False, min_value=1, help_text="A metric run's id.")
    aspect = serializers.IntegerField(required=False, min_value=1, help_text="An aspect's id.")
