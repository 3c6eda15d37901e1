"""The parts of a report card row that the matrix and the diagnostics do not hold: each
annotator's answers, agreement on the annotators' ordinal scale, the alternative-annotator
test, a sampled judge's self-consistency, the run it is a prompt variant of, and what
it cost per 1,000 outputs. Plain dicts (cached with the card)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scoring.stats import Groups, Resamples
from scoring.stats.alttest import alt_test, neg_rmse_plain
from scoring.stats.consistency import self_consistency
from scoring.stats.judge_agreement import Estimate, pointwise_agreement
from scoring.stats.scales import MAX_POINTS, scale_points, to_scale
from studies.models import MetricRun, MetricScore
from studies.services.analysis.frames import AspectInfo, ScoreFrame
from studies.services.analysis.pairwise_judge import (
    PairwiseUnavailable,
    human_agreement,
    pair_files,
    summary,
)

# the alt-test's requirements (the paper's): three annotators per item, 30 items each
MIN_ANNOTATORS = 3
MIN_ITEMS = 30
CONTINUOUS = (
    f"the annotators' answers lie on no scale of 2 to {MAX_POINTS} evenly spaced points: "
    "agreement statistics for ordinal scales do not apply"
)


def num(value: float | None) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    return float(value) if value is not None and math.isfinite(value) else None


def annotator_matrix(
    table: np.ndarray, names: list[str], frame: ScoreFrame, aspect: AspectInfo
) -> tuple[np.ndarray, list[str]]:
    """The annotators' answers on ``aspect`` as annotators × the frame's outputs (NaN: no
    answer; an annotator's repeated answers averaged), from the ceiling's per-annotator
    rows (output id, aspect id, annotator code, value) and their names."""
    rows = table[table[:, 1] == aspect.pk]
    codes, who = np.unique(rows[:, 2].astype(np.int64), return_inverse=True)
    where = np.searchsorted(frame.output_ids, rows[:, 0].astype(np.int64))
    where = np.minimum(where, max(frame.n_outputs - 1, 0))
    inside = frame.output_ids[where] == rows[:, 0] if frame.n_outputs else np.zeros(0, bool)
    sums = np.zeros((codes.size, frame.n_outputs))
    counts = np.zeros((codes.size, frame.n_outputs))
    np.add.at(sums, (who[inside], where[inside]), rows[inside, 3])
    np.add.at(counts, (who[inside], where[inside]), 1.0)
    with np.errstate(invalid="ignore"):
        answers = np.where(counts > 0, sums / np.maximum(counts, 1.0), np.nan)
    return answers, [names[int(c)] for c in codes]


def _estimate(found: Estimate) -> dict[str, Any]:
    """An agreement statistic for the card; ``clipped``: its interval was cut to the
    statistic's range (see :func:`scoring.stats.judge_agreement.bounded`)."""
    return {
        "value": num(found.value),
        "low": num(found.low),
        "high": num(found.high),
        "clipped": found.clipped,
    }


def agreement(
    scores: np.ndarray,
    humans: np.ndarray,
    docs: Groups,
    aspect: AspectInfo,
    plan: Resamples | None,
    confidence: float,
    among: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], np.ndarray]:
    """Quadratic-weighted κ, Gwet's AC1 and Krippendorff's α of the judge's ``scores`` put
    on the annotators' scale (how: ``binning``), beside the same among the annotators
    (``among``: another row's of the same annotators, so their intervals are computed
    once per aspect); and the scores the alternative-annotator test compares (the
    judge's own where they lie within the scale's range, else the binned ones)."""
    points = scale_points(humans, aspect.scale_min, aspect.scale_max)
    if points is None or not np.isfinite(humans).any():
        return {"problem": CONTINUOUS, "scale": None}, scores
    on_scale = to_scale(scores, points, humans)
    found = pointwise_agreement(
        on_scale.values,
        humans,
        docs,
        points,
        plan=plan,
        confidence=confidence,
        annotator_intervals=among is None,
    )
    result = {
        "problem": None,
        "scale": [float(p) for p in points],
        "binning": on_scale.method,
        "binning_text": on_scale.description,
        "n_items": found.n_items,
        "kappa": _estimate(found.quadratic_kappa),
        "ac1": _estimate(found.gwet_ac1),
        "alpha": _estimate(found.krippendorff_alpha),
        "human_kappa": _estimate(found.human_quadratic_kappa),
        "human_ac1": _estimate(found.human_gwet_ac1),
        "human_alpha": _estimate(found.human_krippendorff_alpha),
    }
    if among is not None:
        result |= {k: among[k] for k in ("human_kappa", "human_ac1", "human_alpha")}
    compared = on_scale.values if on_scale.method == "quantiles" else scores
    return result, compared


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
    wins = sum(t.judge_wins for t in found.per_annotator)
    return {
        "passed": found.passed,
        "winning_rate": num(found.winning_rate),
        "advantage_probability": num(found.advantage_probability),
        "epsilon": epsilon,
        "wins": wins,
        "n_annotators_tested": len(found.per_annotator),
        "n_annotators": len(names),
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


def is_sampled(run: MetricRun) -> bool:
    """A G-Eval run whose scores are the frequencies of n sampled answers per output."""
    return (run.config or {}).get("estimation") == "sampled"


def consistency_of(run: MetricRun) -> dict[str, Any] | None:
    """A sampled run's self-consistency from the answers each score was made of (its
    stored frequencies times the answers that named a scale point); None for a run
    that did not sample."""
    if not is_sampled(run):
        return None
    scale = [float(v) for v in run.config.get("scale") or ()]
    details = MetricScore.objects.filter(run=run, value__isnull=False).values_list(
        "details", flat=True
    )
    counts = []
    for found in details.iterator():
        shares = (found or {}).get("distribution") or {}
        parsed = int(found.get("n_samples") or 0) - int(found.get("n_unparsed") or 0)
        counts.append([round(float(shares.get(_label(v), 0.0)) * parsed) for v in scale])
    result = self_consistency(np.array(counts, dtype=np.float64).reshape(-1, len(scale)), scale)
    return {
        "n_outputs": result.n_outputs,
        "n_samples": result.n_samples,
        "k": num(result.k),
        "mean_within_sd": num(result.mean_within_sd),
        "pooled_within_sd": num(result.pooled_within_sd),
        "icc1": num(result.icc1),
        "icck": num(result.icck),
    }


def _label(value: float) -> str:
    """How a scale point is written in a stored distribution ("3", or "2.5")."""
    return str(int(value)) if value == int(value) else str(value)


def position_of(run: MetricRun, seed: int, confidence: float) -> dict[str, Any] | None:
    """A pairwise judge run's position consistency (the share of pairs whose verdict
    survives the swap) and first-position preference (the share of verdicts for the
    output shown first, with its interval and the exact binomial test against one half),
    from :func:`studies.services.analysis.pairwise_judge.summary`; None for another run."""
    if run.metric != "pairwise":
        return None
    try:  # one resample: the card shows none of the strengths' intervals
        found = summary(run, seed=seed, n_resamples=1, confidence=confidence)
    except PairwiseUnavailable as exc:
        return {"problem": str(exc)}
    return {
        "problem": None,
        "n_pairs": found.n_pairs,
        "position_consistency": num(found.position_consistency),
        "n_consistent": found.n_consistent,
        "first_position_share": num(found.first_position_share),
        "first_position_low": num(found.first_position_low),
        "first_position_high": num(found.first_position_high),
        "first_position_p": num(found.first_position_p),
        "n_first": found.n_first,
        "n_second": found.n_second,
        "n_position_ties": found.n_position_ties,
    }


def human_pairs_of(run: MetricRun, seed: int, confidence: float) -> dict[str, Any] | None:
    """A pairwise judge run's agreement with the imported human preferences of its
    aspect (MT-Bench agreement with and without ties, beside the annotators' among
    themselves); None for another run, or where no pairs file was imported."""
    if run.metric != "pairwise" or not pair_files(run):
        return None
    try:
        found = human_agreement(
            run, "pairs", seed=seed, n_resamples=200, confidence=confidence, interval="percentile"
        )
    except PairwiseUnavailable as exc:
        return {"problem": str(exc)}
    return {
        "problem": None,
        "n_items": found.n_items,
        "with_ties": _estimate(found.with_ties),
        "without_ties": _estimate(found.without_ties),
        "human_with_ties": _estimate(found.human_with_ties),
        "human_without_ties": _estimate(found.human_without_ties),
    }


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


# --- prompt variants --------------------------------------------------------------------

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
