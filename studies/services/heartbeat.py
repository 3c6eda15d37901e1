"""Heartbeats from a thread of their own while a worker's long step runs in its main one.

A worker's task writes its run's heartbeat as it scores, but some steps are one long call
that writes nothing: loading a model, G-Eval's evaluation steps (a minute or more of
generation), probing a served endpoint, a training's backbone and features, a report
card. Inside :func:`beating` a daemon thread calls ``beat`` every ``every`` seconds until
the step ends, so the sweeper (``RUN_LEASE_SECONDS``) and the pages see a live worker as
live whatever it is doing; a dead worker's thread dies with it, and its heartbeat stops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connections

log = logging.getLogger(__name__)


def interval(lease_seconds: float | None = None) -> float:
    """Seconds between two beats: ``WORKER_HEARTBEAT_SECONDS``, and at least three beats
    within ``lease_seconds`` (a lease is never lost to one slow write)."""
    every = float(settings.CONCORDIA["WORKER_HEARTBEAT_SECONDS"])
    return min(every, lease_seconds / 3) if lease_seconds else every


def beat_until(
    stop: threading.Event, beat: Callable[[], None], every: float, name: str
) -> threading.Thread:
    """Start a daemon thread that calls ``beat()`` every ``every`` seconds until ``stop``
    is set. A beat that fails is logged and the next one tried; the thread closes its
    own database connections when it ends."""

    def loop() -> None:
        try:
            while not stop.wait(every):
                try:
                    beat()
                except Exception:
                    log.warning("%s: a heartbeat failed", name, exc_info=True)
        finally:
            connections.close_all()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread


@contextmanager
def beating(beat: Callable[[], None], every: float, name: str = "heartbeat") -> Iterator[None]:
    """Call ``beat()`` every ``every`` seconds from a daemon thread while the block runs
    (:func:`beat_until`). Leaving the block does not wait for a beat stuck on a lock: the
    thread ends after it, so a late beat must be a no-op (an UPDATE conditional on the
    row still RUNNING)."""
    stop = threading.Event()
    thread = beat_until(stop, beat, every, name)
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
