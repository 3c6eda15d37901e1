"""What the import benchmark prints: the timings table (median, min-max, outputs per
second, times the baseline, the target), then each file's peak memory and its notes."""

from __future__ import annotations

import os
import statistics
import sys
from dataclasses import dataclass

from _common import print_table
from _machine import CpuShare


@dataclass
class Row:
    case: str
    step: str
    rows: int
    seconds: list[float]
    baseline: float | None = None
    rss_mb: float | None = None
    target: float | None = None
    cold: float | None = None  # the cold import's median, for a re-import's ratio
    load: tuple[float, float] | None = None  # 1-minute load average before, after
    bulk: float | None = None  # the bulk loader's median on the same file (the floor)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


@dataclass
class MemoryRow:
    case: str
    rows: int
    rss_mb: float
    half_rows: int
    half_rss_mb: float
    rss_before_mb: float
    tracemalloc_mb: float | None = None

    @property
    def mb_per_10k(self) -> float:
        grown = self.rows - self.half_rows
        return (self.rss_mb - self.half_rss_mb) / grown * 10_000 if grown else 0.0


@dataclass
class CaseResult:
    rows: list[Row]
    memory: MemoryRow | None  # None: --skip-memory
    notes: list[str]


def report(database: str, repeat: int, results: list[CaseResult], cpu: CpuShare) -> None:
    from django.conf import settings

    print(f"\n=== Import benchmark: {database}, DEBUG={settings.DEBUG}, ", end="")
    print(f"batch size {settings.CONCORDIA['IMPORT_BATCH_SIZE']}, ", end="")
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, median of {repeat} ===")
    print(f"{cpu.describe()}\n")
    body = []
    for result in results:
        for row in result.rows:
            if row.target is None:
                target, verdict = "-", "-"
            else:
                target = f"< {row.target:.0f} s"
                verdict = "PASS" if row.median < row.target else "FAIL <<<"
            body.append(
                [
                    row.case,
                    row.step,
                    f"{row.rows:,}",
                    f"{row.median:.3f}",
                    f"{min(row.seconds):.3f}-{max(row.seconds):.3f}",
                    f"{row.rows / row.median:,.0f}",
                    "1.0" if row.baseline is None else f"{row.median / row.baseline:.1f}",
                    "-" if row.bulk is None else f"{row.median / row.bulk:.2f}",
                    "-" if row.cold is None else f"{row.median / row.cold:.2f}",
                    "-" if row.rss_mb is None else f"{row.rss_mb:.1f}",
                    "-" if row.load is None else f"{row.load[0]:.2f}-{row.load[1]:.2f}",
                    target,
                    verdict,
                ]
            )
    print_table(
        [
            "case",
            "step",
            "outputs",
            "median s",
            "min-max s",
            "outputs/s",
            "x baseline",
            "x bulk",
            "x cold",
            "peak RSS +MB",
            "load 1m",
            "target",
            "result",
        ],
        body,
    )

    print(
        "\nx bulk: the median over the bulk loader's (no checks, COPY / executemany: the "
        "floor). x cold: the median over the cold import's. peak RSS +MB: the growth of a fresh "
        "process over one import (cold: into a new dataset; warm: into the timed one). "
        "load 1m: the 1-minute load average before and after the step."
    )
    memory = [result.memory for result in results if result.memory is not None]
    if memory:  # none: --skip-memory
        print_memory(memory)
    for result in results:
        for note in result.notes:
            print(f"- {result.rows[0].case}: {note}")


def print_memory(memory: list[MemoryRow]) -> None:
    """Each file's peak memory over a cold import, of the full file and of its first half."""
    from django.conf import settings

    batch = settings.CONCORDIA["IMPORT_BATCH_SIZE"]
    print("\nPeak memory of one cold import in a fresh process (RSS growth over the import):\n")
    memory_body = []
    for m in memory:
        memory_body.append(
            [
                m.case,
                f"{m.rss_before_mb:.0f}",
                f"{m.rows:,}",
                f"{m.rss_mb:.1f}",
                f"{m.half_rows:,}" if m.half_rows else "-",  # 0: --skip-half
                f"{m.half_rss_mb:.1f}" if m.half_rows else "-",
                f"{m.mb_per_10k:.2f}" if m.half_rows >= 2 * batch else "n/a",
                "-" if m.tracemalloc_mb is None else f"{m.tracemalloc_mb:.1f}",
            ]
        )
    print_table(
        [
            "case",
            "RSS before MB",
            "outputs",
            "peak RSS +MB",
            "half: outputs",
            "half: peak RSS +MB",
            "MB per 10k outputs",
            "tracemalloc peak MB",
        ],
        memory_body,
    )
    print(
        "\nWhat grows with the file: the validator keeps, per (doc_id, system_id), a 16-byte "
        "key digest and (line, 16-byte output digest); per document three digests; the writer "
        "keeps doc_key -> id. Everything else is bounded by the batch size (the records the "
        "validator keeps for the write are spooled to a temporary file past 16 MiB). MB per "
        "10k is (full - half) / (outputs - half outputs), shown when the half file holds at "
        "least two batches (below that, one batch's working set dominates)."
    )
