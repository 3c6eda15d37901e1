"""Scores read from a served endpoint's top-k candidates alone (issue 37, item 2): a G-Eval
score whose rating labels were not all among the candidates reads each such label as 0,
and records the most it may hold (``outside_top_k``: the k-th candidate's probability,
:class:`scoring.lm.rating.RatingDistribution`). The card flags them, and says whether
they could change the verdict.

**Each flagged score's range.** Its true value lies between the ends of what its bounds
allow: with the read labels' probabilities :math:`r_j` (the stored distribution times
its ``label_mass``) and each outside label's unknown :math:`m_l \\in [0, b_l]`, the
probability-weighted score is
:math:`(\\sum_j r_j v_j + \\sum_l m_l v_l) / (\\sum_j r_j + \\sum_l m_l)`, a
linear-fractional function of the :math:`m_l`: its maximum puts every label worth more
than the maximum at its bound and the others at 0, so it is the best of the prefixes of
the outside labels sorted by value (:func:`score_range`, exact; the minimum likewise).
An argmax score may become any outside label whose bound exceeds the top read label.

**Whether they could change the verdict.** The row is computed again twice, every piece
the verdict reads included (the correlation and its interval, the label statistics, the
alternative-annotator test), with each flagged score moved to one end of its range:
*against* the annotators (the end whose rank among the judge's scores lies farther from
the output's rank among the annotators' means, within its document at the sample level)
and *toward* them (the nearer end). Unflagged scores stay. When either verdict differs
from the row's, the verdict says that flagged scores could change it, with the primary
statistic at both ends (:mod:`studies.services.analysis.report_card.bounds` runs them;
the sentinel check, from the matrix's stored scores, is not redone). Moving every flagged
score by rank is the adversary a rank or linear correlation responds to most, not a
proven extremum: the verdict says "could", never "cannot".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rest_framework import serializers

from scoring.stats import Level
from studies.models import MetricScore
from studies.services.analysis.report_card.context import RowInput
from studies.services.analysis.report_card.evidence import num
from studies.services.analysis.report_card.pieces.base import Column, Export, Piece, Row
from studies.services.csvfile import number

ENDS = ("against", "toward")  # the flagged scores' ends the verdict is checked at
ALTERNATIVES = "top_k_alternatives"  # the scratch key: {end: the judge's column}


def score_range(details: dict[str, Any]) -> tuple[float, float] | None:
    """The lowest and highest value a flagged G-Eval score could have had with its
    outside labels at any mass within their bounds (see the module); None when its
    details lack what it takes."""
    dist = details.get("distribution") or {}
    outside = details.get("outside_top_k") or {}
    if not dist or not outside:
        return None
    try:
        values = {label: float(label) for label in dist}
    except ValueError:
        return None
    mass = float(details.get("label_mass") or 1.0)
    read = {label: float(p) * mass for label, p in dist.items() if label not in outside}
    bounds = {label: float(b) for label, b in outside.items() if label in values}
    if details.get("weighting", "prob") != "prob":  # the argmax: any label that could top it
        top = max(read.values(), default=0.0)
        argmax = float(details.get("argmax", max(read, key=read.__getitem__)))
        reachable = [values[label] for label, b in bounds.items() if b > top] + [argmax]
        return min(reachable), max(reachable)
    base_mass = math.fsum(read.values())
    base_sum = math.fsum(r * values[label] for label, r in read.items())

    def best(descending: bool) -> float:
        found = []
        total, weighted = base_mass, base_sum
        if total > 0:
            found.append(weighted / total)
        for label in sorted(bounds, key=values.__getitem__, reverse=descending):
            total += bounds[label]
            weighted += bounds[label] * values[label]
            if total > 0:
                found.append(weighted / total)
        return max(found) if descending else min(found)

    return best(False), best(True)


def _ranks(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Where each of ``at`` falls among ``values``, as a share (mid-rank for ties)."""
    ordered = np.sort(values)
    below = np.searchsorted(ordered, at, side="left")
    upto = np.searchsorted(ordered, at, side="right")
    return (below + upto) / (2.0 * max(len(values), 1))


def alternatives(
    metric: np.ndarray,
    human: np.ndarray,
    groups: np.ndarray | None,
    ranges: dict[int, tuple[float, float]],
) -> dict[str, np.ndarray]:
    """The judge's column with each flagged score (frame row → its range) at the end of
    its range farther from (``against``) or nearer to (``toward``) the annotators' rank of
    the output, ranks within ``groups`` (documents at the sample level) or over all."""
    found = {end: metric.copy() for end in ENDS}
    both = np.isfinite(metric) & np.isfinite(human)
    keys = np.zeros(len(metric), dtype=int) if groups is None else groups
    for k, (low, high) in ranges.items():
        if not both[k] or high - low <= 0:
            continue
        peers = both & (keys == keys[k])
        judged, humans = metric[peers], human[peers]
        target = _ranks(humans, np.array([human[k]]))[0]
        at = _ranks(judged, np.array([low, high]))
        far = high if abs(at[1] - target) >= abs(at[0] - target) else low
        found["against"][k] = far
        found["toward"][k] = low if far == high else high
    return found


def compute(inp: RowInput) -> Row | None:
    run = inp.run
    if run.metric != "geval" or not run.config.get("endpoint"):
        return None
    rows = MetricScore.objects.filter(
        run_id=run.pk, value__isnull=False, details__has_key="outside_top_k"
    ).values_list("output_id", "details")
    flagged = {int(o): d for o, d in rows if (d or {}).get("outside_top_k")}
    if not flagged:
        return None
    frame = inp.context.frame
    position = {int(o): k for k, o in enumerate(frame.output_ids) if int(o) in flagged}
    metric = inp.metric
    ranges: dict[int, tuple[float, float]] = {}
    for output_id, k in position.items():
        found = score_range(flagged[output_id])
        if found is not None and np.isfinite(metric[k]):
            ranges[k] = found
    if not ranges:
        return None
    sample = inp.context.mp.level_enum is Level.SAMPLE
    inp.scratch[ALTERNATIVES] = alternatives(
        metric, inp.human, frame.doc_codes if sample else None, ranges
    )
    widths = [high - low for low, high in ranges.values()]
    return {
        "scores": len(ranges),
        "of": int(np.count_nonzero(np.isfinite(metric))),
        "max_bound": num(max(float(flagged[o].get("outside_bound") or 0) for o in position)),
        "max_width": num(max(widths)),
        "verdicts": None,  # filled by report_card.bounds once the row's pieces are in
        "primary": None,
        "could_change": None,
    }


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def caveat(row: Row) -> str | None:
    """Flagged scores, and whether they could change the verdict (see the module)."""
    top = row.get("top_k") or {}
    if not top or top.get("verdicts") is None:
        return None
    said = (
        f"{top['scores']} of its {top['of']} scores were read from the endpoint's top-k "
        f"candidates only (labels outside them read as 0, holding at most "
        f"{_f(top['max_bound'])} of the probability)"
    )
    primary = top.get("primary") or {}
    ends = ", ".join(
        f"{end} the annotators: {p['name']} {_f(p['value'])} [{_f(p['low'])}, {_f(p['high'])}], "
        f"'{top['verdicts'][end]}'"
        for end, p in primary.items()
    )
    if top["could_change"]:
        return (
            f"flagged scores could change this verdict: {said}; with each at the end of its "
            f"bounds {ends}. Score on an endpoint that gives exact label probabilities"
        )
    return f"{said}; at either end of their bounds the verdict stays ({ends})"


class CardTopKEndSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class CardTopKSerializer(serializers.Serializer):  # type: ignore[type-arg]
    scores = serializers.IntegerField(help_text="scores read from the top-k alone, flagged")
    of = serializers.IntegerField(help_text="the run's scores in the card's frame")
    max_bound = serializers.FloatField(
        allow_null=True, help_text="the most probability a flagged score's unread labels hold"
    )
    max_width = serializers.FloatField(allow_null=True, help_text="the widest score range")
    verdicts = serializers.DictField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="the verdict with the flagged scores against / toward the annotators",
    )
    primary = serializers.DictField(child=CardTopKEndSerializer(), allow_null=True)
    could_change = serializers.BooleanField(allow_null=True)


def _values(r: Row) -> list[Any]:
    top = r.get("top_k") or {}
    verdicts = top.get("verdicts") or {}
    if not top:
        return ["", "", "", ""]
    return [
        top["scores"],
        number(top["max_bound"], 6),
        verdicts.get("against", ""),
        verdicts.get("toward", ""),
    ]


PIECE = Piece(
    key="top_k",
    compute=compute,
    serializer=CardTopKSerializer,
    template="studies/partials/card/top_k.html",
    columns=(
        Column(
            "top_k",
            "Top-k only",
            lambda r: (r.get("top_k") or {}).get("scores") or 0,
            best_high=False,
            title="scores read from a served endpoint's top-k candidates alone (⚑)",
        ),
    ),
    export=Export(
        ("top_k_only_scores", "top_k_max_bound", "top_k_verdict_against", "top_k_verdict_toward"),
        _values,
    ),
    caveat=caveat,
    help="scores read from an endpoint's top-k alone, and whether they could change the verdict",
)
