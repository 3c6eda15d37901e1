"""The demo's supervisor (evalsite/supervisor.py) on real short-lived processes: a worker
that ends is reaped, reported and started again after a back-off that doubles while it
keeps dying and starts over once it stayed up. The demo itself with a killed worker:
tests/studies/test_demo_supervision.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from evalsite import supervisor
from evalsite.supervisor import Supervisor, describe_exit

DIES = [sys.executable, "-c", "import sys; sys.exit(3)"]


def _wait_exit(sup: Supervisor, name: str) -> None:
    process = sup.workers[name].process
    assert process is not None
    process.wait(timeout=30)


def test_a_worker_that_ends_is_reported_and_started_again_with_a_growing_backoff(tmp_path):
    said: list[str] = []
    exits: list[tuple[str, int, float]] = []
    sup = Supervisor(
        {"w@h": DIES},
        cwd=Path(tmp_path),
        env={},
        say=said.append,
        on_exit=lambda *a: exits.append(a),
    )
    sup.start(watch=False)  # driven by hand: check(now) with the clock the test chooses
    worker = sup.workers["w@h"]
    try:
        now = time.monotonic()
        _wait_exit(sup, "w@h")
        sup.check(now)
        assert said == ["Worker w@h exited with code 3; starting it again in 1 s."]
        assert exits == [("w@h", 3, 1.0)] and worker.process is not None
        assert worker.process.returncode == 3  # reaped: no defunct child
        sup.check(now + 0.5)  # not yet due
        assert len(said) == 1
        sup.check(now + 1.0)
        assert said[-1] == "Worker w@h: starting again (restart 1)."
        _wait_exit(sup, "w@h")
        sup.check(now + 1.5)
        assert said[-1] == "Worker w@h exited with code 3; starting it again in 2 s."
        sup.check(now + 3.5)
        _wait_exit(sup, "w@h")
        sup.check(now + 4.0)
        assert said[-1].endswith("starting it again in 4 s.")
        # up longer than STEADY_S before it dies: the back-off starts over
        sup.check(now + 8.0)
        _wait_exit(sup, "w@h")
        sup.check(now + 8.0 + supervisor.STEADY_S + 1)
        assert said[-1].endswith("starting it again in 1 s.")
        assert worker.exits == [3, 3, 3, 3]
    finally:
        sup.stop(timeout=5)


def test_stop_ends_the_workers_and_restarts_none():
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    said: list[str] = []
    sup = Supervisor({"a@h": sleeper, "b@h": sleeper}, cwd=Path("."), env={}, say=said.append)
    sup.start()
    pids = sup.pids()
    assert all(pids.values()) and len(set(pids.values())) == 2
    sup.stop(timeout=10)
    assert all(w.process and w.process.poll() is not None for w in sup.workers.values())
    sup.check()  # after stop: nothing is started again
    assert said == [] and all(w.restarts == 0 for w in sup.workers.values())


def test_exits_are_described_by_signal_or_code():
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(-15) == "killed by SIGTERM"
    assert describe_exit(1) == "exited with code 1"
