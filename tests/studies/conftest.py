"""Shared by the tests that run real worker processes: workers on a broker of their own
(a filesystem folder, or a redis-server the test starts on a free port, which it can kill
and restart), and a wait on a condition with a deadline."""

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
from django.conf import settings

from evalsite.celery import MAINTENANCE_QUEUE, QUICK_QUEUE
from studies.models import Aspect, Dataset, MetricRun, MetricScore, Study
from studies.models.endpoints import generated_key
from studies.services.imports import ImportOptions, import_file
from studies.services.runs import RunRequest, start_run
from tests.conftest import ROOT, free_port, record, worker_env
from tests.factories import (
    finished_run,
    import_jsonl,
    import_scored,
    synthetic_records,
    tuning_records,
)
from tests.studies.report_card_data import build_panel
from tests.tiny_models import tiny_gpt2


def pending_run(write_jsonl, owner, name: str = "lost") -> MetricRun:  # type: ignore[no-untyped-def]
    """A PENDING ROUGE-L run over 150 outputs (30 documents × 5 systems), not enqueued."""
    records = [
        record(f"d{d:02d}", f"s{s}", output=f"The council approved budget {d} {s}.")
        for d in range(30)
        for s in range(5)
    ]
    path = write_jsonl(records)
    options = ImportOptions(
        dataset=name, task="summarization", file_format="jsonl", file_name=path.name, owner=owner
    )
    import_file(path, options)
    return start_run(Dataset.objects.get(name=name), RunRequest(metric="rougeL"), enqueue=False)


def scores(run: MetricRun) -> dict[int, float]:
    """The run's scores now, by output."""
    return dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))


def valued_scores(run: MetricRun) -> dict[int, float]:
    """The run's scores that have a value (not an output's error), by output."""
    rows = MetricScore.objects.filter(run=run, value__isnull=False)
    return dict(rows.values_list("output_id", "value"))


class Workers:
    """Starts ``celery worker`` processes (model workers, the maintenance worker with beat)
    on one broker and stops them all."""

    def __init__(self, data_dir: Path, broker_url: str, **env: str) -> None:
        self.data_dir, self.procs = data_dir, []  # type: ignore[var-annotated]
        data_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            **worker_env(),
            "CONCORDIA_DATA_DIR": str(data_dir),
            # the key this process encrypts endpoints' API keys with (its data folder's
            # unless set), so the workers of their own data folder read those keys
            "ENDPOINT_KEY": settings.ENDPOINT_KEY or generated_key(Path(settings.DATA_DIR)),
            "CELERY_BROKER_URL": broker_url,
            "CELERY_RESULT_BACKEND": "",
            "CACHE_URL": "",
            "RUN_CHUNK_OUTPUTS": "5",
            "TEST_SLOW_CHUNK_SECONDS": "0.25",
            "SWEEP_INTERVAL_SECONDS": "1",
            "RUN_LEASE_SECONDS": "3",
            "PENDING_GRACE_SECONDS": "3",
            **env,
        }
        self.app = Celery("test-sender", set_as_current=False)  # tasks keep the real app
        # The read and write URLs: a CELERY_BROKER_URL variable (CI's Redis) would win
        # over the plain broker URL.
        self.app.conf.broker_read_url = self.app.conf.broker_write_url = broker_url
        if broker_url.startswith("filesystem"):
            folder, control = data_dir / "broker" / "queue", data_dir / "broker" / "control"
            for made in (folder, control):  # the control folder, else ./control in the repo
                made.mkdir(parents=True, exist_ok=True)
            self.app.conf.broker_transport_options = {
                "data_folder_in": str(folder),
                "data_folder_out": str(folder),
                "control_folder": str(control),
            }

    def start(
        self, name: str, queues: str = QUICK_QUEUE, beat: bool = False
    ) -> subprocess.Popen[bytes]:
        """A worker on ``queues`` (the quick lane, ROUGE-L's, by default), running beat if ``beat``."""
        from evalsite.celery import worker_command

        schedule = self.data_dir / f"{name}-beat-schedule" if beat else None
        return self.spawn(name, worker_command(f"{name}-{os.getpid()}@%h", queues, schedule))

    def spawn(self, name: str, cmd: list[str], **env: str) -> subprocess.Popen[bytes]:
        log = (self.data_dir / f"{name}.log").open("wb")
        # A session of its own: SIGKILL to the group takes an embedded beat process too.
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**self.env, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def start_maintenance(self) -> subprocess.Popen[bytes]:
        """The maintenance worker: beat and the sweeper, as the demo runs it."""
        return self.start("maintenance", MAINTENANCE_QUEUE, beat=True)

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


class RedisServer:
    """A redis-server of the test's own, on a port free at run time (never the machine's
    6379): started, killed and restarted on the same port."""

    def __init__(self, folder: Path) -> None:
        self.binary, self.folder, self.port = shutil.which("redis-server"), folder, 0
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, appendonly: bool) -> str:
        """(Re)start it (a restart keeps the port, which the workers know); its URL."""
        if self.binary is None:
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        self.stop()
        fresh = not self.port
        # a port free when chosen may be taken before the server binds it: choose again
        for port in [free_port() for _ in range(5)] if fresh else [self.port]:
            self.port = port
            aof = "yes" if appendonly else "no"
            options = {
                "port": port,
                "bind": "127.0.0.1",
                "dir": self.folder,
                "save": "",
                "appendonly": aof,
            }
            args = [self.binary, *(x for k, v in options.items() for x in (f"--{k}", str(v)))]
            self.procs.append(
                subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            )
            deadline = time.monotonic() + 10
            while self.procs[-1].poll() is None and time.monotonic() < deadline:
                if self.pings():
                    return self.url
                time.sleep(0.05)
            self.stop()
        pytest.fail(f"redis-server did not start (last on port {self.port})")

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()  # as a crash: no final save
                proc.wait(timeout=10)

    def client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis(port=self.port, db=0)

    def pings(self) -> bool:
        try:
            return bool(self.client().ping())
        except Exception:
            return False


@pytest.fixture
def redis_server(tmp_path) -> Iterator[RedisServer]:  # type: ignore[no-untyped-def]
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def scored(write_jsonl, cast):  # type: ignore[no-untyped-def]
    """The dataset ``scored``: synthetic_records() (12 documents × 5 systems, two metrics,
    coherence and fluency, one judgment missing); the records are returned."""
    import_scored(write_jsonl, cast["owner"])
    return synthetic_records()


BASELINE_REFS = ["The council approved the budget on Tuesday.", "A budget passed after debate."]


def import_baseline_dataset(write_jsonl, owner=None, name="base"):  # type: ignore[no-untyped-def]
    """4 documents × 3 systems with two references each (ROUGE, BLEU, chrF need them)."""
    records = [
        record(
            f"d{d}",
            f"s{s}",
            references=BASELINE_REFS,
            output=[
                "The council approved the budget.",
                "Budget debate on Tuesday.",
                "Schools reopened after the storm.",
            ][s]
            + f" {d}",
        )
        for d in range(4)
        for s in range(3)
    ]
    return import_jsonl(write_jsonl(records), name, owner)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A randomly initialised GPT-2 of a few kilobytes, converted once per test module."""
    return tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def long_context_tiny_model(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The tiny GPT-2 with a context long enough for a judge's prompt with the random
    model's 256 tokens of steps."""
    return tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), n_positions=2048)


@pytest.fixture
def panel(cast):  # type: ignore[no-untyped-def]
    """The report card's panel of judges of known quality (report_card_data.build_panel)."""
    return build_panel(cast["owner"])


SYSTEM_QUALITY = {"s0": 1.0, "s1": 2.0, "s2": 0.0}  # s1 best, s2 worst


def known_quality_records() -> list[dict[str, object]]:
    """3 documents × 3 systems of known quality, each output judged its quality + 1."""
    return [
        record(
            f"d{d}",
            f"s{s}",
            output=f"Summary by s{s} of budget {d}.",
            source=f"The council approved budget {d} after a long debate.",
            human={"coherence": SYSTEM_QUALITY[f"s{s}"] + 1},
        )
        for d in range(3)
        for s in range(3)
    ]


@pytest.fixture
def owner_client(client, cast):  # type: ignore[no-untyped-def]
    """The test client, logged in as the cast's ``owner``."""
    client.force_login(cast["owner"])
    return client


def make_tuning_study(write_jsonl, owner, **shape: int) -> Study:  # type: ignore[no-untyped-def]
    """A study of a dataset with three annotators per output on coherence (the tuners';
    ``shape``: ``n_docs``, ``n_systems``)."""
    dataset = import_jsonl(write_jsonl(tuning_records(**shape)), "few-shot", owner)
    study = Study.objects.create(name="few", dataset=dataset, owner=owner)
    study.aspects.add(Aspect.objects.get(code="COH"))
    return study


@pytest.fixture
def tuning_study(write_jsonl, cast):  # type: ignore[no-untyped-def]
    """The tuners' study: 12 documents × 3 systems."""
    return make_tuning_study(write_jsonl, cast["owner"])


@pytest.fixture
def small_tuning_judged(write_jsonl, cast, long_context_tiny_model):  # type: ignore[no-untyped-def]
    """A smaller tuners' study (8 documents × 2 systems) and a finished G-Eval run of the
    tiny model on coherence (no steps), for a test that needs only to run a tuner."""
    study = make_tuning_study(write_jsonl, cast["owner"], n_docs=8, n_systems=2)
    request = RunRequest(
        metric="geval", aspect="coherence", model=long_context_tiny_model, steps="none"
    )
    return study, finished_run(study, request)


@pytest.fixture
def tuning_judged(tuning_study, long_context_tiny_model):  # type: ignore[no-untyped-def]
    """The tuning study and a finished G-Eval run of the tiny model on coherence (no
    steps)."""
    request = RunRequest(
        metric="geval", aspect="coherence", model=long_context_tiny_model, steps="none"
    )
    return tuning_study, finished_run(tuning_study, request)
