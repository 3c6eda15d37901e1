"""The workers as the jobs page shows them: alive, not answering or dead, each with its
last heartbeat, lane by lane; and whether anyone serves a lane at all.

Every worker writes its :class:`~studies.models.WorkerNode` row from a thread of its own
(:func:`start_presence`, on Celery's ``worker_ready``) every ``WORKER_HEARTBEAT_SECONDS``,
whatever its task is doing, and marks it stopped on a warm shutdown (:func:`stopped`);
``manage.py demo``'s supervisor marks a worker it saw die. A worker killed outright
(SIGKILL, out of memory, a machine gone) just stops beating: after
:data:`MISSED_BEATS` beats it is "not answering", after :data:`DEAD_AFTER_S` "dead".
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from studies.models import WorkerNode
from studies.services.heartbeat import beat_until, interval

log = logging.getLogger(__name__)
MISSED_BEATS = 6  # silent this many beats (a minute by default): not answering
DEAD_AFTER_S = 600  # silent this long: dead
SHOWN_FOR = timedelta(days=1)  # a worker dead longer than this is no longer listed
ALIVE, NOT_ANSWERING, DEAD = "alive", "not answering", "dead"
_presences: dict[str, threading.Event] = {}  # this process's workers: their stop signal


@dataclass(frozen=True)
class WorkerState:
    """One worker as the jobs page shows it."""

    name: str
    queues: tuple[str, ...]
    state: str  # ALIVE, NOT_ANSWERING or DEAD
    seen_at: datetime  # its last heartbeat
    since: datetime | None  # dead: when it stopped (or was last seen)
    reason: str  # dead: why ("killed by SIGKILL", "stopped", "no heartbeat for 12 min")

    @property
    def alive(self) -> bool:
        return self.state == ALIVE


def _write(name: str, queues: Iterable[str], started: datetime) -> None:
    now = timezone.now()
    WorkerNode.objects.update_or_create(
        name=name,
        defaults={
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "queues": ",".join(queues),
            "started_at": started,
            "seen_at": now,
            "stopped_at": None,
            "stop_reason": "",
        },
    )


def start_presence(name: str, queues: Iterable[str]) -> None:
    """Write the worker ``name``'s row now and from a thread every beat until
    :func:`stopped` (called in the worker process once it is ready)."""
    queues, started = tuple(queues), timezone.now()
    _write(name, queues, started)
    stop = _presences[name] = threading.Event()
    beat_until(stop, lambda: _write(name, queues, started), interval(), f"presence of {name}")


def stopped(name: str, reason: str) -> None:
    """Mark the worker ``name`` stopped, with why (a warm shutdown; the demo's supervisor
    seeing it die), and stop its heartbeat thread if it runs in this process."""
    found = _presences.pop(name, None)
    if found is not None:
        found.set()
    now = timezone.now()
    WorkerNode.objects.filter(name=name).update(stopped_at=now, stop_reason=reason[:300])


def state_of(node: WorkerNode, now: datetime | None = None) -> WorkerState:
    now = now or timezone.now()
    silent = (now - node.seen_at).total_seconds()
    if node.stopped_at is not None:
        state, since, reason = DEAD, node.stopped_at, node.stop_reason or "stopped"
    elif silent >= DEAD_AFTER_S:
        state, since, reason = DEAD, node.seen_at, f"no heartbeat for {silent / 60:.0f} min"
    elif silent > MISSED_BEATS * interval():
        state, since, reason = NOT_ANSWERING, None, ""
    else:
        state, since, reason = ALIVE, None, ""
    return WorkerState(node.name, tuple(node.queue_list), state, node.seen_at, since, reason)


def worker_states(now: datetime | None = None) -> list[WorkerState]:
    """Every worker seen within :data:`SHOWN_FOR`, alive ones first, by name."""
    now = now or timezone.now()
    nodes = WorkerNode.objects.filter(seen_at__gte=now - SHOWN_FOR)
    states = [state_of(node, now) for node in nodes]
    return sorted(states, key=lambda s: (s.state != ALIVE, s.state != NOT_ANSWERING, s.name))


def serving(states: Iterable[WorkerState], queues: Iterable[str]) -> list[WorkerState]:
    """The workers (any state) that take any of ``queues``."""
    wanted = set(queues)
    return [s for s in states if wanted & set(s.queues)]


def anyone_serves(queue_name: str) -> bool:
    """Whether a worker alive now takes ``queue_name`` (a waiting page says so if not)."""
    return any(s.alive for s in serving(worker_states(), [queue_name]))
