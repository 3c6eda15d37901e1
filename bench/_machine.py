"""What the machine did while a benchmark ran: a block's peak resident memory (RSS), and
the share of the CPUs other processes (a database server included) took meanwhile;
the CPU time of a process with its descendants (a server and the processes it spawned).

All read Linux's ``/proc``."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _status_kb(field_name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field_name} not in /proc/self/status")


@contextmanager
def peak_rss(interval: float = 0.01) -> Iterator[dict[str, float]]:
    """Yield a dict that, on exit, holds ``before`` and ``peak`` RSS in MiB."""
    try:  # reset the kernel's high-water mark so that VmHWM is this block's peak
        Path("/proc/self/clear_refs").write_text("5")
        hwm_reset = True
    except OSError:
        hwm_reset = False
    result: dict[str, float] = {"before": _status_kb("VmRSS") / 1024}
    highest = [_status_kb("VmRSS")]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(interval):
            highest[0] = max(highest[0], _status_kb("VmRSS"))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield result
    finally:
        stop.set()
        thread.join()
        peak = max(highest[0], _status_kb("VmRSS"))
        if hwm_reset:
            peak = max(peak, _status_kb("VmHWM"))
        result["peak"] = peak / 1024


class CpuShare:
    """How much CPU other processes (a database server included) used while the bench ran."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.busy = self._busy_seconds()
        self.own = self._own_seconds()

    @staticmethod
    def _busy_seconds() -> float:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own_seconds() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def describe(self) -> str:
        wall = time.perf_counter() - self.started
        others = (self._busy_seconds() - self.busy) - (self._own_seconds() - self.own)
        return (
            f"other processes (the database server included) used {max(others, 0) / wall:.2f} "
            f"of {os.cpu_count()} CPUs on average over the {wall:.0f} s run (on SQLite, well above "
            "0 means a busy machine and pessimistic timings)"
        )


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry.name), int(fields[1])
        children.setdefault(parent, []).append(pid)
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total
