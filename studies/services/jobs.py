"""The jobs page: the work queued and running in the workers, lane by lane, and the
workers themselves.

A lane is what one worker of the layout that ``manage.py demo`` and compose run takes
in turn (:data:`evalsite.celery.LANES`): the model worker's ``cpu`` and ``gpu`` queues,
the quick worker's short metrics, the light worker's imports and computed pages, the io
worker's served runs. Within a lane, queued work is shown in the order the worker will
take it, with the work ahead of it, so "Pending" always says what it waits for: each
queue's messages in the order they were sent, and a worker on two queues takes one from
each in turn (kombu's fair cycle on the filesystem broker, the rotating BRPOP on Redis).
Each lane lists its workers as alive, not answering or dead with their last heartbeat
(:mod:`.workers`); while none is alive, its queued work says that nothing serves it
instead of when it starts.

Runs waiting for batch answers (a request file out with a batch processor) are in no
lane: no worker takes them; the page lists them apart (:func:`waiting_runs`).

Sources: metric runs, tuning jobs and imports (rows), what other apps register in
:data:`studies.hooks.job_sources` (learned metrics in training), and the computed pages
(matrices, diagnostics, plans, agreement), which live in the cache and are recorded
here by :func:`track` while a worker computes them. A researcher sees their own work and
that of the datasets they may see in full; anyone else's only as "another researcher's
run", so that positions add up without telling what others study.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from evalsite.celery import LANES as LANE_QUEUES
from studies import hooks
from studies.hooks import Job
from studies.models import Dataset, ImportJob, MetricRun
from studies.permissions import visible_datasets
from studies.services import workers
from studies.services.runs import eta
from studies.services.runs.registry import queue_for
from studies.services.tuning.routing import JOBS as TUNING_JOBS
from studies.services.tuning.routing import job_queue

LANE_LABELS = {  # the lanes the page shows (the sweeper's has nothing to queue)
    "model": "Model worker (queues cpu, gpu): model-based metric runs and training",
    "quick": "Quick worker (queue quick): ROUGE, BLEU, chrF and the model-free sentinels",
    "light": "Light worker (queue light): imports and computed pages",
    "io": "io worker (queue io): runs on served endpoints",
}
# what the API calls the runs waiting for batch answers: no worker's lane (none takes them)
BATCH_LANE = "batch"
# queue → the lane (one worker) that serves it, as local_workers and compose lay them out
LANES = {queue: lane for lane, queues in LANE_QUEUES.items() for queue in queues}
_TRACKED = "jobs:computations"  # the cache key of the computed pages being computed
_TRACK_SECONDS = 600


@dataclass(frozen=True)
class Lane:
    name: str
    label: str
    jobs: list[Job]
    workers: list[workers.WorkerState] = field(default_factory=list)

    @property
    def served(self) -> bool:
        """Whether a worker alive now takes the lane's queues."""
        return any(w.alive for w in self.workers)


def _runs() -> Iterable[Job]:
    active = (MetricRun.Status.PENDING, MetricRun.Status.RUNNING)
    runs = MetricRun.objects.filter(status__in=active).filter(
        Q(kind=MetricRun.Kind.COMPUTED) | TUNING_JOBS  # a tuning job: a run it fills
    )
    for run in runs.select_related("created_by", "dataset").order_by("pk"):
        running = run.status == MetricRun.Status.RUNNING
        yield Job(
            kind="run",
            title=f"{run.label} on {run.dataset.name}",
            url=reverse("studies:run-detail", args=[run.pk]),
            queue=job_queue(run),
            running=running,
            user=run.created_by.username if run.created_by else "",
            dataset_id=run.dataset_id,
            queued_at=run.created_at if running else (run.heartbeat_at or run.created_at),
            started_at=run.started_at if running else None,
            done=run.done,
            total=run.total,
            eta_seconds=eta(run),
        )


def _imports() -> Iterable[Job]:
    active = (ImportJob.Status.PENDING, ImportJob.Status.RUNNING)
    for job in ImportJob.objects.filter(status__in=active).select_related("created_by"):
        running = job.status == ImportJob.Status.RUNNING
        yield Job(
            kind="import",
            title=f"import of {job.original_name} into {job.dataset_name}",
            url=reverse("studies:import-detail", args=[job.pk]),
            queue="light",
            running=running,
            user=job.created_by.username,
            dataset_id=job.dataset_id,
            owner_id=job.created_by_id,
            queued_at=job.heartbeat_at or job.created_at,
        )


def track(key: str, kind: str, dataset: Dataset, title: str, url: str, user: Any = None) -> None:
    """Record that a worker was asked to compute the page under ``key`` (a cache key that
    exists while it is being computed: the caller's "pending" or "progress" key)."""
    tracked = dict(cache.get(_TRACKED) or {})
    tracked[key] = {
        "kind": kind,
        "title": title,
        "url": url,
        "dataset_id": dataset.pk,
        "user": getattr(user, "username", "") or "",
        "queued_at": timezone.now().isoformat(),
    }
    cache.set(_TRACKED, tracked, _TRACK_SECONDS)


def _computations() -> Iterable[Job]:
    tracked = dict(cache.get(_TRACKED) or {})
    alive = {key: entry for key, entry in tracked.items() if cache.get(key) is not None}
    if len(alive) != len(tracked):  # finished ones drop out
        cache.set(_TRACKED, alive, _TRACK_SECONDS)
    for key, entry in alive.items():
        progress = cache.get(key)
        counts = progress if isinstance(progress, dict) and progress.get("total") else {}
        yield Job(
            kind=entry["kind"],
            title=entry["title"],
            url=entry["url"],
            queue="light",
            running=bool(counts),
            user=entry["user"],
            dataset_id=entry["dataset_id"],
            queued_at=datetime.fromisoformat(entry["queued_at"]),
            done=counts.get("done"),
            total=counts.get("total"),
        )


def all_jobs() -> list[Job]:
    """Every queued and running job, unordered and not yet placed in its lane."""
    found = [*_runs(), *_imports(), *_computations()]
    for source in hooks.job_sources:
        found.extend(source())
    return found


def in_turn(queued: list[Job], queues: tuple[str, ...], last: str | None) -> list[Job]:
    """Queued jobs in the order a worker on ``queues`` takes them: each queue's in the
    order sent, one from each non-empty queue in turn, starting after ``last`` (the
    queue it took its latest job from)."""
    by_queue = {
        q: sorted((j for j in queued if j.queue == q), key=lambda j: j.queued_at) for q in queues
    }
    others = sorted((j for j in queued if j.queue not in by_queue), key=lambda j: j.queued_at)
    turn = (queues.index(last) + 1) % len(queues) if last in queues else 0
    order: list[Job] = []
    while any(by_queue.values()):
        ready = by_queue[queues[turn]]
        if ready:
            order.append(ready.pop(0))
        turn = (turn + 1) % len(queues)
    return order + others


def _placed(jobs: list[Job], queues: tuple[str, ...], served: bool = True) -> list[Job]:
    """The lane's jobs in order, running first, each queued one with its position, the
    number of jobs ahead of it and, when everything ahead has an ETA and a worker serves
    the lane, when it starts."""
    running = sorted((j for j in jobs if j.running), key=lambda j: j.started_at or j.queued_at)
    last = running[-1].queue if running else None
    queued = in_turn([j for j in jobs if not j.running], queues, last)
    placed: list[Job] = list(running)
    wait: float | None = sum(j.eta_seconds or 0 for j in running)
    if any(j.eta_seconds is None for j in running) or not served:
        wait = None
    for position, job in enumerate(queued, start=1):
        placed.append(
            replace(job, position=position, ahead=len(running) + position - 1, starts_in=wait)
        )
        wait = None  # a queued job's own length is unknown until it starts
    return placed


def lanes_for(user: Any) -> list[Lane]:
    """The lanes with their jobs as ``user`` may see them (see the module docstring) and
    their workers."""
    shown = set(visible_datasets(user).values_list("pk", flat=True))
    by_lane: dict[str, list[Job]] = {name: [] for name in LANE_LABELS}
    for job in all_jobs():
        mine = user.is_staff or job.dataset_id in shown or job.owner_id == user.pk
        if job.dataset_id is None and job.owner_id is None:
            mine = user.is_staff
        by_lane[LANES.get(job.queue, "model")].append(job if mine else job.hidden())
    states = workers.worker_states()
    lanes = []
    for name, jobs in by_lane.items():
        queues = LANE_QUEUES[name]
        serving = workers.serving(states, queues)
        placed = _placed(jobs, queues, any(w.alive for w in serving))
        lanes.append(Lane(name, LANE_LABELS[name], placed, serving))
    return lanes


def waiting_runs(user: Any) -> list[Job]:
    """The runs waiting for batch answers that ``user`` may see (an admin: all), oldest
    first: no worker takes them (a batch processor answers their request file), so they
    are in no lane and the sweeper leaves them alone."""
    runs = MetricRun.objects.filter(status=MetricRun.Status.WAITING, kind=MetricRun.Kind.COMPUTED)
    if not user.is_staff:
        runs = runs.filter(dataset__in=visible_datasets(user))
    return [
        Job(
            kind="run",
            title=f"{run.label} on {run.dataset.name}",
            url=reverse("studies:run-detail", args=[run.pk]),
            queue=queue_for(run.metric, run.config),
            running=False,
            user=run.created_by.username if run.created_by else "",
            dataset_id=run.dataset_id,
            queued_at=run.heartbeat_at or run.created_at,
            done=run.done,
            total=run.total,
        )
        for run in runs.select_related("created_by", "dataset").order_by("pk")
    ]


def as_rows(lanes: list[Lane], waiting: list[Job] | None = None) -> list[dict[str, Any]]:
    """The API's rows: one per job, with its lane (``batch``: a run waiting for batch
    answers, in no worker's lane)."""
    placed = [(lane.name, job) for lane in lanes for job in lane.jobs]
    placed += [(BATCH_LANE, job) for job in waiting or ()]
    return [
        {"lane": name, **{k: v for k, v in asdict(job).items() if k != "owner_id"}}
        for name, job in placed
    ]
