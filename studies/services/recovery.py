"""The sweeper: work whose task was lost is enqueued again, with no human action.

A task is lost when its worker dies mid-run (SIGKILL, out of memory, a machine gone: the
run stays RUNNING and its heartbeat stops) or when its message vanishes before any worker
takes it (a Redis restart without persistence, a purged queue: the run stays PENDING).
:func:`sweep_stale_work` runs periodically (celery beat) and

- puts a RUNNING metric run whose heartbeat is older than ``RUN_LEASE_SECONDS`` back to
  PENDING and enqueues it (every worker on it is gone: a live one beats from a thread
  whatever step it is in; its held shards reopen); a tuning job's run likewise
  (:mod:`.tuning.job`: it tunes again from the start, its requests answered by the
  response cache);
- puts a RUNNING shard whose worker has not written for ``RUN_LEASE_SECONDS`` back to
  PENDING and sends a message for it, while other workers go on with the run's other
  shards;
- enqueues again a PENDING run or import not started ``PENDING_GRACE_SECONDS`` after it was
  last enqueued, waiting twice as long after each recovery (a long queue is not a lost
  task, and each extra message is a no-op that should stay rare);
- puts a RUNNING import back to PENDING and enqueues it when the database session of its
  worker is gone (PostgreSQL: a database restart, or a cut connection, rolled its
  transaction back; :mod:`.dbsessions`), else when it is older than
  ``IMPORT_LEASE_SECONDS``;
- sends again the messages that could not be sent when their transaction committed
  (:func:`studies.services.queue.resend_unsent`: the broker did not answer then);
- removes the resumable uploads that received nothing for ``UPLOAD_SESSION_SECONDS``,
  with what they received (:func:`studies.services.uploads.remove_expired`).

Each recovery records its reason by cause: "no heartbeat for N s while <the step it was
in>" for running work, "queued longer than N s …" (saying whether any worker is alive on
its queue) for work that only waited.

Each change is a conditional UPDATE on the status and heartbeat read, so two sweepers (or
a worker writing at that moment) never both act. Enqueueing twice is harmless: a run or
job is claimed by a conditional PENDING → RUNNING UPDATE, scores are unique per (run,
output) and a run skips the outputs already scored, and an import validates everything
before writing in one transaction and updates rather than duplicates on a second pass.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from studies.models import ImportJob, MetricRun, RunShard
from studies.services import dbsessions, queue, uploads, workers
from studies.services.runs import run_lease, shards
from studies.services.runs.core import send_shard
from studies.services.runs.shards import SCORING
from studies.services.tuning.routing import JOBS as TUNING_JOBS
from studies.services.tuning.routing import enqueue_job, job_queue

log = logging.getLogger(__name__)
MAX_BACKOFF_DOUBLINGS = 6  # at most 64 × the grace period between two re-enqueues


def sweep_stale_work(now: datetime | None = None) -> dict[str, int]:
    """Recover lost runs and imports (see the module's docstring); counts per kind."""
    now = now or timezone.now()
    conf = settings.CONCORDIA
    grace = timedelta(seconds=conf["PENDING_GRACE_SECONDS"])
    import_lease = timedelta(seconds=conf["IMPORT_LEASE_SECONDS"])
    counts = {
        "running_runs": 0,
        "pending_runs": 0,
        "running_imports": 0,
        "pending_imports": 0,
        "running_shards": 0,
        "unsent_tasks": queue.resend_unsent(),
        "expired_uploads": uploads.remove_expired(now),
    }

    runs = MetricRun.objects.filter(Q(kind=MetricRun.Kind.COMPUTED) | TUNING_JOBS)
    for shard in shards.stale(now - run_lease()):  # its worker died; others may still work
        counts["running_shards"] += _recover_shard(shard, now)
    for run in _older(runs.filter(status=MetricRun.Status.RUNNING), now - run_lease()):
        seconds = (now - run.last).total_seconds()
        doing = (run.timings or {}).get("phase") or SCORING
        reason = f"no heartbeat for {seconds:.0f} s while {doing}: its worker died"
        counts["running_runs"] += _recover_run(run, reason, now)
    states = workers.worker_states(now)
    for run in _older(runs.filter(status=MetricRun.Status.PENDING), now - grace):
        waited = _backoff(grace, len(run.provenance.get("recoveries", [])))
        if run.last < now - waited:
            queued = job_queue(run)
            reason = _queued_reason(now - run.last, waited, queued, states)
            counts["pending_runs"] += _recover_run(run, reason, now)

    jobs = ImportJob.objects.all()
    sessions = dbsessions.open_sessions()
    if sessions is not None:  # its worker's session is gone: so is its transaction
        for job in jobs.filter(status=ImportJob.Status.RUNNING).exclude(session=""):
            if job.session not in sessions:
                reason = "its worker's database session ended (a database restart?)"
                counts["running_imports"] += _recover_job(job, now, reason, connection=True)
    for job in _older(jobs.filter(status=ImportJob.Status.RUNNING), now - import_lease):
        seconds = (now - job.last).total_seconds()
        reason = f"importing for {seconds:.0f} s, longer than the {import_lease.total_seconds():.0f} s lease"
        counts["running_imports"] += _recover_job(job, now, reason)
    for job in _older(jobs.filter(status=ImportJob.Status.PENDING), now - grace):
        waited = _backoff(grace, job.recoveries)
        if job.last < now - waited:
            reason = _queued_reason(now - job.last, waited, "light", states)
            counts["pending_imports"] += _recover_job(job, now, reason)
    if any(counts.values()):
        log.warning("sweeper recovered lost work: %s", counts)
    return counts


def _older(rows: QuerySet, before: datetime) -> QuerySet:  # type: ignore[type-arg]
    """Rows whose last sign of life (``last``) is before ``before``, oldest first."""
    return (
        rows.annotate(last=Coalesce("heartbeat_at", "created_at"))
        .filter(last__lt=before)
        .order_by("last")
    )


def _backoff(grace: timedelta, recoveries: int) -> timedelta:
    return grace * 2 ** min(recoveries, MAX_BACKOFF_DOUBLINGS)


def _queued_reason(
    waited: timedelta, limit: timedelta, queue_name: str, states: list[workers.WorkerState]
) -> str:
    """Why a queued run or import is sent again: how long it waited, and whether any
    worker is alive on its queue (else its message may be fine: nobody takes it)."""
    alive = [s for s in workers.serving(states, [queue_name]) if s.alive]
    why = (
        "its message was lost or is behind others"
        if alive
        else f"no worker alive on the queue {queue_name}"
    )
    return (
        f"queued longer than {limit.total_seconds():.0f} s "
        f"({waited.total_seconds():.0f} s) without a worker taking it: {why}"
    )


def _recover_run(run: MetricRun, reason: str, now: datetime) -> int:
    """Back to PENDING (if nothing changed since it was read), logged, enqueued on commit."""
    entry = {"at": now.isoformat(), "was": run.status, "reason": reason}
    provenance = dict(run.provenance or {})
    provenance["recoveries"] = [*provenance.get("recoveries", []), entry]
    with transaction.atomic():
        changed = MetricRun.objects.filter(
            pk=run.pk, status=run.status, heartbeat_at=run.heartbeat_at
        ).update(status=MetricRun.Status.PENDING, heartbeat_at=now, provenance=provenance)
        if changed:
            enqueue_job(run)
    if changed:
        log.warning("run %s recovered (%s): enqueued again", run.pk, reason)
    return changed


def _recover_shard(shard: RunShard, now: datetime) -> int:
    """A dead worker's shard back to PENDING (logged in the run's recoveries) and a
    message sent for it."""
    with transaction.atomic():
        if not shards.take_back(shard, now):
            return 0
        send_shard(shard.run, shard.index)
    return 1


def _recover_job(job: ImportJob, now: datetime, reason: str, connection: bool = False) -> int:
    """Back to PENDING (if nothing changed since it was read), the reason logged on the
    job (``connection``: its database connection was lost), enqueued on commit."""
    log_entry = {"at": now.isoformat(), "was": job.status, "reason": reason}
    if connection:
        log_entry["connection"] = True
    with transaction.atomic():
        changed = ImportJob.objects.filter(
            pk=job.pk, status=job.status, heartbeat_at=job.heartbeat_at
        ).update(
            status=ImportJob.Status.PENDING,
            heartbeat_at=now,
            session="",
            recoveries=F("recoveries") + 1,
            recovery_log=[*job.recovery_log, log_entry],
        )
        if changed:
            queue.send_on_commit(queue.IMPORT_UPLOAD, job.pk)
    if changed:
        log.warning("import job %s (%s) recovered (%s): enqueued again", job.pk, job.status, reason)
    return changed
