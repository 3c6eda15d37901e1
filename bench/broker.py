"""Stress benchmark of the embedded broker (``manage.py demo``'s and the tests' default):
messages through real Celery workers, under CPU load, counted one by one.

Run from the repository root::

    .venv/bin/python bench/broker.py              # 20,000 messages, 4 workers, 2 load processes
    .venv/bin/python bench/broker.py --quick      # 2,000 messages

Two transports, measured in the same run on the same machine:

- **atomic** (``evalsite.broker``, this app's): a message is written whole under a hidden
  name and renamed into view; a worker claims it by a rename on the same filesystem;
- **kombu** (the baseline, kombu's own ``filesystem`` transport, which the app used
  before issue 43): the file is created under its final name, then written.

For each: ``--workers`` real ``celery worker`` processes (solo pool, acks late, prefetch
1, as the app runs them) take one queue while ``--senders`` processes send ``--messages``
in all, each with ``--pad`` bytes of payload, and ``--load`` processes keep the CPUs busy.
Every task appends its message's id to its worker's record. The senders start once
every worker is ready. Printed: messages received, left queued (never taken, as when
the workers died), lost (neither run nor queued), duplicated (run twice), worker deaths (a worker process that ended before the bench stopped it;
``Unrecoverable error`` in its log), and the seconds and messages per second until the
last message ran (or, when workers died, until nothing had moved for ``--stall``
seconds, or ``--limit`` seconds passed: a lone surviving worker of kombu's transport
lists and sorts the whole folder for every message, and would take half an hour).
Target: 0 lost, 0 duplicated, 0 deaths.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, print_table, scratch_dir  # noqa: E402

BENCH = Path(__file__).resolve().parent
TRANSPORTS = {
    "atomic": "evalsite.broker:Transport",
    "kombu": "filesystem",  # the baseline: kombu's own
}


def _env(folder: Path, transport: str) -> dict[str, str]:
    return {
        **os.environ,
        "BENCH_BROKER_DIR": str(folder),
        "BENCH_TRANSPORT": TRANSPORTS[transport],
        "PYTHONPATH": os.pathsep.join([str(BENCH), str(REPO)]),
    }


def _send(folder: Path, transport: str, ids: list[str], pad: int) -> None:
    """A sender process: the bench app configured from the environment, then send."""
    os.environ.update(_env(folder, transport))
    from _broker_app import app  # configured from the environment just set

    filler = "x" * pad
    with app.producer_or_acquire() as producer:
        for message in ids:
            app.send_task("bench.record", args=[message, filler], producer=producer)


def _busy(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sum(i * i for i in range(10_000))


def _received(folder: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for record in folder.glob("got-*.txt"):
        counts.update(line for line in record.read_text().splitlines() if line)
    return counts


def measure(transport: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    folder = root / transport
    for sub in ("queue", "control"):
        (folder / sub).mkdir(parents=True)
    env = _env(folder, transport)
    workers, logs = [], []
    for k in range(args.workers):
        logs.append(folder / f"worker-{k}.log")
        cmd = [
            sys.executable,
            *("-m", "celery", "-A", "_broker_app", "worker", "-Q", "bench", "--pool=solo"),
            *("--loglevel=WARNING", "--without-gossip", "--without-mingle"),
            *("--without-heartbeat", "-n", f"bench-{transport}-{k}@%h"),
        ]
        with logs[-1].open("wb") as log:
            workers.append(
                subprocess.Popen(cmd, cwd=BENCH, env=env, stdout=log, stderr=subprocess.STDOUT)
            )
    deadline = time.monotonic() + 120
    while len(list(folder.glob("ready-*"))) < len(workers):
        if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
            raise SystemExit("the workers did not start: " + logs[0].read_text()[-2000:])
        time.sleep(0.2)
    fork = multiprocessing.get_context("fork")
    ids = [f"m{k}" for k in range(args.messages)]
    chunks = [ids[k :: args.senders] for k in range(args.senders)]
    started = time.monotonic()
    senders = [fork.Process(target=_send, args=(folder, transport, c, args.pad)) for c in chunks]
    load = [fork.Process(target=_busy, args=(args.limit + 60,)) for _ in range(args.load)]
    for proc in [*senders, *load]:
        proc.start()
    loads = []
    last_count, last_move, finished = -1, time.monotonic(), started
    try:
        while True:
            time.sleep(0.5)
            got = _received(folder)
            loads.append(os.getloadavg()[0])
            if len(got) != last_count:
                last_count, last_move, finished = len(got), time.monotonic(), time.monotonic()
            if len(got) == len(ids) and all(p.exitcode is not None for p in senders):
                break
            if time.monotonic() - last_move > args.stall:
                break
            if time.monotonic() - started > args.limit:
                break
    finally:
        for proc in [*senders, *load]:
            if proc.is_alive():
                proc.terminate()
            proc.join(timeout=30)
        deaths = sum(1 for w in workers if w.poll() is not None)
        for w in workers:
            if w.poll() is None:
                w.terminate()
        for w in workers:
            w.wait(timeout=60)
    got = _received(folder)
    unrecoverable = sum(log.read_text().count("Unrecoverable error") for log in logs)
    seconds = finished - started
    queued = len(list((folder / "queue").glob("*.msg")))  # never taken: nobody left to
    return {
        "transport": transport,
        "sent": len(ids),
        "received": len(got),
        "queued": queued,
        "lost": len(set(ids) - set(got)) - queued,
        "duplicated": sum(n - 1 for n in got.values() if n > 1),
        "deaths": deaths,
        "unrecoverable": unrecoverable,
        "seconds": seconds,
        "rate": len(got) / seconds if seconds else 0.0,
        "load": max(loads) if loads else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside them")
    parser.add_argument("--pad", type=int, default=4096, help="payload bytes per message")
    parser.add_argument("--stall", type=float, default=30.0, help="seconds without progress")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per transport")
    parser.add_argument("--quick", action="store_true", help="2,000 messages")
    parser.add_argument("--transports", default=",".join(TRANSPORTS))
    args = parser.parse_args()
    if args.quick:
        args.messages = 2_000
    print(
        f"{args.messages} messages of {args.pad} bytes from {args.senders} senders through "
        f"{args.workers} Celery workers, {args.load} busy processes beside them; "
        f"load average before: {os.getloadavg()[0]:.1f}"
    )
    rows = []
    with scratch_dir("concordia-broker-") as root:
        for transport in args.transports.split(","):
            found = measure(transport, args, root)
            rows.append(
                [
                    transport,
                    f"{found['received']}/{found['sent']}",
                    str(found["queued"]),
                    str(found["lost"]),
                    str(found["duplicated"]),
                    f"{found['deaths']} ({found['unrecoverable']})",
                    f"{found['seconds']:.1f}",
                    f"{found['rate']:.0f}",
                    f"{found['load']:.1f}",
                ]
            )
    print_table(
        [
            "transport",
            "received",
            "left queued",
            "lost",
            "duplicated",
            "worker deaths (Unrecoverable)",
            "seconds",
            "msg/s",
            "peak load",
        ],
        rows,
        left=1,
    )


if __name__ == "__main__":
    main()
