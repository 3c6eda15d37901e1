"""Sentinel baselines (Perrella et al. 2024): with one action, add the runs that expose
spurious correlation (output length in tokens, a source-free GPTScore, a seeded random
score), and in the matrix mark the metrics that do not beat them significantly.

Sentinel runs are ordinary runs (a frozen configuration, a Celery task, a MetricRun
row); a run is a sentinel by its metric and configuration
(:func:`scoring.metrics.sentinels.is_sentinel`). Sentinels are never ranked or best.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Count

from scoring.lm.store import ModelNotInstalled
from scoring.metrics import sentinels
from scoring.stats import Alternative, paired_bootstrap_p
from studies.models import Dataset, Judgment, MetricRun
from studies.services.analysis.frames import RunInfo
from studies.services.analysis.matrix_cost import matrix_size
from studies.services.catalog.model_catalog import check_model
from studies.services.runs.core import Plan, RunError, save_run
from studies.services.runs.registry import runner
from studies.services.runs.request import RunRequest

ALPHA = 0.05
# a failed or cancelled sentinel does not count: the action adds a fresh one
LIVE = (MetricRun.Status.PENDING, MetricRun.Status.RUNNING, MetricRun.Status.SUCCEEDED)


@dataclass
class Added:
    """What :func:`add_sentinels` did: runs created, runs that already existed, and the
    sentinels it could not add (with why)."""

    created: list[MetricRun] = field(default_factory=list)
    existing: list[MetricRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def default_aspect(dataset: Dataset) -> str:
    """The aspect a source-free GPTScore is prompted for by default: the dataset's most
    judged one ("" without judgments)."""
    top = (
        Judgment.objects.filter(output__document__dataset=dataset)
        .values("aspect__code")
        .annotate(n=Count("pk"))
        .order_by("-n", "aspect__code")
        .first()
    )
    return str(top["aspect__code"]) if top else ""


def _gptscore_like(dataset: Dataset) -> dict[str, Any]:
    """The model and setting of the dataset's latest GPTScore run, so the source-free
    sentinel differs from it only by the missing source."""
    run = (
        dataset.runs.filter(metric="gptscore", kind=MetricRun.Kind.COMPUTED)
        .exclude(config__dimension=sentinels.SOURCE_FREE_DIMENSION)
        .order_by("-pk")
        .first()
    )
    config = run.config if run else {}
    setting = config.get("setting", "IST")
    return {
        "model": str(config.get("model", "default")),
        "setting": "IST" if setting == "IDM" else setting,
        "reduction": str(config.get("reduction", "mean")),
    }


def sentinel_requests(
    dataset: Dataset, *, aspect: str = "", model: str = "", seed: int = 0
) -> list[RunRequest]:
    """The three sentinel runs for ``dataset``: length, random (``seed``) and a
    source-free GPTScore for ``aspect`` (default: the most judged) with ``model``
    (default: that of the dataset's latest GPTScore run, else the default model)."""
    like = _gptscore_like(dataset)
    return [
        RunRequest(metric="length"),
        RunRequest(metric="random", seed=seed),
        RunRequest(
            metric="gptscore",
            dimension=sentinels.SOURCE_FREE_DIMENSION,
            aspect=aspect or default_aspect(dataset),
            model=model or like["model"],
            setting=like["setting"],
            reduction=like["reduction"],
        ),
    ]


def _plan(dataset: Dataset, request: RunRequest, local_paths: bool) -> Plan:
    found = runner(request.metric)
    assert found is not None, request.metric
    if found.per_aspect and not request.aspect:
        raise RunError(f"The dataset has no judgments: no aspect to prompt {found.label} for.")
    if found.checks_model:
        check_model(request.model, local_paths=local_paths)
    return found.build(dataset, request, None)


def add_sentinels(
    dataset: Dataset,
    *,
    user: Any = None,
    aspect: str = "",
    model: str = "",
    seed: int = 0,
    enqueue: bool = True,
    local_paths: bool = False,
) -> Added:
    """Start the sentinel runs that the dataset lacks; a sentinel whose configuration
    an unfailed run already has is not started again (the action is idempotent). A
    sentinel that cannot be built (no model installed, no template) is skipped, with why.
    ``local_paths`` (the operator's shell only) lets the model be any local path."""
    added = Added()
    for request in sentinel_requests(dataset, aspect=aspect, model=model, seed=seed):
        try:
            plan = _plan(dataset, request, local_paths)
        except (RunError, ModelNotInstalled) as exc:
            added.skipped.append(f"{request.metric}: {exc}")
            continue
        twin = next(
            (
                run
                for run in dataset.runs.filter(
                    metric=plan.metric, label=plan.label, status__in=LIVE
                ).order_by("pk")
                if run.config == plan.config
            ),
            None,
        )
        if twin is not None:
            added.existing.append(twin)
        else:
            added.created.append(save_run(dataset, plan, user=user, enqueue_it=enqueue))
    return added


def estimate(dataset: Dataset) -> str:
    """What "Add sentinel baselines" will start, in a sentence the button asks to confirm:
    the source-free GPTScore holds the model worker for the whole dataset, at the rate
    of the last local GPTScore run (this dataset's first), when there is one. The count
    of outputs is the matrix's sizes' (cached per data version: no count of millions of
    rows on every page)."""
    n = matrix_size(dataset).outputs
    timed = [
        run
        for run in MetricRun.objects.filter(
            metric="gptscore", status=MetricRun.Status.SUCCEEDED, kind=MetricRun.Kind.COMPUTED
        ).order_by("-finished_at")[:20]
        if (run.timings or {}).get("scoring_outputs_per_s") and not run.config.get("endpoint")
    ]
    timed.sort(key=lambda run: run.dataset_id != dataset.pk)  # this dataset's first
    if timed:
        rate = float(timed[0].timings["scoring_outputs_per_s"])
        minutes = max(1, round(n / rate / 60))
        how_long = f"about {minutes} min at the last GPTScore run's rate ({rate:.1f} outputs/s)"
    else:
        how_long = "as long as a GPTScore run (its page shows the ETA once it scores)"
    return (
        f"This starts up to three sentinel runs over the {n} outputs: length and random take "
        f"seconds; the source-free GPTScore holds the model worker for {how_long}. Start them?"
    )


# --- the matrix -----------------------------------------------------------------------


def mark_sentinels(
    cells: list[dict[str, Any]],
    runs: Sequence[RunInfo],
    draws: list[np.ndarray | None] | None,
    used: list[np.ndarray],
    p_on_shared: Callable[[int, int], float],
) -> None:
    """Mark, in one aspect's cells, each metric that does not beat every sentinel
    significantly: ``fails_sentinel`` names the sentinel with the largest one-sided
    paired bootstrap p (metric > sentinel) above ALPHA, with that p and ``n``, the
    outputs both scored; None otherwise. Pairs are compared as the best is (on their
    draws when both scored the same outputs, else recomputed on the outputs both
    scored). Without draws, nothing is marked. A sentinel that has not scored every
    output (still running, cancelled, failed) or is below the coverage threshold marks
    nothing, as such a run is never best: its cells list it in ``sentinels_pending``."""
    values = [np.nan if c["value"] is None else float(c["value"]) for c in cells]
    sentinels = [k for k, run in enumerate(runs) if run.sentinel and np.isfinite(values[k])]
    guards = [k for k in sentinels if not (runs[k].partial_run or cells[k]["partial"])]
    pending = [runs[k].label for k in sentinels if k not in guards]

    def p_beats(a: int, b: int) -> float:
        assert draws is not None
        draw_a, draw_b = draws[a], draws[b]
        if draw_a is None or draw_b is None:
            return float("nan")
        if not np.array_equal(used[a], used[b]):
            return p_on_shared(a, b)
        return paired_bootstrap_p(draw_a, draw_b, values[a], values[b], Alternative.GREATER)

    for k, cell in enumerate(cells):
        cell["sentinel"] = runs[k].sentinel
        cell["fails_sentinel"] = None
        cell["sentinels_pending"] = [] if runs[k].sentinel else pending
        if draws is None or runs[k].sentinel or not np.isfinite(values[k]):
            continue
        for s in guards:
            p = p_beats(k, s)
            if (
                np.isfinite(p)
                and p > ALPHA
                and (cell["fails_sentinel"] is None or p > cell["fails_sentinel"]["p"])
            ):
                n = int(np.count_nonzero(used[k] & used[s]))
                cell["fails_sentinel"] = {
                    "run": runs[s].pk,
                    "label": runs[s].label,
                    "p": float(p),
                    "n": n,
                }
