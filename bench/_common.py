"""What every benchmark shares, Django or not: where the repository and SummEval are, a
timer, the median (min-max) figure, a throwaway folder and a plain-text table.

Imported by the scripts beside it (``from _common import timed``): a script run as
``python bench/x.py`` has ``bench/`` on its path."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
SUMMEVAL = REPO.parent / "shared" / "data" / "summeval.jsonl"

T = TypeVar("T")


def need_summeval() -> None:
    """Stop with a plain message when the shared SummEval file is absent."""
    if not SUMMEVAL.is_file():
        sys.exit(f"needs {SUMMEVAL} (the shared data folder beside the repository)")


def timed(action: Callable[[], T], repeat: int) -> tuple[list[float], list[T]]:
    """Wall times of ``repeat`` calls of ``action()``, and each call's result."""
    seconds, results = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        results.append(action())
        seconds.append(time.perf_counter() - started)
    return seconds, results


def median_range(values: Iterable[float], fmt: str = ".3f") -> str:
    """``median (min-max)`` of ``values``, each formatted with ``fmt``."""
    figures = list(values)
    return f"{statistics.median(figures):{fmt}} ({min(figures):{fmt}}-{max(figures):{fmt}})"


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary folder (a benchmark's data, its SQLite database), removed on exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def print_table(header: list[str], body: list[list[str]], left: int = 2) -> None:
    """Print ``body`` under ``header``: the first ``left`` columns left-aligned, the others
    (figures) right-aligned."""
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    numeric = [i >= left for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if right else c.ljust(w)
            for c, w, right in zip(cells, widths, numeric, strict=True)
        )

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in body:
        print(line(row))
