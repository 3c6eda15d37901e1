"""Which pass of CI runs a test, and the markers that decide it (a pytest plugin).

Every test is marked by what it needs, by a rule rather than by hand:

- ``worker``: a real Celery worker (it uses ``celery_worker_process``, ``extra_io_worker``,
  ``workers`` or ``redis_server``, or its module marks it);
- ``browser``: a real Chromium (Playwright's ``page`` or ``browser``);
- ``served``: the real vLLM server (``vllm_server``);
- ``backend``: behaviour that differs between the embedded backends (SQLite, the
  filesystem broker) and PostgreSQL + Redis: tests that commit (``transactional_db``:
  threads racing for a row, ``on_commit``, a live server's second connection, migrations
  run again) and the modules or tests in :data:`BACKEND` (locks, ``ANALYZE``, Redis).

``pytest --pass production`` selects the tests with any of those four markers (CI runs
it on PostgreSQL + Redis); ``--pass embedded`` selects the others (CI runs it on SQLite
and the filesystem broker). The two partition the suite (tests/test_passes.py checks it),
so CI runs each test once, where it proves something. ``--quick`` is the embedded pass
without the tests listed in :data:`SLOW` (a developer's loop: no worker, browser, served
or committing test, no minutes of fuzzing). Without either option the whole suite runs
(the README's command).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PASSES = ("embedded", "production")
# marker → the fixtures whose use gives a test that marker
BY_FIXTURE = {
    "worker": ("celery_worker_process", "extra_io_worker", "workers", "redis_server"),
    "browser": ("page", "browser", "context"),
    "served": ("vllm_server",),
    "backend": ("transactional_db",),
}
PRODUCTION = ("worker", "browser", "served", "backend")
# Tests that prove a backend's behaviour without committing (a path: the whole module).
BACKEND = {
    "tests/studies/test_import_reimport.py::"
    "test_a_large_import_leaves_postgresql_statistics_for_the_next_one": "ANALYZE's statistics",
    "tests/scoring/test_served_parts.py::test_the_redis_limiter_grants_the_same_as_the_others": (
        "the Redis limiter"
    ),
    "tests/scoring/test_served_parts.py::test_slots_hold_at_most_their_limit_and_free_themselves": (
        "Redis slots beside the file ones"
    ),
    "tests/studies/test_recovery.py": "the sweeper's row locks (select_for_update, skip_locked)",
    "tests/studies/test_shards.py": "shards claimed under row locks, one worker at a time",
    "tests/studies/test_import_service.py": "new rows written with COPY on PostgreSQL",
    "tests/studies/test_import_fuzz.py": "fuzzed files against PostgreSQL's stricter types "
    "(NUL in text, integer ranges) and its rollback: no partial write",
}
# The modules of the tests that use the session's vLLM server (marked ``served``), in two
# groups of about equal length (minutes each: the long pole of the production pass; test
# time in `runtests` on the 2-core machine: about 890 s and 790 s); one
# pytest-xdist worker runs a group's modules one after the other with a server of its own
# (tests/parallel.py; tests/test_passes.py checks the groups against the markers). The
# first group holds the module that starts a server of its own besides (``vllm
# run-batch``).
SERVED_GROUPS = (
    (
        "tests/studies/test_served_batch.py",
        "tests/studies/test_served_top_k_only.py",
        "tests/scoring/test_served_labels.py",
        "tests/studies/test_served_tuning.py",
        "tests/studies/test_served_label_runs.py",
    ),
    (
        "tests/studies/test_served_runs.py",
        "tests/scoring/test_served_engine.py",
        "tests/scoring/test_served_exact_labels.py",
    ),
)
SERVED_MODULES = frozenset(path for group in SERVED_GROUPS for path in group)
# Left out of --quick: minutes of walking every route, or seconds each of a real model or
# of whole commands and processes (they still run in CI's embedded pass and in the full
# suite).
SLOW = {
    "tests/api/test_access_sequences.py": "every route after every sharing step",
    "tests/api/test_authorization_matrix.py": "every route × every role",
    "tests/studies/test_real_model.py": "the real default model on SummEval",
    "tests/studies/test_real_label_card.py": "the real default model on XSum faithfulness",
    "tests/scoring/test_lm_real.py": "the real default model's stored numbers",
    "tests/studies/test_demo_stop.py": "a whole demo started and stopped",
    "tests/studies/test_bench_ingest.py": "the import benchmark run as a command",
    "tests/scoring/test_bench_gpu_speed.py": "the GPU benchmark run end to end on the CPU",
    "tests/test_passes.py::test_the_embedded_and_the_production_pass_partition_the_suite": (
        "collects the whole suite"
    ),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("concordia")
    group.addoption(
        "--pass",
        dest="ci_pass",
        choices=PASSES,
        help="run one of CI's passes: production (worker, browser, served, backend tests; "
        "on PostgreSQL + Redis) or embedded (all others; SQLite, filesystem broker)",
    )
    group.addoption(
        "--quick",
        action="store_true",
        help="the embedded pass without its slow tests (tests/passes.py: SLOW)",
    )
    group.addoption(
        "--passes-report",
        metavar="PATH",
        help="write every collected test's pass to PATH (JSON; tests/test_passes.py)",
    )


def _listed(nodeid: str, table: dict[str, str]) -> bool:
    nodeid = nodeid.split("@")[0]  # pytest-xdist's group suffix (--dist loadgroup)
    return any(nodeid == key or nodeid.startswith(key + "::") for key in table) or (
        nodeid.split("::")[0] in table
    )


def mark(item: pytest.Item) -> None:
    """Give ``item`` the markers its fixtures and :data:`BACKEND` imply."""
    fixtures = set(getattr(item, "fixturenames", ()))
    for marker, names in BY_FIXTURE.items():
        if fixtures.intersection(names) and not item.get_closest_marker(marker):
            item.add_marker(marker)
    if _listed(item.nodeid, BACKEND) and not item.get_closest_marker("backend"):
        item.add_marker("backend")


def in_production_pass(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in PRODUCTION)


def selected(item: pytest.Item, ci_pass: str | None, quick: bool) -> bool:
    if quick and (in_production_pass(item) or _listed(item.nodeid, SLOW)):
        return False
    if ci_pass is None:
        return True
    return in_production_pass(item) == (ci_pass == "production")


def scope(nodeid: str) -> str:
    """The tests one pytest-xdist worker runs together (tests/parallel.py): the modules of
    each group of :data:`SERVED_GROUPS` as one (``served-1``, ``served-2``), so that one
    vLLM server serves a group; every other module on its own, so that its fixtures are
    built once."""
    path = nodeid.split("::")[0]
    for number, group in enumerate(SERVED_GROUPS, 1):
        if path in group:
            return f"served-{number}"
    return path


def pytest_itemcollected(item: pytest.Item) -> None:
    mark(item)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The pass's tests kept (``--pass``, ``--quick``)."""
    report = config.getoption("passes_report")
    if report:
        passes = {item.nodeid: PASSES[in_production_pass(item)] for item in items}
        served = [item.nodeid for item in items if item.get_closest_marker("served")]
        Path(report).write_text(json.dumps({"passes": passes, "served": served}), "utf-8")
    ci_pass, quick = config.getoption("ci_pass"), config.getoption("quick")
    if ci_pass is None and not quick:
        return
    keep = [item for item in items if selected(item, ci_pass, quick)]
    dropped = [item for item in items if not selected(item, ci_pass, quick)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


class ServedFirst:
    """Served tests first, after every other plugin's ordering (pytest-django's): the
    longest groups, so that a pytest-xdist worker starts on each while the others share
    the rest."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.sort(key=lambda item: not item.get_closest_marker("served"))  # stable


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ServedFirst(), "concordia-served-first")
