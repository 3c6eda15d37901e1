"""Benchmark of one metric run shared by several Celery workers, and of recovery from a
worker killed mid-shard.

Run from the repository root::

    .venv/bin/python bench/scaleout.py                  # ROUGE-L on SummEval, 1 and 2 workers, 3 repeats
    .venv/bin/python bench/scaleout.py --docs 40 --repeats 1 --no-kill

SummEval (``../shared/data/summeval.jsonl``, 100 documents x 16 systems, 11 references
each) goes into a throwaway SQLite database; real ``celery worker`` processes (solo pool,
as ``manage.py demo`` and the tests start them) share it through the filesystem broker.
ROUGE-L runs on the ``cpu`` queue, 10 documents per shard (``RUN_SHARD_DOCUMENTS``).

Printed, for 1 and 2 workers: the median over ``--repeats`` runs of the wall time from
the message to SUCCEEDED and the outputs per second, the shards each worker took, and
whether the run has exactly one score per output. Then, with two workers: one is killed
(SIGKILL) while it holds a shard; the seconds from the kill to that shard being back in
PENDING (the sweeper, run by celery beat every second here, with a 3 s lease) and to the
run's SUCCEEDED, with one score per output. The workers are started before the clock
starts (a model-free metric: no load time in the figures). On a 2-core machine, two
single-threaded workers can at best halve the time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, SUMMEVAL, scratch_dir  # noqa: E402
from _django import setup_django  # noqa: E402


def load(tmp: Path, docs: int) -> int:
    """SummEval's first ``docs`` documents as a dataset; its id."""
    from studies.services.imports import ImportOptions, import_file

    lines = SUMMEVAL.read_text().splitlines()
    keep, seen = [], set()
    for line in lines:
        record = json.loads(line)
        seen.add(record["doc_id"])
        if len(seen) > docs:
            break
        keep.append(
            json.dumps(
                {k: record[k] for k in ("doc_id", "system_id", "source", "references", "output")}
            )
        )
    path = tmp / "summeval.jsonl"
    path.write_text("\n".join(keep) + "\n")
    import_file(
        path,
        ImportOptions(
            dataset="summeval", task="summarization", file_format="jsonl", file_name=path.name
        ),
    )
    from studies.models import Dataset

    return int(Dataset.objects.get(name="summeval").pk)


class Workers:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, []  # type: ignore[var-annotated]
        self.env = {
            **os.environ,
            "CONCORDIA_DATA_DIR": str(tmp),
            "DATABASE_URL": "",
            "CELERY_BROKER_URL": "",
            "CELERY_RESULT_BACKEND": "",
            "CACHE_URL": "",
            "RUN_SHARD_DOCUMENTS": "10",
            "RUN_LEASE_SECONDS": "3",
            "PENDING_GRACE_SECONDS": "600",
            "SWEEP_INTERVAL_SECONDS": "1",
        }

    def start(self, name: str, beat: bool = False) -> subprocess.Popen[bytes]:
        from evalsite.celery import worker_command

        schedule = self.tmp / f"{name}-beat" if beat else None
        log = self.tmp / f"{name}.log"
        proc = subprocess.Popen(
            worker_command(f"{name}@%h", queues="quick", beat_schedule=schedule),
            cwd=REPO,
            env=self.env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while " ready." not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"worker {name} did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.procs = []


def one_run(dataset_id: int) -> tuple[float, object]:
    """Start a ROUGE-L run, send it to the workers, wait for SUCCEEDED: (seconds, run)."""
    from studies.models import Dataset, MetricRun
    from studies.services import queue
    from studies.services.runs import RunRequest, start_run

    run = start_run(Dataset.objects.get(pk=dataset_id), RunRequest(metric="rougeL"), enqueue=False)
    started = time.perf_counter()
    queue.send(queue.RUN_METRIC_QUICK, run.pk)
    while MetricRun.objects.get(pk=run.pk).status not in ("succeeded", "failed", "cancelled"):
        time.sleep(0.05)
    return time.perf_counter() - started, MetricRun.objects.get(pk=run.pk)


def check(run: object) -> tuple[bool, Counter[str]]:
    from studies.models import MetricScore

    ids = list(MetricScore.objects.filter(run=run).values_list("output_id", flat=True))
    once = run.status == "succeeded" and len(ids) == len(set(ids)) == run.total  # type: ignore[attr-defined]
    return once, Counter(run.shards.values_list("worker", flat=True))  # type: ignore[attr-defined]


def scale(tmp: Path, dataset_id: int, repeats: int) -> dict[int, float]:
    rates = {}
    for n in (1, 2):
        workers = Workers(tmp)
        try:
            for k in range(n):
                workers.start(f"w{n}-{k}")
            times, shares, ok = [], [], True
            for _ in range(repeats):
                seconds, run = one_run(dataset_id)
                once, by_worker = check(run)
                times.append(seconds)
                shares.append(sorted(by_worker.values(), reverse=True))
                ok &= once
            total = run.total  # type: ignore[attr-defined]
            median = statistics.median(times)
            rates[n] = total / median
            print(
                f"  {n} worker{'s' if n > 1 else ' '}: {median:6.2f} s median of {repeats} "
                f"({', '.join(f'{t:.2f}' for t in times)}), {total / median:6.1f} outputs/s, "
                f"shards per worker {shares}, one score per output: {ok}"
            )
        finally:
            workers.stop()
    print(f"  2 workers / 1 worker: x{rates[2] / rates[1]:.2f} outputs/s")
    return rates


def kill_one(tmp: Path, dataset_id: int) -> None:
    from studies.models import Dataset, MetricRun, RunShard
    from studies.services import queue
    from studies.services.runs import RunRequest, start_run

    workers = Workers(tmp)
    try:
        doomed = workers.start("doomed")
        workers.start("rescuer", beat=True)
        run = start_run(
            Dataset.objects.get(pk=dataset_id), RunRequest(metric="rougeL"), enqueue=False
        )
        queue.send(queue.RUN_METRIC_QUICK, run.pk)
        held = None
        deadline = time.monotonic() + 120
        while held is None:  # a shard held by the doomed worker (solo pool: its own pid)
            held = RunShard.objects.filter(
                run=run, status="running", worker__endswith=f":{doomed.pid}"
            ).first()
            if time.monotonic() > deadline:
                raise SystemExit("the doomed worker never held a shard")
            time.sleep(0.02)
        time.sleep(0.3)  # mid-shard
        os.killpg(doomed.pid, signal.SIGKILL)
        killed = time.perf_counter()
        doomed.wait(timeout=30)
        requeued = None
        while MetricRun.objects.get(pk=run.pk).status != "succeeded":
            if requeued is None and RunShard.objects.get(pk=held.pk).status != "running":
                requeued = time.perf_counter() - killed
            if time.perf_counter() - killed > 180:
                raise SystemExit("the run did not finish after the kill")
            time.sleep(0.02)
        finished = time.perf_counter() - killed
        run = MetricRun.objects.get(pk=run.pk)
        once, by_worker = check(run)
        print(
            f"  SIGKILL of a worker holding shard {held.index}: back in PENDING after "
            f"{requeued if requeued is not None else finished:.2f} s (lease 3 s, sweep every 1 s), "
            f"run SUCCEEDED {finished:.2f} s after the kill; recoveries "
            f"{[e['reason'] for e in run.provenance.get('recoveries', [])]}; "
            f"one score per output: {once}"
        )
    finally:
        workers.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--docs", type=int, default=100, help="SummEval documents (16 outputs each)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-kill", action="store_true", help="skip the recovery measurement")
    args = parser.parse_args()
    if not SUMMEVAL.is_file():
        raise SystemExit(f"{SUMMEVAL} is missing: the benchmark needs SummEval")
    with scratch_dir("concordia-scaleout-") as tmp:
        os.environ.update(
            DATABASE_URL="",
            CELERY_BROKER_URL="",
            CELERY_RESULT_BACKEND="",
            CACHE_URL="",
            RUN_SHARD_DOCUMENTS="10",
        )
        setup_django(tmp)
        dataset_id = load(tmp, args.docs)
        print(
            f"ROUGE-L over {args.docs} SummEval documents ({args.docs * 16} outputs), "
            f"10 documents per shard, {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}"
        )
        scale(tmp, dataset_id, args.repeats)
        if not args.no_kill:
            kill_one(tmp, dataset_id)


if __name__ == "__main__":
    main()
