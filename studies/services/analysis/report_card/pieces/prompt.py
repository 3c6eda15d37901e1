"""The change from the judge's prompt variant: a run of the same judge with another
template or aspect definition version (the latest comparable one), its correlation's
change with a paired bootstrap interval and the systems whose rank changes."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from scoring.stats.consistency import correlation_change, rank_changes
from studies.models import MetricRun
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number

# what a new template version changes in a frozen configuration, and what a new aspect
# definition changes (G-Eval's evaluation steps are written for one aspect version)
TEMPLATE_KEYS = frozenset({"template", "reverse_template", "introduction"})
ASPECT_KEYS = frozenset(
    {"aspect_version", "aspect_definition", "aspect_name", "criteria", "scale", "steps"}
)
NOT_SCORING = frozenset({"batch_size"})  # how the work was batched, not what was scored


def prompt_difference(run: MetricRun, other: MetricRun) -> dict[str, Any] | None:
    """How two runs of one judge differ: in the template version, the aspect definition
    version, and anything else (``also``: the other keys of their configurations that
    differ; ``comparable`` when there are none); None when the runs are of different
    metrics or aspects, or their prompts do not differ."""
    a, b = run.config or {}, other.config or {}
    if run.metric != other.metric or a.get("aspect") != b.get("aspect"):
        return None
    changed = []
    if run.template_version_id != other.template_version_id:
        changed.append(
            f"template v{_version(other.template_version)} → v{_version(run.template_version)}"
        )
    if run.aspect_version_id != other.aspect_version_id:
        changed.append(
            f"aspect definition v{_version(other.aspect_version)} → v{_version(run.aspect_version)}"
        )
    if not changed:
        return None
    allowed = set(NOT_SCORING)
    if run.template_version_id != other.template_version_id:
        allowed |= TEMPLATE_KEYS
    if run.aspect_version_id != other.aspect_version_id:
        allowed |= ASPECT_KEYS
    also = sorted(k for k in a.keys() | b.keys() if k not in allowed and a.get(k) != b.get(k))
    return {"changed": changed, "also": also, "comparable": not also}


def _version(row: Any) -> str:
    return "?" if row is None else str(row.version)


def prompt_variant(
    run: MetricRun, others: list[MetricRun]
) -> tuple[MetricRun, dict[str, Any]] | None:
    """The run ``run`` is best compared with as a prompt variant: among the other runs of
    its metric and aspect whose prompt differs (and that scored something), those that
    differ in nothing else first, then the latest before it, then the latest."""
    found = []
    for other in others:
        if other.pk == run.pk or (other.kind == MetricRun.Kind.COMPUTED and not other.done):
            continue  # itself, or a run with no score yet
        difference = prompt_difference(run, other)
        if difference is not None:
            found.append((other, difference))
    if not found:
        return None
    found.sort(key=lambda f: (not f[1]["comparable"], f[0].pk > run.pk, -f[0].pk))
    return found[0]


def compute(inp: RowInput) -> Row | None:
    """The change from the run's prompt variant, when it has one in the frame."""
    c, run = inp.context, inp.run
    found = prompt_variant(run, list(c.rows.values()))
    if found is None or c.plan is None:
        return None
    other, difference = found
    frame, mp = c.frame, c.mp
    k = frame.run_index(other.pk)
    change = correlation_change(
        c.plan,
        inp.metric,
        frame.metrics[:, k],
        inp.human,
        level=mp.level_enum,
        coefficient=mp.coefficient_enum,
        average=mp.average_enum,
        options=inp.scratch["options"],
        confidence=c.params.confidence,
    )
    flips = rank_changes(inp.metric, frame.metrics[:, k], c.systems)
    return {
        **difference,
        "against": {"pk": other.pk, "label": frame.runs[k].label},
        "value": num(change.value_a),
        "against_value": num(change.value_b),
        "delta": num(change.delta),
        "low": num(change.low),
        "high": num(change.high),
        "p_value": num(change.p_value),
        "n_outputs": change.n_outputs,
        "rank_changes": [
            {"system": frame.system_names[f.system], "rank": f.rank_a, "against_rank": f.rank_b}
            for f in flips
        ],
    }


class CardAgainstSerializer(serializers.Serializer):  # type: ignore[type-arg]
    pk = serializers.IntegerField()
    label = serializers.CharField()


class CardRankChangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    system = serializers.CharField()
    rank = serializers.FloatField()
    against_rank = serializers.FloatField()


class CardPromptSerializer(serializers.Serializer):  # type: ignore[type-arg]
    changed = serializers.ListField(child=serializers.CharField())
    also = serializers.ListField(child=serializers.CharField())
    comparable = serializers.BooleanField()
    against = CardAgainstSerializer()
    value = serializers.FloatField(allow_null=True)
    against_value = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    n_outputs = serializers.IntegerField()
    rank_changes = CardRankChangeSerializer(many=True)


def _abs(value: float | None) -> float | None:
    return None if value is None else abs(value)


def _values(r: Row) -> list[Any]:
    prompt = r["prompt"] or {}
    flips = "; ".join(
        f"{f['system']} {f['against_rank']:g}→{f['rank']:g}" for f in prompt.get("rank_changes", [])
    )
    return [
        (prompt.get("against") or {}).get("label", ""),
        number(prompt.get("delta"), 6),
        number(prompt.get("low"), 6),
        number(prompt.get("high"), 6),
        flips,
    ]


PIECE = Piece(
    key="prompt",
    compute=compute,
    serializer=CardPromptSerializer,
    template="studies/partials/card/prompt.html",
    columns=(
        Column(
            "prompt",
            "Prompt Δ",
            lambda r: _abs((r["prompt"] or {}).get("delta")),
            best_high=False,
            title="the change from its prompt variant (smallest first)",
        ),
    ),
    export=Export(
        (
            "prompt_variant_of",
            "prompt_delta",
            "prompt_delta_low",
            "prompt_delta_high",
            "prompt_rank_changes",
        ),
        _values,
    ),
    help="the change from its prompt variant",
)
