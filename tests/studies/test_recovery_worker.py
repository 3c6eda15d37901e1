"""Lost tasks are recovered by real worker processes with no human action: a worker killed
with SIGKILL mid-run, a PENDING run whose message was purged, and a Redis restart (on a
redis-server of the test's own, port 6390) that loses queued and in-flight messages.

Each test's workers use a broker of their own (a filesystem folder, or that Redis), so the
session's worker fixture never takes their messages; the database is the tests' one.
They run celery beat embedded (``worker -B``), which sends the sweeper every second, with
a lease and a grace period of a few seconds. TEST_SLOW_CHUNK_SECONDS makes each chunk of
five outputs take 0.25 s, so a run of 150 outputs lasts long enough to be cut.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery

from studies.models import Dataset, MetricRun, MetricScore
from studies.services.datasets import ImportOptions, import_file
from studies.services.runs import RunRequest, start_run
from tests.conftest import ROOT, _worker_env, record

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]
TASK = "studies.tasks.run_metric_cpu"
REDIS_PORT = 6390


@pytest.fixture
def run(write_jsonl, cast) -> MetricRun:  # type: ignore[no-untyped-def]
    """A PENDING ROUGE-L run over 150 outputs, not enqueued."""
    records = [record(f"d{d:02d}", f"s{s}", output=f"The council approved budget {d} {s}.")
               for d in range(30) for s in range(5)]  # fmt: skip
    path = write_jsonl(records)
    import_file(path, ImportOptions(dataset="lost", task="summarization", file_format="jsonl",
                                    file_name=path.name, owner=cast["owner"]))  # fmt: skip
    return start_run(Dataset.objects.get(name="lost"), RunRequest(metric="rougeL"), enqueue=False)


class Workers:
    """Starts ``celery worker -B`` processes on one broker and stops them all."""

    def __init__(self, data_dir: Path, broker_url: str, **env: str) -> None:
        self.data_dir, self.procs = data_dir, []  # type: ignore[var-annotated]
        data_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            **_worker_env(), "CONCORDIA_DATA_DIR": str(data_dir), "CELERY_BROKER_URL": broker_url,
            "CELERY_RESULT_BACKEND": "", "CACHE_URL": "", "RUN_CHUNK_OUTPUTS": "5",
            "TEST_SLOW_CHUNK_SECONDS": "0.25", "SWEEP_INTERVAL_SECONDS": "1",
            "RUN_LEASE_SECONDS": "3", "PENDING_GRACE_SECONDS": "3", **env,
        }  # fmt: skip
        self.app = Celery("test-sender", set_as_current=False)  # tasks keep the real app
        # The read and write URLs: a CELERY_BROKER_URL variable (CI's Redis) would win
        # over the plain broker URL.
        self.app.conf.broker_read_url = self.app.conf.broker_write_url = broker_url
        if broker_url.startswith("filesystem"):
            folder = str(data_dir / "broker" / "queue")
            os.makedirs(folder, exist_ok=True)
            self.app.conf.broker_transport_options = {
                "data_folder_in": folder, "data_folder_out": folder,
            }  # fmt: skip

    def start(self, name: str) -> subprocess.Popen[bytes]:
        from evalsite.celery import worker_command

        cmd = worker_command(f"{name}-{os.getpid()}@%h",
                             beat_schedule=self.data_dir / f"{name}-beat-schedule")  # fmt: skip
        log = (self.data_dir / f"{name}.log").open("wb")
        # A session of its own: SIGKILL to the group takes the embedded beat process too.
        proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in self.data_dir.glob("*.log"))


@pytest.fixture
def workers(tmp_path) -> Iterator[Callable[..., Workers]]:  # type: ignore[no-untyped-def]
    made: list[Workers] = []

    def make(broker_url: str = "filesystem://", **env: str) -> Workers:
        made.append(Workers(tmp_path / f"w{len(made)}", broker_url, **env))
        return made[-1]

    yield make
    for w in made:
        w.stop_all()


def wait_for(condition: Callable[[], bool], seconds: float, why: Callable[[], str]) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, why()
        time.sleep(0.05)


def scores(run: MetricRun) -> dict[int, float]:
    return dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))


def assert_finished_once_each(run: MetricRun, kept: dict[int, float]) -> None:
    run.refresh_from_db()
    rows = list(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert run.status == "succeeded", run.error
    assert len(rows) == len({o for o, _ in rows}) == run.total == run.done == 150
    assert all(dict(rows)[o] == v for o, v in kept.items())  # finished scores were kept


def test_a_worker_killed_mid_run_is_replaced_and_the_sweeper_finishes_the_run(run, workers):
    w = workers(PENDING_GRACE_SECONDS="600")  # only the lease can bring it back here
    doomed = w.start("doomed")
    w.app.send_task(TASK, args=[run.pk], queue="cpu")
    wait_for(lambda: len(scores(run)) >= 20, 90, w.logs)
    w.kill(doomed)
    run.refresh_from_db()
    kept = scores(run)
    assert run.status == "running" and 20 <= len(kept) < 150, (run.status, len(kept))

    w.start("rescuer")  # no one presses Resume
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).status == "succeeded", 120, w.logs)
    assert_finished_once_each(run, kept)
    # the run itself (the rescuer found it silent) or the dead worker's shard (the rescuer
    # had joined through the other shards' messages) was taken back, once
    (entry,) = run.provenance["recoveries"]
    assert entry["was"] == "running" and entry["reason"].startswith("no heartbeat for")


def test_a_pending_run_whose_message_was_purged_is_enqueued_again_and_finishes(run, workers):
    w = workers()
    w.app.send_task(TASK, args=[run.pk], queue="cpu")
    with w.app.connection_for_write() as conn:
        assert conn.default_channel.queue_purge("cpu") == 1  # the message is gone
    w.start("after-purge")
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).status == "succeeded", 120, w.logs)
    assert_finished_once_each(run, {})
    assert [e["was"] for e in run.provenance["recoveries"]] == ["pending"]


@pytest.fixture
def redis_server(tmp_path) -> Iterator[Callable[..., None]]:  # type: ignore[no-untyped-def]
    """(Re)start a redis-server of the test's own on port 6390 (never the machine's 6379)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    procs: list[subprocess.Popen[bytes]] = []

    def start(*, appendonly: bool) -> None:
        stop()
        args = [binary, "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--dir", str(tmp_path),
                "--save", "", "--appendonly", "yes" if appendonly else "no"]  # fmt: skip
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        client = redis_client()
        wait_for(lambda: _pings(client), 10, lambda: "redis-server did not start")

    def stop() -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()  # as a crash: no final save
                proc.wait(timeout=10)

    yield start
    stop()


def redis_client():  # type: ignore[no-untyped-def]
    import redis

    return redis.Redis(port=REDIS_PORT, db=0)


def _pings(client) -> bool:  # type: ignore[no-untyped-def]
    try:
        return bool(client.ping())
    except Exception:
        return False


def test_append_only_redis_keeps_a_queued_task_across_a_restart(run, redis_server, workers):
    redis_server(appendonly=True)  # as docker/compose.yml runs it
    w = workers(f"redis://127.0.0.1:{REDIS_PORT}/0")
    w.app.send_task(TASK, args=[run.pk], queue="cpu")
    assert redis_client().llen("cpu") == 1
    time.sleep(1.5)  # appendfsync everysec
    redis_server(appendonly=True)
    assert redis_client().llen("cpu") == 1  # still queued


def test_redis_restarts_without_persistence_mid_run_and_every_run_still_finishes(
    run, redis_server, workers
):
    redis_server(appendonly=False)
    w = workers(f"redis://127.0.0.1:{REDIS_PORT}/0")
    second = MetricRun.objects.get(pk=start_run(run.dataset, RunRequest(metric="rouge1"),
                                                enqueue=False).pk)  # fmt: skip
    w.start("through-restart")
    w.app.send_task(TASK, args=[run.pk], queue="cpu")
    w.app.send_task(TASK, args=[second.pk], queue="cpu")  # waits behind the first
    wait_for(lambda: len(scores(run)) >= 20, 90, w.logs)
    assert MetricRun.objects.get(pk=second.pk).status == "pending"
    redis_server(appendonly=False)  # the queued message of `second` is lost
    assert redis_client().llen("cpu") == 0
    for pk in (run.pk, second.pk):
        wait_for(lambda pk=pk: MetricRun.objects.get(pk=pk).status == "succeeded", 120, w.logs)
        assert MetricScore.objects.filter(run_id=pk).count() == 150
    second.refresh_from_db()
    assert [e["was"] for e in second.provenance["recoveries"]] == ["pending"]
