"""What a run's page, the API and the jobs page say of its state beyond its status: the
time left at its own rate, what it is doing while RUNNING, and, in a sentence, what a
cancelled or failed run kept or what a run WAITING for batch answers waits for."""

from __future__ import annotations

from studies.models import MetricRun
from studies.services.runs.shards import SCORING


def eta(run: MetricRun) -> float | None:
    """Seconds left for a running run at its own measured rate (this attempt's outputs
    per second of wall time, over every worker); None when unknown."""
    timings = run.timings or {}
    rate = timings.get("scoring_outputs_per_s") or timings.get("outputs_per_s")
    if run.status != MetricRun.Status.RUNNING or not rate:
        return None
    return float(max(run.total - run.done, 0) / rate)


def phase(run: MetricRun) -> str:
    """What a run is doing, for its page: "loading model" ("connecting to the endpoint"
    for a served run) while RUNNING before its first document of this attempt, "writing
    evaluation steps" (G-Eval), "scoring" after; "" when not running."""
    if run.status != MetricRun.Status.RUNNING:
        return ""
    return str((run.timings or {}).get("phase") or SCORING)


def outcome(run: MetricRun) -> str:
    """What a cancelled or failed run kept, or what a run waiting for batch answers
    waits for, in a sentence (empty for other runs)."""
    if run.status == MetricRun.Status.WAITING:
        state = (run.provenance or {}).get("batch") or {}
        n = int(state.get("outstanding") or len(state.get("requested") or ()))
        return (
            f"Waiting for batch answers: {n} request{'s' if n != 1 else ''} outstanding "
            f"({run.done}/{run.total} outputs scored). Answer the request file (a provider's "
            "batch job, or vllm run-batch) and read its results file in: on this page, with "
            f"`manage.py batch_results {run.pk} FILE` or through the API. Resume scores the "
            "rest online instead; Cancel keeps the scores so far as a partial run."
        )
    if run.kind != MetricRun.Kind.COMPUTED or run.status not in (
        MetricRun.Status.CANCELLED,
        MetricRun.Status.FAILED,
    ):
        return ""
    word = "Cancelled" if run.status == MetricRun.Status.CANCELLED else "Failed"
    if not run.done:
        return f"{word} before its first document; nothing was scored. Resume starts it again."
    kept = f"the {run.done} score{'s' if run.done != 1 else ''} {'are' if run.done != 1 else 'is'}"
    return (
        f"{word} after {run.done} of {run.total} outputs; {kept} kept and count as a "
        f"partial run; Resume scores the rest."
    )
