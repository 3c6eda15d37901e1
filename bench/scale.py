"""Benchmark of correlations at scale: the columnar snapshot path against the row path.

Run from the repository root::

    .venv/bin/python bench/scale.py                      # 20,000 documents x 50 systems (1 M outputs)
    .venv/bin/python bench/scale.py --docs 2000          # 100,000 outputs
    .venv/bin/python bench/scale.py --docs 200000 --previous-repeat 0   # 10 M, columnar only
    .venv/bin/python bench/scale.py --docs 200000 --keep /var/tmp/scale-10m   # load once, reuse
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/scale.py …

The study: documents x systems outputs, 4 judged aspects (one rating per output and
aspect) and 10 metric runs, written in bulk into a throwaway database (a temporary
SQLite file, or a database created beside the one ``DATABASE_URL`` names and dropped at
the end; nothing else is touched). Then, each in a fresh child process so that its peak
RSS (the kernel's VmHWM: Python, Django and numpy included) is its own:

* ``snapshot write``: what the light worker does when an import ends
  (:func:`studies.services.analysis.snapshot.refresh`);
* ``frame read``: the full frame (every run, every aspect) alone;
* a cold matrix per statistic, as a worker computes it for a cold page (the cache
  cleared; ``compute_and_cache``: frame, statistics, significance clusters, human
  ceiling): every coefficient (Spearman ρ, Pearson r, Kendall τ-b) at every level
  (sample, dataset, system), with 1,000-resample CIs at sample and system level.
  Targets at 1 M outputs: each sample-level matrix ≤ 5 s, system-level Pearson ≤ 2 s,
  and every matrix's peak RSS ≤ 1 GB (``--only`` picks some: ``--only "sample τ-b with
  CIs"``);
* ``one cell``: a drill-down (one run, one aspect), which reads those columns alone;
* ``manage.py correlations``: the whole command as a user runs it (``--ci``, sample
  level, each coefficient), cold (the cache cleared) and then cached: the second is
  the command's own start-up, part of what a user waits for;

``--keep DIR`` (SQLite only) keeps the loaded study in DIR and, when DIR already
holds one of the same size, measures it again without loading it (its load time is
then the first run's, read back).

Each step's CPU time (user + system) is printed beside its wall time: on a busy machine
the wall time measures the others' load too, and the CPU time is what the step would
take on a quiet one (less its waits); the verdicts give both.

Each measured step runs ``--repeat`` times (median, min-max) on the snapshot, and ``--previous-repeat``
times with snapshots turned off (``CONCORDIA_SNAPSHOTS=false``: the row path, what every
read did before), in the same run. Every cell of each statistic's matrix from the two
paths is compared (exact equality of the whole result, ``seconds`` aside); the bench
fails if one differs. Last, ``page cached``: the correlations page through Django's test
client with the matrix cached (target < 300 ms). The load averages are printed at the
start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import median_range, print_table, timed
from _django import serve_static_unhashed, start_django
from _ingest.environment import prepare_environment

COEFFICIENTS = {"spearman": "ρ", "pearson": "r", "kendall": "τ-b"}
LEVELS = ("sample", "dataset", "system")
# Dataset-level intervals resample a million outputs a thousand times (minutes: at
# 100,000 outputs 56 s for τ-b, 134 s for ρ on a busy machine): that level is measured
# without them, as a page shows it first.
STATISTICS = {
    f"{level} {symbol}{' with CIs' if level != 'dataset' else ''}": {
        "level": level,
        "coefficient": coefficient,
        "ci": level != "dataset",
    }
    for level in LEVELS
    for coefficient, symbol in COEFFICIENTS.items()
}
# The issues' targets, in seconds: at 1 M outputs per statistic, at 10 M any cold matrix.
TARGETS = {name: 5.0 for name, params in STATISTICS.items() if params["level"] == "sample"}
TARGETS["system r with CIs"] = 2.0
TARGET_10M = 60.0
TARGET_PEAK_MB = 1024.0  # every matrix at 1 M outputs


def target_for(name: str, step: str, n: int) -> float | None:
    if n == 1_000_000:
        return TARGETS.get(name)
    return TARGET_10M if n >= 10_000_000 and step == "matrix" else None


def verdicts(name: str, step: str, n: int, runs: list[dict[str, float]]) -> str:
    """PASS or FAIL against the time target (by wall time and by CPU time: on a busy
    machine the second is the fairer one) and, at 1 M outputs, the memory target."""
    found = []
    target = target_for(name, step, n)
    if target is not None and runs:
        median = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        found.append(
            f"{'PASS' if median <= target else 'FAIL'} wall, "
            f"{'PASS' if cpu <= target else 'FAIL'} CPU (≤ {target:g} s)"
        )
    if n == 1_000_000 and step == "matrix" and runs:
        peak = max(r["peak_mb"] for r in runs)
        found.append(f"{'PASS' if peak <= TARGET_PEAK_MB else 'FAIL'} (≤ 1 GB)")
    return "  ".join(found)


def command_times(
    dataset: int, coefficient: str, repeat: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """``manage.py correlations --ci`` at sample level as a user runs it: cold (the
    cache cleared first) and then cached, ``repeat`` times each: wall seconds cold and
    cached, then CPU seconds cold and cached."""
    from django.core.cache import cache

    command = [sys.executable, str(Path(__file__).resolve().parent.parent / "manage.py")]
    command += ["correlations", "--dataset", str(dataset), "--level", "sample"]
    command += ["--coef", coefficient, "--ci", "--format", "json"]
    walls: tuple[list[float], list[float]] = ([], [])
    cpus: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        cache.clear()
        for wall, cpu in zip(walls, cpus, strict=True):
            before = cpu_seconds(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wall.append(time.perf_counter() - started)
            cpu.append(cpu_seconds(resource.RUSAGE_CHILDREN) - before)
            if done.returncode:
                raise SystemExit(f"manage.py correlations failed:\n{done.stderr[-3000:]}")
    return walls[0], walls[1], cpus[0], cpus[1]


def load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def cpu_seconds(who: int) -> float:
    """User + system CPU seconds of this process or of its finished children: on a busy
    machine, what a step would take on a quiet one, less its waits."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def memory(field: str) -> float:
    """This process's VmHWM or VmRSS, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- the child: one measured step in a fresh process ----------------------------------


def child(args: argparse.Namespace) -> None:
    start_django(migrate=False)
    from django.core.cache import cache

    from studies.models import Aspect, Dataset
    from studies.services.analysis import snapshot
    from studies.services.analysis.dashboards import compute_and_cache, frame_for
    from studies.services.analysis.drilldown import drilldown
    from studies.services.analysis.params import MatrixParams

    dataset = Dataset.objects.get(pk=args.dataset)
    params = MatrixParams(**json.loads(args.params)) if args.params else MatrixParams()
    if args.step != "snapshot" and snapshot.enabled() and snapshot.current(dataset) is None:
        raise SystemExit("no snapshot for the current version: the step would write one")
    cache.clear()
    before = memory("VmRSS")
    cpu_before = cpu_seconds(resource.RUSAGE_SELF)
    started = time.perf_counter()
    result: Any = None
    if args.step == "snapshot":
        result = snapshot.refresh(dataset.pk)
    elif args.step == "frame":
        frame = frame_for(dataset, params)
        result = {"shape": [frame.n_outputs, len(frame.runs), len(frame.aspects)]}
    elif args.step == "matrix":
        result = compute_and_cache(dataset, params)
        result.pop("seconds")
    elif args.step == "cell":
        run = dataset.runs.order_by("pk").values_list("pk", flat=True).first()
        aspect = Aspect.objects.get(code="COH").pk
        result = drilldown(dataset, run, aspect, params)
    seconds = time.perf_counter() - started
    cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu_before
    if args.out:
        Path(args.out).write_text(json.dumps(result, sort_keys=True, default=str))
    figures = {"seconds": seconds, "cpu": cpu, "peak_mb": memory("VmHWM"), "start_mb": before}
    print(json.dumps(figures))


def run_child(
    step: str,
    dataset: int,
    *,
    previous: bool,
    params: dict[str, Any] | None = None,
    out: Path | None = None,
) -> dict[str, float]:
    env = {**os.environ, "CONCORDIA_SNAPSHOTS": "false" if previous else "true"}
    command = [sys.executable, __file__, "--child", step, "--dataset", str(dataset)]
    command += ["--params", json.dumps(params or {})]
    if out is not None:
        command += ["--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{step} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


# --- the parent ------------------------------------------------------------------------


def measure(
    step: str,
    dataset: int,
    repeat: int,
    *,
    previous: bool,
    params: dict[str, Any] | None = None,
    out: Path | None = None,
) -> list[dict[str, float]]:
    return [
        run_child(step, dataset, previous=previous, params=params, out=out) for _ in range(repeat)
    ]


def figure(runs: list[dict[str, float]], key: str, fmt: str = ".2f") -> str:
    return median_range([r[key] for r in runs], fmt) if runs else "—"


def page_cached(dataset: int, repeat: int) -> list[float]:
    """The correlations page with its default matrix cached (computed here first)."""
    from django.test import Client

    from studies.models import Dataset
    from studies.services.analysis.dashboards import matrix_for
    from studies.services.analysis.params import MatrixParams

    found = Dataset.objects.get(pk=dataset)
    matrix_for(found, MatrixParams())
    client = Client()
    client.force_login(found.owner)
    url = f"/datasets/{dataset}/correlations/"
    warm = client.get(url, secure=True)
    assert warm.status_code == 200, (warm.status_code, warm.get("Location"))
    times, _ = timed(lambda: client.get(url, secure=True), repeat)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each columnar step")
    parser.add_argument(
        "--previous-repeat", type=int, default=1, help="runs of each step on the row path (0: none)"
    )
    parser.add_argument(
        "--keep", type=Path, help="SQLite: load into DIR and keep it; reuse what DIR holds"
    )
    parser.add_argument("--load-only", action="store_true", help="with --keep: load, then stop")
    parser.add_argument(
        "--only", action="append", choices=sorted(STATISTICS), help="these matrices only"
    )
    parser.add_argument(
        "--command-repeat",
        type=int,
        default=1,
        help="runs of manage.py correlations per coefficient, cold then cached (0: none)",
    )
    parser.add_argument("--child", dest="step", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        child(args)
        return
    env = prepare_environment()
    if args.keep is not None:
        if os.environ.get("DATABASE_URL"):
            raise SystemExit("--keep keeps a SQLite study: unset DATABASE_URL")
        args.keep.mkdir(parents=True, exist_ok=True)
        os.environ["CONCORDIA_DATA_DIR"] = str(args.keep.resolve())
        env.database = f"SQLite (kept in {args.keep})"
    try:
        start_django()
        serve_static_unhashed()
        report(args, env.database, env.tmp)
    finally:
        env.close()


def report(args: argparse.Namespace, database: str, tmp: Path) -> None:
    from _scale_load import ASPECT_CODES, N_RUNS
    from _scale_load import load as load_study

    n = args.docs * args.systems
    print(
        f"{n:,} outputs ({args.docs:,} documents x {args.systems} systems), {N_RUNS} runs, "
        f"{len(ASPECT_CODES)} aspects; {database}; load average {load()}"
    )
    kept = args.keep / "scale-study.json" if args.keep is not None else None
    if kept is not None and kept.is_file():
        found = json.loads(kept.read_text())
        if [found["docs"], found["systems"]] != [args.docs, args.systems]:
            raise SystemExit(
                f"{args.keep} holds {found['docs']} x {found['systems']}: another size"
            )
        dataset, parts, loaded = found["dataset"], found["parts"], found["seconds"]
        print(f"reusing the study kept in {args.keep} (loaded in {loaded:.1f} s then)")
    else:
        started = time.perf_counter()
        dataset, parts = load_study(args.docs, args.systems)
        loaded = time.perf_counter() - started
        if kept is not None:
            record = {"docs": args.docs, "systems": args.systems, "dataset": dataset}
            kept.write_text(json.dumps({**record, "parts": parts, "seconds": loaded}))
    print(
        f"loaded in {loaded:.1f} s ("
        + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items())
        + f"); load average {load()}",
        flush=True,
    )
    if args.load_only:
        return
    if args.keep is not None:  # the kept study's snapshot is written (and timed) again
        shutil.rmtree(args.keep / "snapshots", ignore_errors=True)
    written = run_child("snapshot", dataset, previous=False)
    rows: list[list[str]] = [
        ["load (bulk SQL)", f"{loaded:.1f}", "", "", "", "", ""],
        [
            "snapshot write",
            f"{written['seconds']:.2f}",
            f"{written['cpu']:.2f}",
            f"{written['peak_mb']:.0f}",
            "",
            "",
            "",
        ],
    ]
    steps: list[tuple[str, str, dict[str, Any] | None]] = [("frame read", "frame", None)]
    steps += [
        (name, "matrix", params)
        for name, params in STATISTICS.items()
        if not args.only or name in args.only
    ]
    steps.append(("one cell (drill-down)", "cell", None))
    mismatches = []
    for name, step, params in steps:
        ours_out = tmp / f"{step}-columnar.json"
        theirs_out = tmp / f"{step}-previous.json"
        ours = measure(step, dataset, args.repeat, previous=False, params=params, out=ours_out)
        theirs = measure(
            step, dataset, args.previous_repeat, previous=True, params=params, out=theirs_out
        )
        ratio = ""
        if theirs:
            ratio = f"{statistics.median(r['seconds'] for r in ours) / statistics.median(r['seconds'] for r in theirs):.3f}"
            if step in ("matrix", "cell") and ours_out.read_text() != theirs_out.read_text():
                mismatches.append(name)
        verdict = verdicts(name, step, n, ours)
        rows.append(
            [
                name,
                figure(ours, "seconds"),
                figure(ours, "cpu"),
                figure(ours, "peak_mb", ".0f"),
                figure(theirs, "seconds"),
                figure(theirs, "peak_mb", ".0f"),
                (ratio + "  " + verdict).strip(),
            ]
        )
        print(f"  {name}: done; load average {load()}", flush=True)
    for coefficient, symbol in COEFFICIENTS.items() if args.command_repeat else ():
        cold, cached, cold_cpu, cached_cpu = command_times(
            dataset, coefficient, args.command_repeat
        )
        rows.append(
            [
                f"manage.py correlations sample {symbol} --ci, cold",
                median_range(cold, ".2f"),
                median_range(cold_cpu, ".2f"),
            ]
            + [""] * 4
        )
        rows.append(
            ["  … cached (start-up)", median_range(cached, ".2f"), median_range(cached_cpu, ".2f")]
            + [""] * 4
        )
        print(f"  manage.py correlations {coefficient}: done; load average {load()}", flush=True)
    page = page_cached(dataset, max(5, args.repeat * 3))
    verdict = ""
    if n >= 10_000_000:
        verdict = ("PASS" if statistics.median(page) < 0.3 else "FAIL") + " (< 300 ms)"
    rows.append(
        ["page cached (ms)", median_range([t * 1000 for t in page], ".1f"), "", "", "", "", verdict]
    )
    print()
    print_table(
        ["step", "columnar s", "CPU s", "peak RSS MB", "row path s", "peak RSS MB", "x row path"],
        rows,
        left=1,
    )
    compared = (
        [name for name, step, _ in steps if step in ("matrix", "cell")]
        if args.previous_repeat
        else []
    )
    print(
        f"\nsame numbers on both paths: {len(compared) - len(mismatches)} of {len(compared)} results"
        + (f"; DIFFERENT: {', '.join(mismatches)}" if mismatches else "")
    )
    print(f"done; load average {load()}")
    if mismatches:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
