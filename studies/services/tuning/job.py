"""Tuning as a worker job, as a metric run is one: :func:`start_tuning` checks the request
and saves the tuned run at once, PENDING (metric ``tuned:<tuner>``, its ``config``'s
``tuning_request`` the start run, aspect, tuner, options, seed and resamples), and
enqueues it on commit; :func:`execute_tuning` (the task's) claims it PENDING → RUNNING
and fills that same run through :func:`~.tune.tune_judge` (scores, ``config["tuning"]``,
then SUCCEEDED, or FAILED with its error). ``manage.py tune_judge`` runs the same job
inline.

Its queue: ``light`` for a tuner that prompts no judge (calibration maps stored scores),
else where the judge is: ``io`` for a served judge (in one of its endpoint's slots, its
requests under the endpoint's rate limits and the start run's cost cap), ``gpu`` for a
local model. While it runs, the tuner's progress (outputs rated of those it will rate)
is the run's ``done``/``total`` and a thread beats its heartbeat; each report finds out
whether the run was cancelled, and the job stops there. A worker killed mid-way leaves
the run RUNNING without a heartbeat: the sweeper puts it back to PENDING and enqueues it
again, and the tuning runs from the start: a served judge's and proposer's requests are
answered by the database's response cache (none is sent twice) and a local model is
deterministic, so it finds the same run. What the tuning spent is counted from the start
run's usage when the first attempt began (``tuning_request["start_usage"]``), so the
tuned run's usage holds every attempt's."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scoring.stats.tuned_delta import Delta
from studies.models import Aspect, Endpoint, MetricRun, Study
from studies.services import heartbeat, queue
from studies.services.catalog import endpoint_slots
from studies.services.runs import run_lease
from studies.services.tuning.derived import free_label, usage_of
from studies.services.tuning.routing import (
    PREFIX,
    REQUEST,
    enqueue_job,
    is_tuning_job,
    tuning_queue,
)
from studies.services.tuning.tune import checked_request, tune_judge

log = logging.getLogger(__name__)


class TuningCancelled(Exception):
    """The tuning job's run is no longer RUNNING (cancelled): the job stops."""


def start_tuning(
    run: MetricRun,
    aspect: Aspect,
    tuner_name: str,
    *,
    study: Study | None = None,
    options: dict[str, Any] | None = None,
    seed: int = 0,
    resamples: int = 1000,
    by: Any = None,
    enqueue: bool = True,
) -> MetricRun:
    """Check the request (the run succeeded, the tuner and its options, a split) and save
    the tuned run PENDING, enqueued on commit (``enqueue=False``: the caller executes
    it). A ValueError (a :class:`~.splits.SplitError`) says what is wrong."""
    try:
        chosen, resolved, split = checked_request(run, tuner_name, options, study)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    request = {
        "start_run": run.pk,
        "aspect": aspect.pk,
        "study": split.study_id,
        "tuner": chosen.name,
        "options": resolved,
        "seed": seed,
        "resamples": resamples,
        "queue": tuning_queue(run, chosen.name),
    }
    with transaction.atomic():
        job = MetricRun.objects.create(
            dataset=run.dataset,
            metric=f"{PREFIX}{chosen.name}",
            label=free_label(run.dataset_id, f"{run.label} [{chosen.name}]"),
            kind=MetricRun.Kind.IMPORTED,
            config={REQUEST: request, "aspect": aspect.code, "split": split.pk},
            aspect_version=aspect.current_version(),
            status=MetricRun.Status.PENDING,
            created_by=by,
            heartbeat_at=timezone.now(),
        )
        if enqueue:
            enqueue_job(job)
    return job


def _slot(request: dict[str, Any], start: MetricRun | None) -> AbstractContextManager[Any]:
    """One of the served judge's endpoint slots for an ``io`` job (see ``runs.io``), else
    nothing to hold."""
    frozen = (start.config.get("endpoint") or {}) if start is not None else {}
    endpoint = Endpoint.objects.filter(pk=frozen.get("id")).first() if frozen else None
    if request.get("queue") != "io" or endpoint is None:
        return nullcontext(True)
    return endpoint_slots.held(endpoint, float(settings.CONCORDIA["RUN_LEASE_SECONDS"]))


def execute_tuning(run_id: int, *, model_factory: Callable[[MetricRun], Any] | None = None) -> str:
    """Claim a PENDING tuning job and fill its run (see the module); safe to call twice:
    a message finding it claimed or ended does nothing. ``model_factory``: the judge's
    model (tests; default the start run's own)."""
    found = MetricRun.objects.filter(pk=run_id).only("config", "status", "metric").first()
    if found is None or not is_tuning_job(found) or found.status != MetricRun.Status.PENDING:
        return "not pending"
    request = found.config[REQUEST]
    start = MetricRun.objects.select_related("dataset").filter(pk=request["start_run"]).first()
    with _slot(request, start) as slot:
        if slot is None:  # every slot of the endpoint is held: later, still PENDING
            queue.send(queue.TUNE_JUDGE, run_id, queue="io", countdown=endpoint_slots.RETRY_SECONDS)
            return "the endpoint's slots are taken; later"
        now = timezone.now()
        claimed = MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.PENDING).update(
            status=MetricRun.Status.RUNNING,
            error="",
            started_at=now,
            heartbeat_at=now,
            done=0,
            total=0,
        )
        if not claimed:
            return "not pending"
        if "start_usage" not in request and start is not None:  # the first attempt's
            request = {**request, "start_usage": usage_of(start)}
            MetricRun.objects.filter(pk=run_id).update(config={**found.config, REQUEST: request})
        renew = getattr(slot, "renew", None)
        every = heartbeat.interval(run_lease().total_seconds())
        with heartbeat.beating(lambda: _beat(run_id, renew), every, f"tuning {run_id}"):
            return _tune(run_id, request, start, model_factory)


def _beat(run_id: int, renew: Callable[[], None] | None) -> None:
    MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
        heartbeat_at=timezone.now()
    )
    if renew is not None:
        renew()


def _report(run_id: int) -> Callable[[int, int], None]:
    """The tuner's progress written to the run; raises :class:`TuningCancelled` once the
    run is no longer RUNNING."""

    def report(done: int, total: int) -> None:
        total = max(int(total), 0)
        running = MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING)
        if not running.update(done=min(max(int(done), 0), total), total=total):
            raise TuningCancelled(f"run {run_id} is no longer running")

    return report


def _tune(
    run_id: int,
    request: dict[str, Any],
    start: MetricRun | None,
    model_factory: Callable[[MetricRun], Any] | None,
) -> str:
    run = MetricRun.objects.select_related("dataset").get(pk=run_id)
    running = MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING)
    try:
        if start is None:
            raise ValueError(f"the start run {request['start_run']} was deleted")
        tune_judge(
            start,
            Aspect.objects.get(pk=request["aspect"]),
            request["tuner"],
            study=Study.objects.filter(pk=request.get("study")).first(),
            options=request["options"],
            seed=int(request["seed"]),
            resamples=int(request["resamples"]),
            model_factory=model_factory,
            into=run,
            report=_report(run_id),
            usage_before=request.get("start_usage"),
        )
    except TuningCancelled:
        return "cancelled"
    except Exception as exc:  # the run ends FAILED with its error (unless it ended meanwhile)
        log.exception("tuning %s failed", run_id)
        failed = running.update(
            status=MetricRun.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        return "failed" if failed else "ended before the error"
    if not running.update(status=MetricRun.Status.SUCCEEDED, finished_at=timezone.now()):
        return "ended before it finished"  # cancelled at the last moment: it stays so
    run.dataset.bump_data_version()
    queue.send_on_commit(queue.WRITE_SNAPSHOT, run.dataset_id)
    return "succeeded"


def recorded_delta(run: MetricRun) -> tuple[Delta, float, float]:
    """The test Δ a tuned run recorded, with the tune figure and the gap (an undefined
    figure, stored as null, is NaN again)."""
    test = run.config["tuning"]["test"]

    def number(key: str) -> float:
        value = test.get(key)
        return math.nan if value is None else float(value)

    delta = Delta(
        statistic=str(test["statistic"]),
        start=number("start"),
        tuned=number("tuned"),
        delta=number("delta"),
        low=number("low"),
        high=number("high"),
        alpha=float(test["alpha"]),
        resamples=int(test["resamples"]),
        n_undefined=int(test["n_undefined"]),
        n_documents=int(test["n_documents"]),
        n_outputs=int(test["n_outputs"]),
    )
    return delta, number("tune_value"), number("gap")
