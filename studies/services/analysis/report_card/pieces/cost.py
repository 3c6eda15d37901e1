"""What the judge cost per 1,000 outputs scored: requests, tokens, cost and wall time (a
served run's from its usage, a local run's wall time from its timings)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from studies.models import MetricRun
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number


def cost_per_thousand(run: MetricRun) -> dict[str, Any]:
    """Requests, tokens, cost and wall time per 1,000 outputs scored: a served run's from
    its usage, a local run's wall time from its timings (no requests, tokens or cost);
    nothing for an imported run."""
    done = run.done or run.scores.count()
    timings, usage = run.timings or {}, run.usage or {}
    if run.kind == MetricRun.Kind.IMPORTED or not done:
        return {"source": None, "outputs": done}
    per = 1000.0 / done
    seconds = timings.get("seconds")
    found: dict[str, Any] = {
        "source": "served" if run.config.get("endpoint") else "local",
        "outputs": done,
        "seconds": None if seconds is None else float(seconds) * per,
        "requests": None,
        "tokens": None,
        "cost": None,
    }
    if found["source"] == "served":
        tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
        found |= {
            "requests": int(usage.get("requests", 0)) * per,
            "tokens": tokens * per,
            "cost": float(usage.get("cost", 0.0)) * per,
        }
    return found


def compute(inp: RowInput) -> Row:
    return cost_per_thousand(inp.run)


class CardCostSerializer(serializers.Serializer):  # type: ignore[type-arg]
    source = serializers.ChoiceField(choices=["served", "local"], allow_null=True)
    outputs = serializers.IntegerField()
    seconds = serializers.FloatField(allow_null=True, required=False)
    requests = serializers.FloatField(allow_null=True, required=False)
    tokens = serializers.FloatField(allow_null=True, required=False)
    cost = serializers.FloatField(allow_null=True, required=False)


def _values(r: Row) -> list[Any]:
    cost = r["cost"]
    return [
        cost.get("source") or "",
        number(cost.get("requests"), 2),
        number(cost.get("tokens"), 1),
        number(cost.get("cost"), 6),
        number(cost.get("seconds"), 3),
    ]


PIECE = Piece(
    key="cost",
    compute=compute,
    serializer=CardCostSerializer,
    template="studies/partials/card/cost.html",
    columns=(
        Column("cost", "Cost / 1k", lambda r: r["cost"].get("cost"), best_high=False),
        Column("seconds", "Time / 1k", lambda r: r["cost"].get("seconds"), best_high=False),
    ),
    export=Export(
        ("cost_source", "requests_per_1k", "tokens_per_1k", "cost_per_1k", "seconds_per_1k"),
        _values,
    ),
    help="requests, tokens, cost and time per 1,000 outputs",
)
