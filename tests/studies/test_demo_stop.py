"""``manage.py demo`` runs a model worker and light ones (the sweeper with beat, io, light, quick)
and stops them however it is stopped: Ctrl+C, SIGTERM or SIGHUP (a real demo process with
its real workers, on the embedded defaults)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.processes import alive as _alive
from tests.processes import children as _children
from tests.processes import queues_of as _queues_of

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM])
def test_stopping_the_demo_with_sigterm_stops_its_workers(tmp_path, stop):
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
    }
    env["CONCORDIA_DATA_DIR"] = str(tmp_path)
    demo = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--skip-model", "--addr", f"127.0.0.1:{port}"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                assert demo.poll() is None, "the demo exited before serving"
                time.sleep(0.5)
        else:
            pytest.fail("the demo did not serve within 120 s")
        workers = _children(demo.pid)
        queues = sorted(_queues_of(w) for w in workers)
        # the sweeper's queue has a worker of its own (with beat), never the model worker;
        # runs on served endpoints (io), imports and computed pages (light) have light
        # ones of their own too, and so do the short metrics (quick)
        assert queues == [
            ("cpu,gpu", False),
            ("io", False),
            ("light", False),
            ("maintenance", True),
            ("quick", False),
        ], queues
        demo.send_signal(stop)
        demo.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "the worker outlived the demo"
    finally:
        for pid in [*_children(demo.pid), demo.pid]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
