"""The judge gate (``manage.py judge_gate``): for teams that re-validate a judge whenever
its prompt or model changes. It fails when the judge scored less than a share of the
aspect's judged outputs (``min_coverage``: a run over 3 % of a dataset says little of the
rest), when its lower confidence bound of its correlation with the humans (the matrix's
statistic, percentile bootstrap on the matrix's resamples) falls below a threshold, or
when it is significantly below an accepted run (one-sided paired bootstrap by document,
both runs on the outputs both scored). The statistic is the aspect kind's primary one,
named in every line: the correlation on a scale aspect, MCC on a binary aspect, Cohen's
κ on a categorical one (:mod:`.gate_labels`; ``--against`` is for scale aspects). The
aspect is named as imports name it: its code, name, key or an earlier name
(:func:`studies.services.lookup.find_aspect`).

A tuned run (its configuration names a study split, :mod:`.held_out`) is checked on the
split's test documents only, and the summary says so ("tuned on N documents; evaluated
on M test documents"); against an accepted run tuned on another split, on the documents
held out from both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scoring.stats import Groups, Level, Unit, bootstrap_ci, draw_resamples
from scoring.stats.consistency import correlation_change
from scoring.stats.coverage import coverage
from studies.models import Judgment, MetricRun
from studies.services.analysis.dashboards import frame_for
from studies.services.analysis.frames import restrict_to_documents
from studies.services.analysis.matrix import cell_statistic
from studies.services.analysis.params import MatrixParams
from studies.services.analysis.report_card.gate_labels import AGAINST, label_check
from studies.services.analysis.report_card.held_out import held_out
from studies.services.lookup import aspect_names, find_aspect

ALPHA = 0.05
MIN_COVERAGE = 0.9  # the share of the aspect's judged outputs a run must have scored


class GateError(ValueError):
    """A bad argument: ``argument`` names it (``--run``, ``--aspect``…)."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


@dataclass(frozen=True)
class GateResult:
    """``passed``; ``summary``, one line (a pass says why it passed; a failure names the
    run and aspect); and the ``reasons`` it failed, if it did."""

    passed: bool
    summary: str
    reasons: tuple[str, ...] = ()


def _run(pk: int | None, argument: str) -> MetricRun:
    run = MetricRun.objects.filter(pk=pk).select_related("dataset").first()
    if run is None:
        raise GateError(argument, f"no metric run has the id {pk}")
    return run


def _f(value: float, signed: bool = False) -> str:
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def judge_gate(
    run_id: int,
    aspect: str,
    *,
    against: int | None = None,
    min_lower_bound: float | None = None,
    min_coverage: float = MIN_COVERAGE,
    level: str = "sample",
    coefficient: str = "spearman",
    confidence: float = 0.95,
    alpha: float = ALPHA,
    resamples: int = 1000,
    seed: int = 0,
) -> GateResult:
    """Check run ``run_id`` on ``aspect`` (a name an import accepts for an aspect the
    run's dataset has judgments of); :class:`GateError` for a bad argument. See the
    module's docstring."""
    if min_lower_bound is None and against is None:
        raise GateError(
            "--min-lower-bound",
            "give a threshold (--min-lower-bound), a run to compare with (--against), or both",
        )
    if min_lower_bound is not None and not -1.0 <= min_lower_bound <= 1.0:
        raise GateError(
            "--min-lower-bound",
            f"{min_lower_bound:g} is not a correlation, MCC or κ (−1 to 1)",
        )
    if not 0.0 <= min_coverage <= 1.0:
        raise GateError("--min-coverage", f"{min_coverage:g} is not a share between 0 and 1")
    if not 0.0 < confidence < 1.0:
        raise GateError("--confidence", f"{confidence:g} is not a level between 0 and 1")
    if not 0.0 < alpha < 1.0:
        raise GateError("--alpha", f"{alpha:g} is not a level between 0 and 1")
    if resamples < 1:
        raise GateError("--resamples", "at least one resample is needed")
    run = _run(run_id, "--run")
    accepted = _run(against, "--against") if against is not None else None
    if accepted is not None and accepted.dataset_id != run.dataset_id:
        raise GateError("--against", f"run {accepted.pk} is of another dataset than run {run.pk}")
    if accepted is not None and accepted.pk == run.pk:
        raise GateError("--against", "the run cannot be compared with itself")
    params = MatrixParams(level=level, coefficient=coefficient, resamples=resamples, seed=seed)
    if params.problem is not None:
        raise GateError("--coef", params.problem.message)
    judged = Judgment.objects.filter(output__document__dataset=run.dataset)
    named = find_aspect(aspect_names(run.dataset.owner), aspect)
    if named is None or not judged.filter(aspect=named).exists():
        codes = sorted(set(judged.values_list("aspect__code", flat=True)))
        raise GateError(
            "--aspect",
            f"the dataset {run.dataset.name} has no judgments of the aspect {aspect!r} "
            f"(judged: {', '.join(codes) or 'none'}; a code, name or key names one)",
        )
    if named.is_labelled and accepted is not None:
        raise GateError("--against", AGAINST)
    found = named.pk
    pks = [run.pk] + ([accepted.pk] if accepted else [])
    frame = frame_for(run.dataset, params, only_runs=pks, only_aspects=[found])
    frame, note = _held_out(frame, run, accepted)
    result = _check(frame, params, run, accepted, min_lower_bound, min_coverage, confidence, alpha)
    if note:
        return GateResult(result.passed, f"{result.summary} [{note}]", result.reasons)
    return result


def _held_out(frame: Any, run: MetricRun, accepted: MetricRun | None) -> tuple[Any, str]:
    """The frame on the test documents of the tuned runs among ``run`` and ``accepted``
    (those held out from both), and what to say of it ("" where neither is tuned)."""
    found = [(r, h) for r in (run, accepted) if r is not None and (h := held_out(r)) is not None]
    if not found:
        return frame, ""
    notes, keys = [], None
    for r, h in found:
        notes.append(f"run {r.pk} {h.text}")
        if not h.replaced:
            keys = h.test_keys if keys is None else keys & h.test_keys
    if keys is None:
        return frame, "; ".join(notes)
    restricted = restrict_to_documents(frame, keys)
    if len(found) > 1:
        notes.append(f"compared on the {len(restricted.doc_keys)} documents held out from both")
    return restricted, "; ".join(notes)


def _check(
    frame: Any,
    params: MatrixParams,
    run: MetricRun,
    accepted: MetricRun | None,
    min_lower_bound: float | None,
    min_coverage: float,
    confidence: float,
    alpha: float,
) -> GateResult:
    docs, systems = Groups.from_keys(frame.doc_codes), Groups.from_keys(frame.system_codes)
    aspect = frame.aspects[0]
    metric, human = frame.metrics[:, frame.run_index(run.pk)], frame.human[:, 0]
    name = f"run {run.pk} ({run.label}) on {aspect.name.lower()}"
    statistic = f"{params.label}, {params.level}-level"
    covered = coverage(metric, human, docs)
    scored = (
        f"{covered.n_outputs} of the {covered.of_outputs} judged outputs "
        f"({covered.share * 100:.0f}%)"
    )
    if covered.share < min_coverage:
        reason = (
            f"it scored {scored}, less than --min-coverage {min_coverage:g}: its correlation "
            "would speak for the outputs it scored only"
        )
        return GateResult(False, f"FAIL: {name}", (reason,))
    if aspect.kind != "scale":
        statistic, reasons, passed = label_check(
            run, frame, min_lower_bound, confidence, params.resamples, params.seed
        )
        if reasons:
            return GateResult(False, f"FAIL: {name} ({statistic})", tuple(reasons))
        return GateResult(True, f"PASS: {name}: " + "; ".join([*passed, f"scored {scored}"]))
    result = cell_statistic(metric, human, aspect, params, docs, systems)
    if not np.isfinite(result.value):
        reason = f"its {statistic} is undefined: no outputs both scored and judged enough"
        return GateResult(False, f"FAIL: {name}", (reason,))
    unit = Unit.SYSTEMS if params.level_enum is Level.SYSTEM else Unit.DOCUMENTS
    plan = draw_resamples(
        np.random.default_rng(params.seed), docs, systems, unit=unit, resamples=params.resamples
    )
    ci = bootstrap_ci(
        plan,
        metric,
        human,
        level=params.level_enum,
        coefficient=params.coefficient_enum,
        options=result.options,
        alpha=1.0 - confidence,
        estimate=result,
    )
    shown = (
        f"{statistic} {_f(result.value)} [{_f(ci.low)}, {_f(ci.high)}] "
        f"({confidence * 100:g}% bootstrap over {unit.value}, {result.n_outputs} outputs)"
    )
    reasons, passed = [], [shown]
    if min_lower_bound is not None:
        if not ci.low >= min_lower_bound:
            reasons.append(
                f"the lower bound {_f(ci.low)} of its {shown} is below the threshold "
                f"{min_lower_bound:g}"
            )
        else:
            passed[0] += f", lower bound ≥ {min_lower_bound:g}"
    if accepted is not None:
        change = correlation_change(
            plan,
            metric,
            frame.metrics[:, frame.run_index(accepted.pk)],
            human,
            level=params.level_enum,
            coefficient=params.coefficient_enum,
            options=result.options,
            confidence=confidence,
        )
        compared = (
            f"Δ = {_f(change.delta, signed=True)} [{_f(change.low)}, {_f(change.high)}] against the "
            f"accepted run {accepted.pk} ({accepted.label}), one-sided paired bootstrap "
            f"p = {change.p_lower:.3f} on the {change.n_outputs} outputs both scored"
        )
        if not np.isfinite(change.p_lower):
            reasons.append(
                f"it cannot be compared with the accepted run {accepted.pk}: their "
                f"{statistic} is undefined on the {change.n_outputs} outputs both scored"
            )
        elif change.p_lower <= alpha:
            reasons.append(f"it is significantly below the accepted run: {compared}")
        else:
            passed.append(f"not significantly below the accepted run ({compared})")
    if reasons:
        return GateResult(False, f"FAIL: {name}", tuple(reasons))
    passed.append(f"scored {scored}")
    return GateResult(True, f"PASS: {name}: " + "; ".join(passed))
