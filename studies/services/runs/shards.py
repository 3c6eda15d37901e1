"""A run's shards: whole documents that one worker scores at a time, so any number of
workers (on any number of machines) share one run through Celery.

The worker that claims a PENDING run loads the model, then sends one more run message
per pending shard ("help with this run"); any worker that takes one joins the RUNNING
run and claims shards with a conditional PENDING → RUNNING update, preferring the run
whose model it has loaded (it keeps claiming that run's shards before it returns to the
queue). A message that finds nothing left to claim does nothing. Scores are unique per
(run, output), so a shard scored twice (a worker thought dead that was not) writes each
score once. A shard whose worker stops writing for the run's lease goes back to PENDING
(the sweeper); the last worker to finish a shard, seeing none left pending or running,
marks the run SUCCEEDED.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from studies.models import MetricRun, Output, RunShard

log = logging.getLogger(__name__)


def worker_name() -> str:
    """This process, as the shards record who holds them."""
    return f"{socket.gethostname()}:{os.getpid()}"


def plan(run: MetricRun, outputs: Iterable[Output]) -> list[RunShard]:
    """Create the run's shards (``RUN_SHARD_DOCUMENTS`` whole documents each, in the
    order the run scores them) unless it has some; the run's shards."""
    existing = list(run.shards.order_by("index"))
    if existing:
        return existing
    size = settings.CONCORDIA["RUN_SHARD_DOCUMENTS"]
    keys = list(dict.fromkeys(o.document.doc_key for o in outputs))
    rows = [
        RunShard(run=run, index=k, doc_keys=keys[start : start + size])
        for k, start in enumerate(range(0, len(keys), size))
    ]
    RunShard.objects.bulk_create(rows, ignore_conflicts=True)
    return list(run.shards.order_by("index"))


def claim(run: MetricRun, worker: str, prefer: int | None = None) -> RunShard | None:
    """Take a PENDING shard of ``run`` (``prefer`` first, then in order), or None."""
    candidates = list(
        run.shards.filter(status=RunShard.Status.PENDING).values_list("index", flat=True)
    )
    if prefer in candidates:
        candidates.remove(prefer)
        candidates.insert(0, prefer)
    for index in candidates:
        taken = RunShard.objects.filter(
            run=run, index=index, status=RunShard.Status.PENDING
        ).update(
            status=RunShard.Status.RUNNING,
            worker=worker,
            heartbeat_at=timezone.now(),
            attempts=F("attempts") + 1,
        )
        if taken:
            return RunShard.objects.get(run=run, index=index)
    return None


def pending(run: MetricRun) -> list[int]:
    return list(run.shards.filter(status=RunShard.Status.PENDING).values_list("index", flat=True))


def has_work(run: MetricRun) -> bool:
    """Whether a joining worker would find a shard to claim."""
    return run.shards.filter(status=RunShard.Status.PENDING).exists()


def progress(shard: RunShard, outputs: int, tokens: int, seconds: float) -> None:
    """Count what an attempt scored on the shard and renew its lease."""
    RunShard.objects.filter(pk=shard.pk).update(
        outputs=F("outputs") + outputs,
        tokens=F("tokens") + tokens,
        seconds=F("seconds") + seconds,
        heartbeat_at=timezone.now(),
    )


def finish(shard: RunShard) -> None:
    RunShard.objects.filter(pk=shard.pk, status=RunShard.Status.RUNNING).update(
        status=RunShard.Status.DONE, heartbeat_at=timezone.now()
    )


def release(shard: RunShard) -> None:
    """Give a shard back (the run was cancelled while it was held)."""
    RunShard.objects.filter(pk=shard.pk, status=RunShard.Status.RUNNING).update(
        status=RunShard.Status.PENDING
    )


def all_done(run: MetricRun) -> bool:
    return not run.shards.exclude(status=RunShard.Status.DONE).exists()


def reopen(run: MetricRun) -> int:
    """Every shard not DONE back to PENDING (a run resumed or taken back by the sweeper)."""
    return run.shards.exclude(status=RunShard.Status.DONE).update(status=RunShard.Status.PENDING)


def reopen_documents(run: MetricRun, doc_keys: set[str]) -> int:
    """The DONE shards holding any of ``doc_keys`` back to PENDING (their failed outputs
    are scored again on resume)."""
    again = [
        s.pk for s in run.shards.filter(status=RunShard.Status.DONE) if doc_keys & set(s.doc_keys)
    ]
    return RunShard.objects.filter(pk__in=again).update(status=RunShard.Status.PENDING)


def stale(before: datetime, run: MetricRun | None = None) -> list[RunShard]:
    """RUNNING shards of RUNNING runs (of ``run``) whose worker has not written since
    ``before``."""
    found = RunShard.objects.filter(
        status=RunShard.Status.RUNNING,
        run__status=MetricRun.Status.RUNNING,
        heartbeat_at__lt=before,
    )
    if run is not None:
        found = found.filter(run=run)
    return list(found.select_related("run"))


def take_back(shard: RunShard, now: datetime, by: str = "the sweeper") -> bool:
    """A stale shard back to PENDING, if nothing changed since it was read; logged in the
    run's recoveries, with the run's heartbeat renewed (someone is on it: the run itself
    is not lost)."""
    assert shard.heartbeat_at is not None
    seconds = (now - shard.heartbeat_at).total_seconds()
    entry = {
        "at": now.isoformat(),
        "was": "running",
        "shard": shard.index,
        "by": by,
        "reason": (
            f"no heartbeat for {seconds:.0f} s while scoring shard {shard.index} "
            f"(worker {shard.worker})"
        ),
    }
    with transaction.atomic():
        if not RunShard.objects.filter(
            pk=shard.pk, status=RunShard.Status.RUNNING, heartbeat_at=shard.heartbeat_at
        ).update(status=RunShard.Status.PENDING):
            return False
        run = MetricRun.objects.select_for_update().get(pk=shard.run_id)
        provenance = dict(run.provenance or {})
        provenance["recoveries"] = [*provenance.get("recoveries", []), entry]
        MetricRun.objects.filter(pk=run.pk).update(provenance=provenance, heartbeat_at=now)
    log.warning("run %s: %s, taken back by %s", shard.run_id, entry["reason"], by)
    return True


def summary(run: MetricRun) -> dict[str, int]:
    """Shards per state and the number of workers that held one (for the run's timings)."""
    rows = list(run.shards.values_list("status", "worker"))
    counts = {state: sum(1 for s, _ in rows if s == state) for state in RunShard.Status.values}
    counts["workers"] = len({w for _, w in rows if w})
    return counts


# what a RUNNING run is doing (its timings["phase"], on its page): loading its model (a
# run on a served endpoint: connecting to it, which probes it when its probe is old),
# writing G-Eval's evaluation steps, then scoring
LOADING, CONNECTING = "loading model", "connecting to the endpoint"
WRITING_STEPS, SCORING = "writing evaluation steps", "scoring"


def renew(run_id: int, worker: str, now: datetime) -> int:
    """Renew the leases of the shards of run ``run_id`` that ``worker`` holds."""
    return RunShard.objects.filter(
        run_id=run_id, worker=worker, status=RunShard.Status.RUNNING
    ).update(heartbeat_at=now)


def set_phase(run: MetricRun, phase: str) -> None:
    """Record what a RUNNING run is doing (``timings["phase"]``)."""
    with transaction.atomic():
        row = MetricRun.objects.select_for_update().only("timings").get(pk=run.pk)
        timings = dict(row.timings or {})
        timings["phase"] = phase
        MetricRun.objects.filter(pk=run.pk).update(timings=timings, heartbeat_at=timezone.now())
    run.timings = timings
