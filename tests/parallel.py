"""Each pytest-xdist worker its own data folder and Redis databases (a pytest plugin,
loaded with ``-p tests.parallel`` before Django reads its settings; ``runtests`` loads it
whenever it runs tests in parallel).

Under ``pytest -n N`` worker ``gwK`` sets, before ``evalsite.settings`` is imported:

- ``CONCORDIA_DATA_DIR`` to ``<data folder>/gwK``: its SQLite test database, filesystem
  broker, cache, media and results are its own;
- ``OMP_NUM_THREADS`` (and MKL's, OpenBLAS's) to 1 unless set: the processes share the
  cores, and the servers and workers a test starts inherit it;
- on a Redis broker, the broker's, the results' and the cache's database numbers moved
  up by ``3 * K`` (worker 0 keeps 0, 1, 2; worker 1 takes 3, 4, 5), so one worker's
  Celery workers never take another's tasks and ``cache.clear()`` clears its own cache.

The processes a test starts (workers, commands) inherit these. pytest-django gives each
worker its own database name on PostgreSQL (``test_<name>_gwK``).

The controller hands out whole modules (``--dist loadscope``, in collection order), except
that each group of served modules goes to one worker together (tests/passes.py:
``scope``, ``SERVED_GROUPS``), first: one vLLM server for the group, started while the
other workers take the rest.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
REDIS_DBS_PER_WORKER = 3  # broker, results, cache (evalsite/settings.py: 0, 1, 2)


def moved(url: str, offset: int) -> str:
    """``url`` (redis://host:port/N) with its database number moved up by ``offset``."""
    match = re.fullmatch(r"(rediss?://[^/]+)/(\d+)", url)
    if not match or not offset:
        return url
    return f"{match[1]}/{int(match[2]) + offset}"


# Math libraries' threads per process: several processes on a few cores, each with a
# thread per core, spin-wait on each other (a tiny model's benchmark test took 191 s
# beside the other pass instead of 5 s alone).
THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def isolate(worker: str, environ: dict[str, str] | os._Environ[str]) -> None:
    """Give xdist worker ``worker`` (``gwK``) its own folder and Redis databases, and one
    math-library thread (unless told otherwise)."""
    for name in THREADS:
        environ.setdefault(name, "1")
    base = Path(environ.get("CONCORDIA_DATA_DIR") or ROOT / "data")
    environ["CONCORDIA_DATA_DIR"] = str(base / worker)
    broker = environ.get("CELERY_BROKER_URL", "")
    if not broker.startswith(("redis://", "rediss://")):
        return
    offset = REDIS_DBS_PER_WORKER * int(worker.removeprefix("gw") or 0)
    host = broker.rsplit("/", 1)[0]
    environ.setdefault("CELERY_RESULT_BACKEND", f"{host}/1")
    environ.setdefault("CACHE_URL", f"{host}/2")
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL"):
        environ[name] = moved(environ[name], offset)


if WORKER:
    isolate(WORKER, os.environ)


def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """pytest-xdist's module scheduler, with each group of served modules as one unit."""
    from xdist.scheduler import LoadScopeScheduling

    from tests.passes import scope  # here: the conftest registers it (its asserts rewritten)

    class ServedTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    config.option.loadscopereorder = False  # collection order: the served groups first
    return ServedTogether(config, log)
