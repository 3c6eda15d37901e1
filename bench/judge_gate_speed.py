"""How long ``manage.py judge_gate`` takes per call, as a CI job runs it.

Run from the repository root::

    .venv/bin/python bench/judge_gate_speed.py               # 100 documents x 16 systems
    .venv/bin/python bench/judge_gate_speed.py --docs 1000 --repeat 9

A study like SummEval's size (documents x systems outputs, four judged aspects, ten
metric runs; ``bench/_scale_load.py``) is written into a temporary SQLite database. Then,
each in a fresh process, as a CI step would start it: the baseline, ``python -c "import
django; django.setup()"`` (what any command pays before it runs), and the gate on the
first run, named as imports name its aspect (``--aspect coherence``), ``--repeat``
times: the first call writes the dataset's columnar snapshot (cold), the others read it
(warm). Target: ≤ 3 s per warm call on a quiet machine (each call's CPU time, user +
system, is printed beside its wall time: on a busy machine it is the fairer figure).
The gate's own process is checked too: no model library (torch, transformers) in ``sys.modules``, nothing on
stderr. The load averages are printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, median_range, print_table
from _django import start_django
from _ingest.environment import prepare_environment

TARGET_SECONDS = 3.0
MODEL_LIBRARIES = ("torch", "transformers")
# The gate's code path as the command takes it, then the model libraries it loaded.
PROBE = (
    "import os, sys, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evalsite.settings');"
    "django.setup(); from django.core.management import call_command;"
    "sys.argv = sys.argv[:1]; call_command('judge_gate', *{args!r});"
    "print(sorted({{m.split('.')[0] for m in sys.modules}} & {libraries!r}))"
)


def load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    return time.perf_counter() - started, done


def cpu_timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds (user + system: on a busy machine, what the call would
    take on a quiet one, less its waits) and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, done = timed(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--systems", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5, help="warm calls (after the cold one)")
    args = parser.parse_args()
    env = prepare_environment()
    try:
        start_django()
        run(args)
    finally:
        env.close()


def run(args: argparse.Namespace) -> None:
    from _scale_load import load as load_study

    from studies.models import MetricRun

    print(f"load average {load()}")
    dataset, _ = load_study(args.docs, args.systems)
    first = MetricRun.objects.filter(dataset_id=dataset).order_by("pk").first()
    assert first is not None
    gate = ["--run", str(first.pk), "--aspect", "coherence", "--min-lower-bound", "0.1"]
    python = [sys.executable]
    setup = [*python, "-c", "import django; django.setup()"]
    baseline = [cpu_timed(setup) for _ in range(args.repeat)]
    command = [*python, str(Path(REPO) / "manage.py"), "judge_gate", *gate]
    cold_wall, cold_cpu, done = cpu_timed(command)
    if done.returncode not in (0, 1):
        raise SystemExit(f"judge_gate failed:\n{done.stderr[-3000:]}")
    calls = [cpu_timed(command) for _ in range(args.repeat)]
    noise = [d.stderr for _, _, d in calls if d.stderr.strip()]
    probe = PROBE.format(args=tuple(gate), libraries=set(MODEL_LIBRARIES))
    _, probed = timed([*python, "-c", probe])
    loaded = probed.stdout.strip().splitlines()[-1] if probed.stdout.strip() else "?"
    base_wall = statistics.median(b[0] for b in baseline)
    median = statistics.median(c[0] for c in calls)
    cpu = statistics.median(c[1] for c in calls)
    n = args.docs * args.systems
    print(f"{n:,} outputs ({args.docs} documents x {args.systems} systems), 4 aspects, 10 runs")
    print(done.stdout.strip().splitlines()[0] if done.stdout.strip() else "(no verdict)")
    print_table(
        ["step", "wall s", "CPU s", "x baseline (wall)"],
        [
            [
                "python + django.setup() (baseline)",
                median_range([b[0] for b in baseline], ".2f"),
                median_range([b[1] for b in baseline], ".2f"),
                "1.00",
            ],
            [
                "judge_gate, cold (writes the snapshot)",
                f"{cold_wall:.2f}",
                f"{cold_cpu:.2f}",
                f"{cold_wall / base_wall:.2f}",
            ],
            [
                "judge_gate, warm",
                median_range([c[0] for c in calls], ".2f"),
                median_range([c[1] for c in calls], ".2f"),
                f"{median / base_wall:.2f}",
            ],
        ],
        left=1,
    )
    verdict = "PASS" if median <= TARGET_SECONDS else "FAIL"
    quiet = "PASS" if cpu <= TARGET_SECONDS else "FAIL"
    print(
        f"warm call: {verdict} by wall time, {quiet} by CPU time (≤ {TARGET_SECONDS:g} s on a "
        "quiet machine; on a busy one the CPU time is the fairer figure)"
    )
    print(f"model libraries imported by the gate: {loaded} (want [])")
    print(f"stderr of the warm calls: {'empty' if not noise else noise[0][:500]}")
    print(f"done; load average {load()}")


if __name__ == "__main__":
    main()
