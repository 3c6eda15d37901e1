"""Processes as /proc shows them: a process's children, a Celery worker's queues, and
whether a process still runs (a defunct child does not). For the tests that start
``manage.py demo`` and look at its workers."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def queues_of(pid: int) -> tuple[str, bool]:
    """The queues a worker process consumes (its ``-Q``) and whether it runs beat (``-B``)."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return argv[argv.index("-Q") + 1], "-B" in argv


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
