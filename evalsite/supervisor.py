"""The local workers' supervisor (``manage.py demo``): start them, notice one that ends,
start it again.

A worker process that ends (killed, out of memory, an unrecoverable error) is reaped, so
it never lingers as a defunct child, and started again after a back-off that doubles
from :data:`FIRST_BACKOFF_S` up to :data:`MAX_BACKOFF_S` while it keeps dying, and goes
back to the first once a worker has stayed up :data:`STEADY_S`. Each exit and each
restart is a line of the demo's output, and ``on_exit`` hears of it (the demo records it
where the jobs page reads the workers' state). Compose does the same for production with
``restart: unless-stopped``.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0
STEADY_S = 300.0  # up this long: the next death starts from the first back-off again
POLL_S = 0.5


def describe_exit(code: int) -> str:
    """``killed by SIGKILL`` for -9, ``exited with code 1`` for 1."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class Supervised:
    """One worker: its name (the Celery node name), argv and the process running it."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    backoff: float = FIRST_BACKOFF_S
    restart_at: float | None = None  # when it is due to start again (it died)
    restarts: int = 0
    exits: list[int] = field(default_factory=list)


class Supervisor:
    """Runs ``workers`` (name → argv) in ``cwd`` with ``env`` and keeps them running.

    ``say`` prints a line for the user; ``on_exit(name, code, restart_in)`` is called from
    the supervising thread when a worker ended."""

    def __init__(
        self,
        workers: Mapping[str, list[str]],
        *,
        cwd: Path,
        env: Mapping[str, str],
        say: Callable[[str], None],
        on_exit: Callable[[str, int, float], None] | None = None,
    ) -> None:
        self.workers = {name: Supervised(name, list(argv)) for name, argv in workers.items()}
        self.cwd, self.env, self.say, self.on_exit = cwd, dict(env), say, on_exit
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def start(self, watch: bool = True) -> None:
        """Start every worker and (``watch``) the thread that watches them; without it,
        :meth:`check` is the caller's to call."""
        with self._lock:
            for worker in self.workers.values():
                self._spawn(worker)
        if watch:
            self._thread.start()

    def pids(self) -> dict[str, int]:
        """Each worker's current process id (0 while it waits to start again)."""
        with self._lock:
            return {
                w.name: w.process.pid if w.process and w.process.poll() is None else 0
                for w in self.workers.values()
            }

    def _spawn(self, worker: Supervised) -> None:
        worker.process = subprocess.Popen(worker.argv, cwd=self.cwd, env=self.env)
        worker.started, worker.restart_at = time.monotonic(), None

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.check()
            except Exception:  # the watch goes on whatever one check met
                log.exception("supervisor: checking the workers failed")

    def check(self, now: float | None = None) -> None:
        """Reap a worker that ended and schedule its restart; start those that are due."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if self._stop.is_set():
                return
            for worker in self.workers.values():
                process = worker.process
                if process is not None and worker.restart_at is None:
                    code = process.poll()  # reaps it: no defunct child
                    if code is not None:
                        self._ended(worker, code, now)
                if worker.restart_at is not None and now >= worker.restart_at:
                    worker.restarts += 1
                    self.say(f"Worker {worker.name}: starting again (restart {worker.restarts}).")
                    self._spawn(worker)

    def _ended(self, worker: Supervised, code: int, now: float) -> None:
        if now - worker.started >= STEADY_S:
            worker.backoff = FIRST_BACKOFF_S
        delay = worker.backoff
        worker.backoff = min(worker.backoff * 2, MAX_BACKOFF_S)
        worker.restart_at = now + delay
        worker.exits.append(code)
        self.say(f"Worker {worker.name} {describe_exit(code)}; starting it again in {delay:g} s.")
        if self.on_exit is not None:
            try:
                self.on_exit(worker.name, code, delay)
            except Exception:
                log.exception("supervisor: recording the exit of %s failed", worker.name)

    def stop(self, timeout: float = 20.0) -> None:
        """Stop watching, then stop every worker (SIGTERM; SIGKILL after ``timeout``)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self._lock:
            running = [w.process for w in self.workers.values() if w.process is not None]
        for process in running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in running:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
