"""What every metric run shares: saving a PENDING run with its frozen configuration and
enqueueing it on commit; executing it (claim, score document by document in chunks,
bulk-write, skip what an earlier attempt scored); cancel and resume.

The metric-specific parts are runners (:mod:`.types`), found by name in
:mod:`.registry`: each builds its frozen configuration and prepares a scorer for a run,
and declares the queue its runs go to.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

import studies.services.runs.served as served
import studies.services.runs.shards as shards
from scoring.lm.served import (
    CostCapReached,
    EndpointBlocked,
    EndpointUnavailable,
    ModelChanged,
    RequestRefused,
)
from scoring.metrics.base import Item, ScoreResult
from studies.models import Dataset, MetricRun, MetricScore, Output, RunShard
from studies.services import heartbeat, queue
from studies.services.runs.model import record_engine as record_engine  # where tests find it
from studies.services.runs.registry import queue_for, runner
from studies.services.runs.served import settle_probe
from studies.services.runs.shards import CONNECTING, LOADING, SCORING, set_phase
from studies.services.runs.types import ModelFactory, Plan, RunError, Scorer

log = logging.getLogger(__name__)
# the task of each queue
TASKS = {
    "cpu": queue.RUN_METRIC_CPU,
    "gpu": queue.RUN_METRIC,
    "io": queue.RUN_METRIC_IO,
    "quick": queue.RUN_METRIC_QUICK,
}
# failures of the endpoint, not of a document: the whole run stops or waits
ENDPOINT_WIDE = (EndpointUnavailable, CostCapReached, ModelChanged, EndpointBlocked)
Keepalive = Callable[[], None]


def enqueue_run(run: MetricRun) -> None:
    """Send the run to the task of its queue once the transaction commits."""
    queue.send_on_commit(TASKS[queue_for(run.metric, run.config)], run.pk)


def run_lease() -> timedelta:
    """How long a RUNNING run may go without a heartbeat before it counts as lost."""
    return timedelta(seconds=settings.CONCORDIA["RUN_LEASE_SECONDS"])


def save_run(
    dataset: Dataset, plan: Plan, *, user: Any = None, enqueue_it: bool = True
) -> MetricRun:
    """Save a PENDING run with its frozen configuration; enqueue it once committed."""
    with transaction.atomic():
        run = MetricRun.objects.create(
            dataset=dataset,
            metric=plan.metric,
            label=plan.label,
            kind=MetricRun.Kind.COMPUTED,
            config=plan.config,
            aspect_version=plan.aspect_version,
            template_version_id=plan.template_version_id,
            steps_id=plan.steps_id,
            created_by=user,
            total=len(
                outputs_of(dataset, plan.config.get("limit_docs"), plan.config.get("doc_keys"))
            ),
            heartbeat_at=timezone.now(),
        )
        if enqueue_it:
            enqueue_run(run)
    return run


def outputs_of(
    dataset: Dataset, limit_docs: int | None, doc_keys: list[str] | None = None
) -> list[Output]:
    """The outputs a run scores, by document key then system (``limit_docs``: the first N;
    ``doc_keys``: only these documents)."""
    outputs = Output.objects.filter(document__dataset=dataset).select_related("document")
    if doc_keys:
        outputs = outputs.filter(document__doc_key__in=doc_keys)
    if limit_docs:
        keys = list(
            dataset.documents.order_by("doc_key").values_list("doc_key", flat=True)[:limit_docs]
        )
        outputs = outputs.filter(document__doc_key__in=keys)
    return list(outputs.order_by("document__doc_key", "system_id"))


def item_of(output: Output) -> Item:
    """The scoring engine's view of an output and its document."""
    context = output.document.context
    history = (
        tuple(str(t.get("text", t)) if isinstance(t, dict) else str(t) for t in context)
        if isinstance(context, list)
        else ()
    )
    return Item(
        key=output.pk,
        doc_key=output.document.doc_key,
        source=output.document.source,
        hypothesis=output.text,
        references=tuple(output.reference_texts()),  # its own, where its line gave them
        history=history,
    )


def execute_run(
    run_id: int,
    *,
    model_factory: ModelFactory | None = None,
    chunk_outputs: int | None = None,
    shard: int | None = None,
    fan_out: bool = False,
    queue: str | None = None,
    keepalive: Keepalive | None = None,
) -> str:
    """Claim a PENDING run (or join a RUNNING one that has shards left) and score its
    shards until none is left to claim; safe to call twice.

    ``shard``: the shard this message names, claimed first. ``fan_out`` (the worker's
    task): once the model is loaded, send one more message per pending shard so other
    workers join. ``model_factory`` replaces the metric's own model loader (tests).
    ``keepalive`` is called before each chunk (a held slot's lease renewed).
    """
    now = timezone.now()
    claimed = MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.PENDING).update(
        status=MetricRun.Status.RUNNING, error="", started_at=now, heartbeat_at=now
    )
    run = MetricRun.objects.select_related("dataset").filter(pk=run_id).first()
    if run is None or run.status != MetricRun.Status.RUNNING:
        return "not pending"
    if not claimed and not shards.has_work(run):
        return "not pending"  # a second delivery, or every shard is taken
    worker = shards.worker_name()
    every = heartbeat.interval(run_lease().total_seconds())
    try:
        # the run's heartbeat (and its shards') from a thread, whatever step this worker
        # is in: loading, connecting, writing steps, scoring a long document
        with heartbeat.beating(lambda: _beat(run_id, worker), every, f"run {run_id}"):
            return _score_shards(
                run,
                model_factory,
                chunk_outputs or settings.CONCORDIA["RUN_CHUNK_OUTPUTS"],
                leader=bool(claimed),
                prefer=shard,
                fan_out=fan_out,
                queue=queue,
                keepalive=keepalive,
            )
    except EndpointUnavailable as exc:  # back to PENDING, or FAILED past the patience
        note_outage(run_id, served.outage(run_id))
        return _wait_for_endpoint(run, exc)
    except CostCapReached as exc:  # stopped: every finished document's scores stay
        MetricRun.objects.filter(pk=run_id).update(
            status=MetricRun.Status.FAILED,
            error=f"Stopped at the cost cap: {exc}. The finished scores are kept.",
            finished_at=timezone.now(),
        )
        _ended(run)
        return "stopped: cost cap"
    except Exception as exc:  # the run ends FAILED with its error; finished scores stay
        log.exception("run %s failed", run_id)
        # only a run still RUNNING: one that ended meanwhile (succeeded, cancelled) keeps
        # its status whatever fails after
        failed = MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
            status=MetricRun.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        if failed:
            _ended(run)  # tables label the run as failed, partial
        return "failed" if failed else "ended before the error"


def _wait_for_endpoint(run: MetricRun, exc: EndpointUnavailable) -> str:
    """The run's endpoint did not answer: back to PENDING (the sweeper sends it again),
    the scores so far kept; unless no score has been written for
    ``SERVED_GIVE_UP_SECONDS`` since the endpoint first failed it (``timings``'
    ``unavailable_since``, cleared by every written chunk): then FAILED with the reason,
    and Resume tries again."""
    now = time.time()
    patience = float(settings.CONCORDIA["SERVED_GIVE_UP_SECONDS"])
    with transaction.atomic():
        row = MetricRun.objects.select_for_update().only("timings").get(pk=run.pk)
        timings = dict(row.timings or {})
        since = float(timings.setdefault("unavailable_since", now))
        MetricRun.objects.filter(pk=run.pk).update(timings=timings)
    waited = now - since
    running = MetricRun.objects.filter(pk=run.pk, status=MetricRun.Status.RUNNING)
    if waited >= patience:
        log.warning("run %s: its endpoint kept failing for %.0f s; failed: %s", run.pk, waited, exc)
        if running.update(
            status=MetricRun.Status.FAILED,
            error=f"The endpoint did not answer for {waited:.0f} s (SERVED_GIVE_UP_SECONDS: "
            f"{patience:g}): {exc}. The scores so far are kept; Resume tries again.",
            finished_at=timezone.now(),
        ):
            _ended(run)
        return "failed: endpoint unavailable"
    log.warning("run %s: its endpoint is unavailable; pending again: %s", run.pk, exc)
    running.update(
        status=MetricRun.Status.PENDING,
        error=f"Waiting for the endpoint (the run is retried; scores so far are kept): {exc}",
        heartbeat_at=timezone.now(),
    )
    return "pending: endpoint unavailable"


def _beat(run_id: int, worker: str) -> None:
    """One heartbeat of a run this worker executes: the run's, the shards it holds, and
    whether its endpoint is answering (see :func:`note_outage`)."""
    now = timezone.now()
    MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(heartbeat_at=now)
    shards.renew(run_id, worker, now)
    note_outage(run_id, served.outage(run_id))


def note_outage(run_id: int, found: dict[str, Any] | None) -> None:
    """Record in the run's ``timings["outage"]`` that its served endpoint stopped
    answering (since when, the last failure) while the clients retry, or that it answers
    again (the entry goes); written only when it changes."""
    current = MetricRun.objects.filter(pk=run_id).values_list("timings", flat=True).first()
    if current is None or (current or {}).get("outage") == found:
        return
    with transaction.atomic():
        row = MetricRun.objects.select_for_update().only("timings").get(pk=run_id)
        timings = dict(row.timings or {})
        if found:
            timings["outage"] = found
        else:
            timings.pop("outage", None)
        MetricRun.objects.filter(pk=run_id).update(timings=timings)


def outage(run: MetricRun) -> dict[str, Any] | None:
    """For the run page: since when the served endpoint of a running or waiting run has
    not answered (a datetime) and the last failure; None while it answers."""
    found = (run.timings or {}).get("outage")
    if not found or run.is_finished:
        return None
    return {"since": datetime.fromtimestamp(found["since"], tz=UTC), "last": found["last"]}


def _ended(run: MetricRun) -> None:
    """The run ended (succeeded, failed, stopped or cancelled): a new data version, and a
    light worker writes the dataset's columnar snapshot of it (a message the broker does
    not take now is sent again by the sweeper; the run's status stands either way)."""
    run.dataset.bump_data_version()
    queue.send_on_commit(queue.WRITE_SNAPSHOT, run.dataset_id)


def _prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    found = runner(run.metric)
    if found is None:
        raise RunError(f"no scorer for the metric {run.metric!r}")
    settle_probe(run, found.served)  # an endpoint never probed is probed here, not in a request
    return found.prepare(run, todo, model_factory)


def _n_tokens(results: list[ScoreResult]) -> int:
    return sum(
        sum(d.get("n_tokens", []))
        for r in results
        for d in r.details.values()
        if isinstance(d, dict) and isinstance(d.get("n_tokens"), list)
    )


def _score_shards(
    run: MetricRun,
    model_factory: ModelFactory | None,
    chunk_outputs: int,
    *,
    leader: bool,
    prefer: int | None,
    fan_out: bool,
    queue: str | None = None,
    keepalive: Keepalive | None = None,
) -> str:
    outputs = outputs_of(run.dataset, run.config.get("limit_docs"), run.config.get("doc_keys"))
    if leader:  # the run was PENDING: nobody holds a shard, so none is lost by reopening
        shards.plan(run, outputs)
        shards.reopen(run)
    scored = set(MetricScore.objects.filter(run=run).values_list("output_id", flat=True))
    remaining = [o for o in outputs if o.pk not in scored]
    if leader:
        set_phase(run, CONNECTING if run.config.get("endpoint") else LOADING)
    started = time.perf_counter()
    scorer = _prepare(run, remaining, model_factory)
    if leader:
        _start_timings(run, len(scored), round(time.perf_counter() - started, 3))
        if fan_out:  # the model loads: other workers may join for the other shards
            for index in shards.pending(run)[1:]:
                send_shard(run, index, queue)
    worker = shards.worker_name()
    while (shard := _next_shard(run, worker, prefer)) is not None:
        prefer = None
        keys = set(shard.doc_keys)
        todo = [o for o in remaining if o.document.doc_key in keys]
        if not _score_shard(run, shard, todo, scorer, chunk_outputs, keepalive):
            shards.release(shard)
            return "cancelled"
        shards.finish(shard)
    if not shards.all_done(run):
        return "shards done"  # others still hold shards; the last to finish ends the run
    return _finish(run)


def _finish(run: MetricRun) -> str:
    """The run's last shard is done: SUCCEEDED, unless more than ``RUN_MAX_ERROR_SHARE``
    of its outputs got no score (a server answering garbage, a database refusing
    connections): then FAILED, saying how many and why, the scores kept, and Resume
    scores the failed outputs again. Never a SUCCEEDED run made of errors."""
    rows = MetricScore.objects.filter(run=run)
    done = rows.count()  # every worker's, all committed
    failed = rows.filter(value__isnull=True)
    n_failed = failed.count()
    share = float(settings.CONCORDIA["RUN_MAX_ERROR_SHARE"])
    if done and n_failed > share * done:
        first = str(failed.order_by("pk").values_list("error", flat=True).first() or "")
        error = (
            f"{n_failed} of {done} outputs got no score (more than {share:.0%}); the first "
            f"error: {first[:300]}. The {done - n_failed} scores are kept; Resume scores the "
            "failed outputs again."
        )
        status, said = MetricRun.Status.FAILED, "failed: mostly errors"
    else:
        error, status, said = "", MetricRun.Status.SUCCEEDED, "succeeded"
    MetricRun.objects.filter(pk=run.pk, status=MetricRun.Status.RUNNING).update(
        status=status, finished_at=timezone.now(), done=done, error=error
    )
    _ended(run)  # tables label runs by status: no cached "running" row
    return said


def _next_shard(run: MetricRun, worker: str, prefer: int | None) -> RunShard | None:
    """The next shard this worker scores: first one whose worker has been silent for the
    run's lease (taken back here, as the sweeper would, without waiting for the sweeper's
    turn on a busy queue), then a PENDING one (``prefer`` first), or None."""
    now = timezone.now()
    for lost in shards.stale(now - run_lease(), run):
        if shards.take_back(lost, now, by=worker):
            prefer = lost.index
            break
    return shards.claim(run, worker, prefer)


def _start_timings(run: MetricRun, done: int, prepare_s: float) -> None:
    """What an attempt's rates are measured from: the scores and seconds before it; the
    model is loaded, so the run is scoring (this attempt has no rate yet)."""
    with transaction.atomic():
        row = MetricRun.objects.select_for_update().only("timings").get(pk=run.pk)
        timings = dict(row.timings or {})
        timings.update(
            prior_seconds=float(timings.get("seconds", 0.0)),
            done_at_start=done,
            tokens_at_start=int(timings.get("target_tokens", 0)),
            prepare_s=prepare_s,
            phase=SCORING,
            scoring_since=time.time(),
        )
        for stale in ("outputs_per_s", "scoring_outputs_per_s"):  # the last attempt's rates
            timings.pop(stale, None)
        MetricRun.objects.filter(pk=run.pk).update(timings=timings, heartbeat_at=timezone.now())
    run.timings = timings


def _score_shard(
    run: MetricRun,
    shard: RunShard,
    todo: list[Output],
    scorer: Scorer,
    chunk_outputs: int,
    keepalive: Keepalive | None = None,
) -> bool:
    """Score a shard's outputs chunk by chunk (by default one document each, so progress
    moves per document and a cancel stops after the current one); False when the run is
    no longer RUNNING: cancelled, or cancelled and resumed before this worker noticed (it
    is PENDING again, and its new message starts it afresh, RUNNING, instead of this
    worker scoring on under a "Pending" badge)."""
    slow = settings.CONCORDIA["TEST_SLOW_CHUNK_SECONDS"]  # tests only: time to kill a worker
    for chunk in chunks_by_document(todo, chunk_outputs):
        if not MetricRun.objects.filter(pk=run.pk, status=MetricRun.Status.RUNNING).exists():
            return False
        if keepalive is not None:
            keepalive()
        items = [item_of(o) for o in chunk]
        if slow:
            time.sleep(slow)
        started = time.perf_counter()
        try:
            results = scorer(items)
        except ENDPOINT_WIDE:
            raise  # the endpoint, not the document: the whole run stops or waits
        except RequestRefused as exc:
            if exc.endpoint_wide:  # its key, model or URL: no document can succeed
                raise
            results = [ScoreResult(i.key, None, error=f"RequestRefused: {exc}") for i in items]
        except Exception as exc:  # a failing document marks its outputs, the others go on
            log.warning("run %s: document %s failed: %s", run.pk, items[0].doc_key, exc)
            results = [
                ScoreResult(i.key, None, error=f"{type(exc).__name__}: {exc}") for i in items
            ]
        _write(run, shard, results, time.perf_counter() - started)
    return True


def chunks_by_document(outputs: list[Output], size: int) -> list[list[Output]]:
    """Whole documents per chunk (their outputs share a prompt prefix), about ``size`` outputs."""
    chunks: list[list[Output]] = []
    current: list[Output] = []
    for output in outputs:
        if current and len(current) >= size and current[-1].document_id != output.document_id:
            chunks.append(current)
            current = []
        current.append(output)
    if current:
        chunks.append(current)
    return chunks


def storable(result: ScoreResult) -> ScoreResult:
    """``result``, or its error when it cannot be stored as it is: a value that is not a
    finite number, details that are not plain JSON (NaN, Infinity, other types). Such a
    value is the output's located error, never a database error."""
    problem = ""
    if result.value is not None and not (
        isinstance(result.value, int | float) and math.isfinite(result.value)
    ):
        problem = f"the metric gave {result.value!r}, not a finite number"
    else:
        try:
            json.dumps(result.details, allow_nan=False)
        except (TypeError, ValueError) as exc:
            problem = f"the metric's details cannot be stored ({exc})"
    return ScoreResult(result.key, None, error=problem) if problem else result


def _write(run: MetricRun, shard: RunShard, results: list[ScoreResult], seconds: float) -> None:
    """Save a chunk's scores, count them on the shard, and update the run's progress and
    rates (over every worker: scores done, tokens summed over the shards, wall time)."""
    results = [storable(r) for r in results]
    rows = [
        MetricScore(run=run, output_id=r.key, value=r.value, details=r.details, error=r.error or "")
        if r.value is not None
        else MetricScore(run=run, output_id=r.key, details=r.details, error=r.error or "not scored")
        for r in results
    ]
    with transaction.atomic():
        MetricScore.objects.bulk_create(rows, ignore_conflicts=True)  # unique (run, output)
        shards.progress(shard, len(results), _n_tokens(results), seconds)
        # The run's row is locked before counting: another worker's write commits before
        # this count (each statement reads what is committed), so no write of two
        # concurrent workers leaves a stale ``done`` behind.
        row = MetricRun.objects.select_for_update().only("timings", "started_at").get(pk=run.pk)
        done = MetricScore.objects.filter(run=run).count()
        timings = dict(row.timings or {})
        timings.pop("unavailable_since", None)  # a chunk written: the endpoint answers
        wall = max((timezone.now() - (row.started_at or timezone.now())).total_seconds(), 1e-9)
        tokens = int(run.shards.aggregate(t=Sum("tokens"))["t"] or 0)
        this_attempt = done - int(timings.get("done_at_start", 0))
        timings.update(
            seconds=round(float(timings.get("prior_seconds", 0.0)) + wall, 3),
            target_tokens=tokens,
            workers=shards.summary(run)["workers"],
            outputs_per_s=round(this_attempt / wall, 3),
            tokens_per_s=round((tokens - int(timings.get("tokens_at_start", 0))) / wall, 1),
        )
        if timings.get("scoring_since"):  # the rate once the model is loaded: for the ETA
            scoring = max(time.time() - float(timings["scoring_since"]), 1e-9)
            timings["scoring_outputs_per_s"] = round(this_attempt / scoring, 3)
        MetricRun.objects.filter(pk=run.pk).update(
            done=done, timings=timings, heartbeat_at=timezone.now()
        )
        run.dataset.bump_data_version()


def send_shard(run: MetricRun, index: int, on: str | None = None) -> None:
    """One more message for the run, naming a shard: whoever takes it joins the run
    (``on``: the queue, else the run's own)."""
    queue.send_on_commit(TASKS[queue_for(run.metric, run.config)], run.pk, index, queue=on)


def cancel_run(run: MetricRun) -> bool:
    """Ask a pending or running run to stop after its current document (chunk), or stop a
    run waiting for batch answers; the scores written so far are kept and count as a
    partial run."""
    cancelled = bool(
        MetricRun.objects.filter(
            pk=run.pk,
            status__in=[
                MetricRun.Status.PENDING,
                MetricRun.Status.RUNNING,
                MetricRun.Status.WAITING,
            ],
        ).update(status=MetricRun.Status.CANCELLED, finished_at=timezone.now())
    )
    if cancelled:  # tables label the run as cancelled: no cached "running" row
        _ended(run)
    return cancelled


def can_resume(run: MetricRun) -> bool:
    if (
        run.kind != MetricRun.Kind.COMPUTED
        or run.status == MetricRun.Status.SUCCEEDED
        and run.done >= run.total
    ):
        return False
    if run.status == MetricRun.Status.RUNNING:
        last = run.heartbeat_at or run.started_at
        return last is None or timezone.now() - last > run_lease()
    # a run waiting for batch answers: Resume scores the rest online instead
    return run.status in (
        MetricRun.Status.FAILED,
        MetricRun.Status.CANCELLED,
        MetricRun.Status.WAITING,
    )


def resume_run(run: MetricRun, *, force: bool = False, enqueue: bool = True) -> bool:
    """Put a failed, cancelled or stalled run back to PENDING; its scores are kept and
    its failed outputs (rows without a value) are scored again."""
    if not (force or can_resume(run)):
        return False
    with transaction.atomic():
        failed = MetricScore.objects.filter(run=run, value__isnull=True)
        docs = set(failed.values_list("output__document__doc_key", flat=True))
        if docs:
            failed.delete()
            shards.reopen_documents(run, docs)
        row = MetricRun.objects.select_for_update().only("timings").get(pk=run.pk)
        timings = {k: v for k, v in (row.timings or {}).items() if k != "unavailable_since"}
        MetricRun.objects.filter(pk=run.pk).update(
            status=MetricRun.Status.PENDING,
            finished_at=None,
            error="",
            heartbeat_at=timezone.now(),
            timings=timings,
            done=MetricScore.objects.filter(run=run).count(),
        )
        if enqueue:
            enqueue_run(run)
    return True
