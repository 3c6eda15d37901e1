"""The jobs page: the work queued and running in the workers, lane by lane.

A lane is what one worker of the layout that ``manage.py demo`` and compose run takes
in turn (:data:`LANES`): the model worker's ``cpu`` and ``gpu`` queues, the light
worker's imports and computed pages, the io worker's served runs. Within a lane, queued
work is shown in the order it was sent, with the work ahead of it, so "Pending" always
says what it waits for.

Sources: metric runs and imports (rows), what other apps register in
:data:`studies.hooks.job_sources` (learned metrics in training), and the computed pages
(matrices, diagnostics, plans, agreement), which live in the cache and are recorded
here by :func:`track` while a worker computes them. A researcher sees their own work and
that of the datasets they may see in full; anyone else's only as "another researcher's
run", so that positions add up without telling what others study.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from studies import hooks
from studies.hooks import Job
from studies.models import Dataset, ImportJob, MetricRun
from studies.permissions import visible_datasets
from studies.services.runs import eta
from studies.services.runs.registry import queue_for

# queue → the lane (one worker) that serves it, as local_workers and compose lay them out
LANES = {"gpu": "model", "cpu": "model", "light": "light", "io": "io"}
LANE_LABELS = {
    "model": "Model worker (queues cpu, gpu): metric runs and training",
    "light": "Light worker (queue light): imports and computed pages",
    "io": "io worker (queue io): runs on served endpoints",
}
_TRACKED = "jobs:computations"  # the cache key of the computed pages being computed
_TRACK_SECONDS = 600


@dataclass(frozen=True)
class Lane:
    name: str
    label: str
    jobs: list[Job]


def _runs() -> Iterable[Job]:
    active = (MetricRun.Status.PENDING, MetricRun.Status.RUNNING)
    runs = MetricRun.objects.filter(status__in=active, kind=MetricRun.Kind.COMPUTED)
    for run in runs.select_related("created_by", "dataset").order_by("pk"):
        running = run.status == MetricRun.Status.RUNNING
        yield Job(
            kind="run",
            title=f"{run.label} on {run.dataset.name}",
            url=reverse("studies:run-detail", args=[run.pk]),
            queue=queue_for(run.metric, run.config),
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


def _placed(jobs: list[Job]) -> list[Job]:
    """The lane's jobs in order, running first, each queued one with its position, the
    number of jobs ahead of it and, when everything ahead has an ETA, when it starts."""
    running = sorted((j for j in jobs if j.running), key=lambda j: j.started_at or j.queued_at)
    queued = sorted((j for j in jobs if not j.running), key=lambda j: j.queued_at)
    placed: list[Job] = list(running)
    wait: float | None = sum(j.eta_seconds or 0 for j in running)
    if any(j.eta_seconds is None for j in running):
        wait = None
    for position, job in enumerate(queued, start=1):
        placed.append(
            replace(job, position=position, ahead=len(running) + position - 1, starts_in=wait)
        )
        wait = None  # a queued job's own length is unknown until it starts
    return placed


def lanes_for(user: Any) -> list[Lane]:
    """The lanes with their jobs as ``user`` may see them (see the module docstring)."""
    shown = set(visible_datasets(user).values_list("pk", flat=True))
    by_lane: dict[str, list[Job]] = {name: [] for name in LANE_LABELS}
    for job in all_jobs():
        mine = user.is_staff or job.dataset_id in shown or job.owner_id == user.pk
        if job.dataset_id is None and job.owner_id is None:
            mine = user.is_staff
        by_lane[LANES.get(job.queue, "model")].append(job if mine else job.hidden())
    return [Lane(name, LANE_LABELS[name], _placed(jobs)) for name, jobs in by_lane.items()]


def as_rows(lanes: list[Lane]) -> list[dict[str, Any]]:
    """The API's rows: one per job, with its lane."""
    return [
        {"lane": lane.name, **{k: v for k, v in asdict(job).items() if k != "owner_id"}}
        for lane in lanes
        for job in lane.jobs
    ]
