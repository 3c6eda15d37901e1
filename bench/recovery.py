"""Benchmark of recovery from lost work with the default timers: a model worker killed
(SIGKILL) mid-run, and Redis losing a queued run while the only model worker is busy.

Run from the repository root::

    .venv/bin/python bench/recovery.py               # default timers, 3 repeats: about 20 minutes
    .venv/bin/python bench/recovery.py --sweep 2 --lease 6 --grace 10 --long 40   # a quick look

Each repetition is a stack of its own in a child process: a SQLite database, a
redis-server on a free port (no persistence) and real ``celery worker`` processes (solo
pool, as ``manage.py demo`` and the tests start them). The repetitions run side by side:
the figures are timers and waits, not CPU. Two layouts, measured in the same run:

- **own queue** (this layout): a model worker on ``cpu,gpu``, and a maintenance worker on
  ``maintenance`` that runs beat and the sweeper;
- **runs' queue** (the baseline, the layout before the ``maintenance`` queue, as compose
  ran it): model workers that also take the sweeper, and a ``celery beat`` of its own.

A run is ROUGE-L over documents of five outputs; each chunk (one document) first waits
``TEST_SLOW_CHUNK_SECONDS``, so that it stands for a model's work.

- **kill**: a run of 10 documents (one shard), 3 s each; its worker is killed with
  SIGKILL after 4 documents and a new worker starts at once (as a supervisor, or
  compose's restart, would). Seconds from the kill until the sweeper takes the run back,
  until the run scores again, until SUCCEEDED.
- **loss**: a run of 90 documents lasting ``--long`` seconds keeps the only model worker
  busy; a run of 2 documents is enqueued behind it; 5 s later redis-server is killed and
  restarted without persistence, which loses that message. Seconds from the loss until
  the sweeper sends the run again, and until SUCCEEDED (it can only start once the long
  run ends).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO  # noqa: E402
from _django import setup_django  # noqa: E402

LAYOUTS = {
    "own": "own queue (maintenance worker with beat)",
    "shared": "runs' queue (baseline: the model worker sweeps)",
}
SCENARIOS = {
    "kill": ("SIGKILL of the model worker mid-run", ("back", "resumed", "done")),
    "loss": ("Redis loses a queued run, model worker busy", ("resent", "done")),
}
LABELS = {
    "back": "taken back",
    "resumed": "scores again",
    "resent": "sent again",
    "done": "SUCCEEDED",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Stack:
    """redis-server, the workers and beat of one repetition; all stopped by :meth:`stop`."""

    def __init__(self, tmp: Path, layout: str) -> None:
        self.tmp, self.layout, self.port = tmp, layout, 0
        self.procs: list[subprocess.Popen[bytes]] = []
        self.redis: subprocess.Popen[bytes] | None = None

    def start_redis(self) -> str:
        """(Re)start redis-server without persistence (a restart keeps the port); its URL."""
        if self.redis is not None:
            self.redis.kill()  # as a crash: nothing saved
            self.redis.wait(timeout=10)
        for _ in range(5):  # a port free when chosen may be taken before the server binds it
            port = self.port or free_port()
            options = f"--port {port} --bind 127.0.0.1 --appendonly no --dir {self.tmp}"
            self.redis = subprocess.Popen(
                ["redis-server", *options.split(), "--save", ""],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
            deadline = time.monotonic() + 10
            while self.redis.poll() is None and time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    self.port = port
                    return f"redis://127.0.0.1:{port}/0"
                except OSError:
                    time.sleep(0.05)
            self.redis.kill()
            self.redis.wait(timeout=10)
            if self.port:
                break
        raise SystemExit(f"redis-server did not start (port {self.port or port})")

    def spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def model_worker(self, name: str) -> subprocess.Popen[bytes]:
        from evalsite.celery import MAINTENANCE_QUEUE, MODEL_QUEUES, QUICK_QUEUE, worker_command

        # the runs are ROUGE-L (queue quick) standing for a model's work
        runs = f"{MODEL_QUEUES},{QUICK_QUEUE}"
        queues = runs if self.layout == "own" else f"{runs},{MAINTENANCE_QUEUE}"
        return self.spawn(name, worker_command(f"{name}@%h", queues))

    def sweeper(self) -> subprocess.Popen[bytes]:
        from evalsite.celery import MAINTENANCE_QUEUE, worker_command

        schedule = self.tmp / "beat-schedule"
        if self.layout == "own":
            return self.spawn(
                "maintenance", worker_command("maintenance@%h", MAINTENANCE_QUEUE, schedule)
            )
        return self.spawn(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "evalsite",
                "beat",
                "-s",
                str(schedule),
                "--loglevel=INFO",
            ],
        )

    def wait_ready(self, *names: str) -> None:
        deadline = time.monotonic() + 300
        for name in names:
            log = self.tmp / f"{name}.log"
            while " ready." not in log.read_text(errors="replace"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"{name} did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the figures are taken; no warm shutdown
                proc.wait(timeout=30)
        if self.redis is not None:
            self.redis.kill()
            self.redis.wait(timeout=10)


def dataset(name: str, docs: int) -> Any:
    """A dataset of ``docs`` documents × 5 systems, imported in this process."""
    from studies.models import Dataset
    from studies.services.imports import ImportOptions, import_file

    path = Path(os.environ["CONCORDIA_DATA_DIR"]) / f"{name}.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "doc_id": f"d{d:03d}",
                    "system_id": f"s{s}",
                    "source": f"Source {d}.",
                    "references": [f"The council approved budget {d}."],
                    "output": f"The council approved budget {d} {s}.",
                }
            )
            + "\n"
            for d in range(docs)
            for s in range(5)
        )
    )
    import_file(
        path,
        ImportOptions(dataset=name, task="summarization", file_format="jsonl", file_name=path.name),
    )
    return Dataset.objects.get(name=name)


def first_recovery_after(run_id: int, since: float) -> float | None:
    """Seconds from ``since`` (epoch) to the first recovery of the run logged after it."""
    from studies.models import MetricRun

    entries = MetricRun.objects.get(pk=run_id).provenance.get("recoveries", [])
    times = [datetime.fromisoformat(e["at"]).timestamp() for e in entries]
    after = [t - since for t in times if t >= since]
    return min(after) if after else None


def watch(run_id: int, since: float, scored: int, limit: float) -> dict[str, float | None]:
    """Poll the run until SUCCEEDED: seconds from ``since`` to its first recovery, its first
    score beyond ``scored`` and SUCCEEDED."""
    from studies.models import MetricRun, MetricScore

    out: dict[str, float | None] = {"resumed": None}
    while MetricRun.objects.get(pk=run_id).status != "succeeded":
        if out["resumed"] is None and MetricScore.objects.filter(run_id=run_id).count() > scored:
            out["resumed"] = time.time() - since
        if time.time() - since > limit:
            raise SystemExit(f"run {run_id} did not finish within {limit:.0f} s")
        time.sleep(0.2)
    out["done"] = time.time() - since
    out["back"] = out["resent"] = first_recovery_after(run_id, since)
    return out


def kill_scenario(stack: Stack, limit: float) -> dict[str, float | None]:
    from studies.models import MetricScore
    from studies.services.runs import RunRequest, start_run

    worker = stack.model_worker("model-1")
    stack.sweeper()
    stack.wait_ready("model-1")
    run = start_run(dataset("kill", 10), RunRequest(metric="rougeL"))
    while MetricScore.objects.filter(run=run).count() < 20:  # 4 documents
        time.sleep(0.05)
    os.killpg(worker.pid, signal.SIGKILL)
    killed = time.time()
    worker.wait(timeout=30)
    scored = MetricScore.objects.filter(run=run).count()
    stack.model_worker("model-2")  # a new worker at once, as a supervisor would start it
    return watch(run.pk, killed, scored, limit)


def loss_scenario(stack: Stack, limit: float) -> dict[str, float | None]:
    from studies.models import MetricRun, MetricScore
    from studies.services.runs import RunRequest, start_run

    stack.model_worker("model-1")
    stack.sweeper()
    stack.wait_ready("model-1")
    long = start_run(dataset("long", 90), RunRequest(metric="rougeL"))
    while not MetricScore.objects.filter(run=long).exists():
        time.sleep(0.1)
    queued = start_run(dataset("queued", 2), RunRequest(metric="rougeL"))  # behind `long`
    time.sleep(5)
    assert MetricRun.objects.get(pk=queued.pk).status == "pending"
    stack.start_redis()  # killed and restarted empty: the queued message is gone
    lost = time.time()
    return watch(queued.pk, lost, 0, limit)


def child(args: argparse.Namespace) -> None:
    """One repetition: prints its figures as one JSON line."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the stack is stopped in finally
    tmp = Path(tempfile.mkdtemp(prefix=f"concordia-recovery-{args.child}-"))
    stack = Stack(tmp, args.layout)
    try:
        per_doc = 3.0 if args.child == "kill" else args.long / 90
        os.environ.update(
            CELERY_BROKER_URL=stack.start_redis(),
            CELERY_RESULT_BACKEND="",
            CACHE_URL="",
            SWEEP_INTERVAL_SECONDS=str(args.sweep),
            RUN_LEASE_SECONDS=str(args.lease),
            PENDING_GRACE_SECONDS=str(args.grace),
            TEST_SLOW_CHUNK_SECONDS=str(per_doc),
        )
        setup_django(tmp)
        limit = args.long + 4 * (args.lease + args.grace + args.sweep) + 120
        scenario = kill_scenario if args.child == "kill" else loss_scenario
        print(json.dumps(scenario(stack, limit)), flush=True)
    finally:
        stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sweep", type=int, default=60, help="SWEEP_INTERVAL_SECONDS")
    parser.add_argument("--lease", type=int, default=300, help="RUN_LEASE_SECONDS")
    parser.add_argument("--grace", type=int, default=600, help="PENDING_GRACE_SECONDS")
    parser.add_argument("--long", type=float, default=900, help="seconds of the long run")
    parser.add_argument("--scenario", choices=[*SCENARIOS, "both"], default="both")
    parser.add_argument("--child", choices=list(SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("--layout", choices=list(LAYOUTS), default="own", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed: the benchmark restarts one of its own")
    timers = [
        "--sweep",
        str(args.sweep),
        "--lease",
        str(args.lease),
        "--grace",
        str(args.grace),
        "--long",
        str(args.long),
    ]
    jobs = [
        (s, lay)
        for s in SCENARIOS
        if args.scenario in (s, "both")
        for lay in LAYOUTS
        for _ in range(args.repeats)
    ]
    load, started = os.getloadavg()[0], time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", s, "--layout", lay, *timers],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for s, lay in jobs
    ]
    results: dict[tuple[str, str], list[dict[str, float | None]]] = {}
    for (scenario, layout), proc in zip(jobs, procs, strict=True):
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"a {scenario} repetition ({layout}) failed")
        results.setdefault((scenario, layout), []).append(json.loads(out.strip().splitlines()[-1]))
    print(
        f"Recovery with SWEEP_INTERVAL_SECONDS={args.sweep}, RUN_LEASE_SECONDS={args.lease}, "
        f"PENDING_GRACE_SECONDS={args.grace}; long run {args.long:.0f} s; repetitions: "
        f"{args.repeats}, side by side; {os.cpu_count()} CPU cores, load {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after; {time.monotonic() - started:.0f} s in all"
    )
    print("seconds from the kill, or from the loss: median (each repetition)")
    for (scenario, layout), runs in results.items():
        title, keys = SCENARIOS[scenario]
        cells = []
        for key in keys:
            values = [r[key] for r in runs]
            known = [v for v in values if v is not None]
            median = f"{statistics.median(known):5.0f}" if known else "    -"
            each = ", ".join("-" if v is None else f"{v:.0f}" for v in values)
            cells.append(f"{LABELS[key]} {median} ({each})")
        print(f"  {title:<46} {LAYOUTS[layout]:<48} " + "; ".join(cells))


if __name__ == "__main__":
    main()
