"""Benchmark of the dataset import service (``studies.services.imports.import_file``).

Run from the repository root::

    .venv/bin/python bench/ingest.py            # SummEval + a generated 100,000-output file
    .venv/bin/python bench/ingest.py --quick    # 1 repetition, 20,000 generated outputs

    # on PostgreSQL: a throwaway database ``concordia_bench_ingest_<pid>`` is created
    # next to the one named in the URL, used, and dropped at the end (the named database
    # is not touched)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/ingest.py

    # the README's table, on each database: 100,000 outputs, then 1,000,000 once
    # (add --repeat 1 --skip-export --skip-half)
    .venv/bin/python bench/ingest.py --skip-summeval --outputs 100000

Cases (the issue's targets, on a 2-core machine):

* ``summeval``: ``../shared/data/summeval.jsonl`` (1,600 outputs, 11 references each),
  target under 10 s; skipped, with the reason printed, when the file is absent.
* ``generated``: a deterministic JSONL of 100,000 outputs (2,000 documents x 50 systems,
  ~80-word sources, one reference, ~40-word outputs, four human aspects, two metrics),
  target under 60 s (``--outputs`` changes the size; the target is shown for 100,000 only).

For each case the script times, ``--repeat`` times each, and prints the median (min-max):

* ``baseline``: read the file and ``json.loads`` every line -- the floor of any importer
  of this file. The importer reads and parses it once (the validation keeps the valid
  records for the write), so ``x baseline`` of 1 would be an importer that does nothing
  but parse.
* ``import cold``: import into a fresh dataset (every row is new).
* ``import warm``: re-import the same file into the same dataset (validates, compares,
  finds nothing to change); ``x cold`` is its median over the cold import's.
* ``import +1 metric``: import the same file with one more metric column, under the same
  file name, into datasets holding the file (what a researcher does after computing a
  metric elsewhere): it should create that run's scores and change nothing else.
* ``export jsonl``: stream the dataset back out with ``export_dataset`` (informative).

Each step prints the load averages (``/proc/loadavg``, as ``uptime``) before and after it;
the table gives the 1-minute figure at both ends: on a shared machine, compare only
figures measured at a similar load.

Peak memory is measured in a fresh child process per file (a cold import, and a warm
re-import into the dataset the timings used), so that memory freed by an earlier import
and kept by the allocator cannot hide growth: a thread samples VmRSS every
10 ms (and the kernel's VmHWM, reset before the import, catches anything in between);
the figure is the peak minus the RSS just before the import. The same is done for a file
with the first half of the lines, to show how memory grows with the file. ``--tracemalloc``
adds a separate (slow, untimed) child run reporting Python's own allocation peak;
``--skip-half`` leaves out the half file, ``--skip-memory`` every child run (no RSS).
A file of 1,000,000 outputs is 1.2 GiB: the bench lifts the upload limit
(``IMPORT_MAX_FILE_BYTES``) for itself.

Nothing touches the developer's ``./data``: ``CONCORDIA_DATA_DIR`` points at a temporary
directory (removed at the end), which also holds the SQLite database when no
``DATABASE_URL`` is given. ``DEBUG`` is off, ``SECRET_KEY`` a random valid one, unless set
in the environment (as in production; with DEBUG on, Django also keeps the text of every
query).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import logging
import os
import pstats
import random
import signal
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from _common import SUMMEVAL, timed
from _django import start_django
from _ingest.bulk import bulk_once
from _ingest.environment import prepare_environment
from _ingest.report import CaseResult, MemoryRow, Row, report
from _machine import CpuShare, peak_rss

CHILD_ENV = "CONCORDIA_BENCH_CHILD"
ASPECTS = ("coherence", "consistency", "fluency", "relevance")
METRICS = ("rouge1", "bertscore_f1")
ADDED_METRIC = "added_metric"  # the column ``import +1 metric`` adds
SYSTEMS_PER_DOCUMENT = 50
TARGETS = {"summeval": (1_600, 10.0), "generated": (100_000, 60.0)}
T = TypeVar("T")


def setup_django(migrate: bool) -> None:
    """Django with the environment ``prepare_environment`` set (inherited by a child)."""
    start_django(migrate)
    logging.getLogger("studies").setLevel(logging.WARNING)  # one INFO line per import


# --- input files -------------------------------------------------------------------------


def generate_file(path: Path, outputs: int, seed: int = 0) -> None:
    """Write ``outputs`` lines: documents of 50 systems each, deterministically."""
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10)))
        for _ in range(5_000)
    ]

    def words(n: int) -> str:
        return " ".join(rng.choices(vocabulary, k=n)).capitalize() + " ."

    written = 0
    with path.open("w", encoding="utf-8") as out:
        doc = 0
        while written < outputs:
            doc_id = f"doc-{doc:06d}"
            source = words(rng.randint(70, 90))
            reference = words(rng.randint(25, 35))
            for system in range(min(SYSTEMS_PER_DOCUMENT, outputs - written)):
                record = {
                    "doc_id": doc_id,
                    "system_id": f"sys-{system:02d}",
                    "source": source,
                    "references": [reference],
                    "output": words(rng.randint(35, 45)),
                    "human": {a: round(rng.uniform(1, 5), 4) for a in ASPECTS},
                    "metrics": {m: round(rng.random(), 6) for m in METRICS},
                }
                out.write(json.dumps(record) + "\n")
                written += 1
            doc += 1


def first_half(source: Path, target: Path) -> int:
    """Copy the first half of ``source``'s lines to ``target``; return their number."""
    with source.open("rb") as f:
        lines = f.readlines()
    half = lines[: len(lines) // 2]
    target.write_bytes(b"".join(half))
    return len(half)


def add_metric_column(source: Path, target: Path) -> None:
    """Copy ``source`` with one more metric score per line (deterministic values)."""
    rng = random.Random(1)
    with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as out:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                record["metrics"] = {**(record.get("metrics") or {}), ADDED_METRIC: rng.random()}
                out.write(json.dumps(record) + "\n")


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


# --- measurements ------------------------------------------------------------------------


def read_baseline(path: Path) -> None:
    """The floor of any importer: read every line and parse it."""
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                json.loads(line)


def import_once(path: Path, dataset: str) -> Any:
    from studies.services.imports import ImportOptions, import_file

    options = ImportOptions(
        dataset=dataset, task="summarization", file_format="jsonl", file_name=path.name
    )
    return import_file(path, options)


def export_once(dataset_name: str) -> int:
    from studies.models import Dataset
    from studies.services.imports import export_dataset

    dataset = Dataset.objects.get(name=dataset_name)
    return sum(1 for _line in export_dataset(dataset, "jsonl"))


def memory_child(path: Path, dataset: str, use_tracemalloc: bool) -> dict[str, float]:
    """In a fresh process: the RSS growth (or tracemalloc peak) of one cold import."""
    from studies.models import Dataset

    Dataset.objects.exists()  # open the connection and load the models before measuring
    gc.collect()
    if use_tracemalloc:
        tracemalloc.start()
        import_once(path, dataset)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return {"tracemalloc_peak_mb": peak / 2**20}
    with peak_rss() as rss:
        import_once(path, dataset)
    return {"rss_delta_mb": rss["peak"] - rss["before"], "rss_before_mb": rss["before"]}


def measure_memory(path: Path, dataset: str, use_tracemalloc: bool = False) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(path)]
    command += ["--child-dataset", dataset] + (["--child-tracemalloc"] if use_tracemalloc else [])
    done = subprocess.run(
        command,
        env={**os.environ, CHILD_ENV: "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_averages() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages, as ``uptime`` prints them."""
    return os.getloadavg()


def measured(
    case: str, step: str, action: Callable[[], T], repeat: int
) -> tuple[list[float], list[T], tuple[float, float]]:
    """``timed(action, repeat)``, printing the load averages before and after; with the
    1-minute figures at both ends."""
    before = load_averages()
    print(f"[{case}] {step}, {repeat}x; load average before: {_loads(before)}", flush=True)
    seconds, results = timed(action, repeat)
    after = load_averages()
    print(f"[{case}] {step}: load average after: {_loads(after)}", flush=True)
    return seconds, results, (before[0], after[0])


def _loads(figures: tuple[float, ...]) -> str:
    return ", ".join(f"{x:.2f}" for x in figures)


def changed_rows(summary: Any, kinds: tuple[str, ...] = ("created", "updated")) -> int:
    return sum(
        getattr(summary, table)[k]
        for table in ("documents", "outputs", "judgments", "metric_scores")
        for k in kinds
    )


# --- one case ----------------------------------------------------------------------------


def run_case(case: str, path: Path, tmp: Path, args: argparse.Namespace) -> CaseResult:
    """Time one file's steps; ``args``: the command line (repetitions and what to skip)."""
    repeat = args.repeat
    rows = count_lines(path)
    notes: list[str] = []
    expected_rows, target_s = TARGETS[case]
    target = target_s if rows == expected_rows else None
    print(f"\n[{case}] {rows:,} outputs, {path.stat().st_size / 2**20:.1f} MiB: {path}")

    base_s, _, base_load = measured(
        case, "baseline: read + json.loads", lambda: read_baseline(path), repeat
    )
    baseline = statistics.median(base_s)

    bulk_names = iter(f"bench-{case}-bulk-{i}" for i in range(1, repeat + 1))
    bulk_s, _, bulk_load = measured(
        case, "bulk load (no checks: the floor)", lambda: bulk_once(path, next(bulk_names)), repeat
    )
    bulk = statistics.median(bulk_s)

    names = iter(f"bench-{case}-cold-{i}" for i in range(1, repeat + 1))
    cold_s, cold, cold_load = measured(
        case, "cold import into fresh datasets", lambda: import_once(path, next(names)), repeat
    )
    last = f"bench-{case}-cold-{repeat}"
    first = cold[0]
    if first.outputs["created"] != rows:
        notes.append(f"cold import created {first.outputs['created']} outputs, not {rows}")
    notes.append(
        "cold import wrote per run: documents {d}, outputs {o}, judgments {j}, "
        "metric scores {m} ({total:,} rows)".format(
            d=first.documents["created"],
            o=first.outputs["created"],
            j=first.judgments["created"],
            m=first.metric_scores["created"],
            total=changed_rows(first, ("created",)),
        )
    )

    warm_s, warm, warm_load = measured(
        case, f"warm re-import into {last}", lambda: import_once(path, last), repeat
    )
    changed = sum(changed_rows(summary) for summary in warm)
    notes.append(
        "warm re-import changed nothing"
        if changed == 0
        else f"warm re-import created or updated {changed} rows (expected 0)"
    )

    added_path = tmp / "added" / path.name  # the same file name: the same judgment source
    added_path.parent.mkdir(exist_ok=True)
    add_metric_column(path, added_path)
    holders = iter(f"bench-{case}-cold-{i}" for i in range(1, repeat + 1))
    added_s, added, added_load = measured(
        case,
        f"import with one more metric column into the {repeat} imported datasets",
        lambda: import_once(added_path, next(holders)),
        repeat,
    )
    others = sum(changed_rows(summary) - summary.metric_scores["created"] for summary in added)
    new_scores = [summary.metric_scores["created"] for summary in added]
    notes.append(
        f"import +1 metric created {new_scores[0]:,} metric scores and changed nothing else"
        if others == 0 and set(new_scores) == {rows}
        else f"import +1 metric created {new_scores} scores (expected {rows}) and changed "
        f"{others} other rows (expected 0)"
    )

    export: Row | None = None
    if not args.skip_export:
        export_s, exported, export_load = measured(
            case, f"export jsonl of {last}", lambda: export_once(last), repeat
        )
        if exported[0] != rows:
            notes.append(f"export wrote {exported[0]} lines, not {rows}")
        export = Row(case, "export jsonl", rows, export_s, baseline, load=export_load)

    memory, warm_rss = (
        (None, None) if args.skip_memory else case_memory(case, path, rows, last, tmp, args)
    )

    if args.profile:
        for kind in ("cold import", "warm re-import"):  # the second into the first's dataset
            print(f"[{case}] cProfile of one {kind} (untimed)", flush=True)
            profiler = cProfile.Profile()
            profiler.runcall(import_once, path, f"bench-{case}-profile")
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
            notes.append(f"cProfile of one {kind}, top 30 by cumulative time:\n" + text.getvalue())

    return CaseResult(
        rows=[
            Row(case, "baseline read+json", rows, base_s, load=base_load),
            Row(case, "bulk load (floor)", rows, bulk_s, baseline, load=bulk_load, bulk=bulk),
            Row(
                case,
                "import cold",
                rows,
                cold_s,
                baseline,
                memory.rss_mb if memory else None,
                target,
                load=cold_load,
                bulk=bulk,
            ),
            Row(
                case,
                "import warm",
                rows,
                warm_s,
                baseline,
                warm_rss,
                target,
                statistics.median(cold_s),
                warm_load,
                bulk,
            ),
            Row(
                case,
                "import +1 metric",
                rows,
                added_s,
                baseline,
                cold=statistics.median(cold_s),
                load=added_load,
                bulk=bulk,
            ),
            *([export] if export else []),
        ],
        memory=memory,
        notes=notes,
    )


def case_memory(
    case: str, path: Path, rows: int, last: str, tmp: Path, args: argparse.Namespace
) -> tuple[MemoryRow, float]:
    """Peak RSS growth of a cold import (and of one of the first half of the file), each
    in a fresh process, and of a warm re-import into ``last``."""
    print(f"[{case}] peak memory in fresh processes (cold, first half, warm)", flush=True)
    full = measure_memory(path, f"bench-{case}-memory-full")
    half_rows, half = 0, {"rss_delta_mb": 0.0}
    if not args.skip_half:
        half_path = tmp / f"{case}-half.jsonl"
        half_rows = first_half(path, half_path)
        half = measure_memory(half_path, f"bench-{case}-memory-half")
    warm = measure_memory(path, last)
    traced = None
    if args.tracemalloc:
        print(f"[{case}] tracemalloc peak (separate, untimed run)", flush=True)
        traced = measure_memory(path, f"bench-{case}-tracemalloc", True)["tracemalloc_peak_mb"]
    row = MemoryRow(
        case,
        rows,
        full["rss_delta_mb"],
        half_rows,
        half["rss_delta_mb"],
        full["rss_before_mb"],
        traced,
    )
    return row, warm["rss_delta_mb"]


# --- main --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 repetition, 20,000 outputs")
    parser.add_argument("--outputs", type=int, help="generated outputs (default 100,000)")
    parser.add_argument("--repeat", type=int, help="repetitions per measurement (default 3)")
    parser.add_argument("--skip-summeval", action="store_true", help="only the generated file")
    parser.add_argument("--skip-export", action="store_true", help="no export step")
    parser.add_argument(
        "--skip-memory", action="store_true", help="no peak memory (two or three imports less)"
    )
    parser.add_argument(
        "--skip-half", action="store_true", help="no peak memory of a half file (one import less)"
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="add an untimed tracemalloc peak per case"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of one cold import and one warm re-import per case",
    )
    parser.add_argument("--memory-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-dataset", help=argparse.SUPPRESS)
    parser.add_argument("--child-tracemalloc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.outputs = args.outputs or (20_000 if args.quick else 100_000)
    if args.repeat < 1 or args.outputs < 2:
        parser.error("--repeat must be at least 1 and --outputs at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_child:  # a child of a running bench: its environment is set already
        if os.environ.get(CHILD_ENV) != "1":
            raise SystemExit("--memory-child is internal to the bench")
        setup_django(migrate=False)
        print(
            json.dumps(memory_child(args.memory_child, args.child_dataset, args.child_tracemalloc))
        )
        return 0

    cpu = CpuShare()
    # a SIGTERM (``timeout``, a stopped job) unwinds too, so the throwaway database goes
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    # the bench times files of any size (1,000,000 outputs: 1.2 GiB); the upload limit
    # (IMPORT_MAX_FILE_BYTES, 512 MiB by default) is not what it measures
    os.environ.setdefault("IMPORT_MAX_FILE_BYTES", str(2**40))
    env = prepare_environment()
    try:
        print(f"database: {env.database}; temporary directory: {env.tmp}")
        setup_django(migrate=True)
        results: list[CaseResult] = []
        if args.skip_summeval:
            print("\n[summeval] skipped (--skip-summeval)")
        elif SUMMEVAL.is_file():
            results.append(run_case("summeval", SUMMEVAL, env.tmp, args))
        else:
            print(f"\n[summeval] SKIPPED: {SUMMEVAL} does not exist")
        generated = env.tmp / f"generated-{args.outputs}.jsonl"
        started = time.perf_counter()
        generate_file(generated, args.outputs)
        print(
            f"\n[generated] wrote {args.outputs:,} outputs in {time.perf_counter() - started:.1f} s"
        )
        results.append(run_case("generated", generated, env.tmp, args))
        report(env.database, args.repeat, results, cpu)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
