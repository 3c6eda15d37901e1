"""``manage.py demo`` supervises its workers (issue 43: the light worker died of a broker
error, stayed a defunct child, and an upload waited 15 minutes). A real demo process
with its real workers on the embedded defaults: its light worker killed with SIGKILL is
reported dead on the jobs page, started again, and an upload sent meanwhile imports
within a minute of the kill. This test starts a demo of its own because it kills one of
its workers; the session's worker fixture must not lose one."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import free_port
from tests.processes import alive as _alive
from tests.processes import children as _children
from tests.processes import queues_of as _queues_of

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc"),
]
UPLOAD = "".join(
    f'{{"doc_id": "k{d}", "system_id": "s{s}", "source": "Source {d}.", '
    f'"output": "Output {d} {s}.", "human": {{"coherence": {1 + (d + s) % 5}}}}}\n'
    for d in range(4)
    for s in range(3)
)


def _wait(condition, seconds: float, why: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, why
        time.sleep(0.2)


def _answers(base: str) -> bool:
    try:
        return requests.get(f"{base}/login/", timeout=30).ok
    except requests.ConnectionError:
        return False


def _log_in(base: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{base}/login/", timeout=30)
    answer = session.post(
        f"{base}/login/",
        data={
            "username": "researcher",
            "password": "researcher",
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/login/"},
        timeout=30,
    )
    assert answer.ok and "sessionid" in session.cookies, answer.status_code
    return session


def _light_worker(demo: subprocess.Popen[bytes]) -> int:
    found = [w for w in _children(demo.pid) if _alive(w) and _queues_of(w)[0] == "light"]
    return found[0] if found else 0


def test_a_killed_light_worker_is_started_again_and_a_queued_upload_imports_within_a_minute(
    tmp_path,
):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL")
    }
    env["CONCORDIA_DATA_DIR"] = str(tmp_path)
    output = tmp_path / "demo.log"
    with output.open("wb") as log:
        demo = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--skip-model", "--addr", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # four processes importing Django at once on two busy cores: a start-up budget
        _wait(
            lambda: "Concordia is running" in output.read_text(errors="replace"),
            240,
            "the demo did not start: " + output.read_text(errors="replace")[-3000:],
        )
        # the line comes just before the web server binds its port
        _wait(lambda: _answers(base), 60, "the demo's web server did not answer")
        session = _log_in(base)
        light = _light_worker(demo)
        assert light, "no light worker"

        os.kill(light, signal.SIGKILL)
        killed = time.monotonic()
        form = session.get(f"{base}/datasets/upload/", timeout=30)
        assert form.ok
        sent = session.post(
            f"{base}/datasets/upload/",
            data={
                "dataset": "after-kill",
                "task": "summarization",
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            files={"file": ("after-kill.jsonl", UPLOAD.encode())},
            headers={"Referer": f"{base}/datasets/upload/"},
            timeout=30,
        )
        assert sent.ok and "/imports/" in sent.url, sent.status_code
        status_url = sent.url
        state = re.compile(r'id="import-state">(\w+)<')

        def imported() -> bool:
            page = session.get(status_url, timeout=30).text
            found = state.search(page)
            return bool(found and found[1] == "Succeeded")

        _wait(imported, 60 - (time.monotonic() - killed), "the upload was not imported")
        seconds = time.monotonic() - killed
        said = output.read_text(errors="replace")
        assert re.search(r"Worker demo-light@\S+ killed by SIGKILL; starting it again in 1 s", said)
        assert re.search(r"Worker demo-light@\S+: starting again \(restart 1\)", said)
        assert not _alive(light), "the killed worker lingers as a defunct child"
        new_light = _light_worker(demo)
        assert new_light and new_light != light
        jobs = session.get(f"{base}/jobs/", timeout=30).text
        assert re.search(r'class="worker alive" data-worker="demo-light@', jobs), jobs[-2000:]
        print(f"\nlight worker killed: the upload imported {seconds:.1f} s later")
    finally:
        demo.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            demo.wait(timeout=60)
        for pid in [*_children(demo.pid), demo.pid]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
