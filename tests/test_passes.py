"""CI's two passes (tests/passes.py) partition the suite: a collection of ``--pass
embedded`` selects exactly the tests the rules give that pass, the production pass takes
the rest, so no test is lost or run twice; the worker, browser and served tests are all on
the production pass; every test that ``BACKEND`` names exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.passes import BACKEND, SERVED_GROUPS, SERVED_MODULES, SLOW, selected

ROOT = Path(__file__).resolve().parent.parent


def collect(tmp_path: Path, *args: str) -> tuple[set[str], dict[str, str], set[str]]:
    """The test ids a collection selects, every collected test's pass, the served tests."""
    report = tmp_path / "passes.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + [f"--passes-report={report}", *args],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = {line for line in proc.stdout.splitlines() if line.startswith("tests/")}
    found = json.loads(report.read_text(encoding="utf-8"))
    return ids, found["passes"], set(found["served"])


def test_the_embedded_and_the_production_pass_partition_the_suite(tmp_path):
    embedded, passes, served = collect(tmp_path, "--pass", "embedded")
    production = {nodeid for nodeid, where in passes.items() if where == "production"}
    assert embedded == {nodeid for nodeid, where in passes.items() if where == "embedded"}
    assert embedded and production and not embedded & production
    assert embedded | production == set(passes)
    assert len(passes) > 2000  # the whole suite was collected, not a part of it
    for path in ("tests/test_browser.py", "tests/studies/test_worker.py"):
        assert any(nodeid.startswith(path) for nodeid in production), path
    assert any(nodeid.startswith("tests/scoring/test_served_engine.py") for nodeid in production)
    for key in (*BACKEND, *SLOW):
        assert any(nodeid == key or nodeid.startswith(key + "::") for nodeid in passes), key
    # the served modules that one xdist worker runs together are those of the served tests
    assert {nodeid.split("::")[0] for nodeid in served} == SERVED_MODULES


class Item:
    """What :func:`tests.passes.selected` reads of a collected test."""

    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid, self.markers = nodeid, markers

    def get_closest_marker(self, name: str) -> object:
        return name if name in self.markers else None


@pytest.mark.parametrize(
    ("markers", "where", "quick"),
    [
        ((), "embedded", True),
        (("worker",), "production", False),
        (("browser",), "production", False),
        (("served", "engine"), "production", False),
        (("backend",), "production", False),
    ],
)
def test_a_test_runs_in_one_pass_and_quick_is_the_embedded_one_less_the_slow_tests(
    markers, where, quick
):
    item = Item("tests/x/test_y.py::test_z", *markers)
    assert selected(item, where, quick=False)  # type: ignore[arg-type]
    other = "production" if where == "embedded" else "embedded"
    assert not selected(item, other, quick=False)  # type: ignore[arg-type]
    assert selected(item, None, quick=False)  # type: ignore[arg-type]  # the full suite
    assert selected(item, None, quick=True) is quick  # type: ignore[arg-type]
    slow = Item(next(iter(SLOW)) + "::test_z", *markers)
    assert not selected(slow, None, quick=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "servers"),
    [
        ([], True),
        (["-q", "-k", "import"], True),
        (["--pass", "production"], True),
        (["--pass", "embedded", "-q"], False),
        (["--pass=embedded"], False),
        (["--quick"], False),
    ],
)
def test_runtests_installs_chromium_and_vllm_only_for_a_selection_that_uses_them(args, servers):
    from studies.management.commands.runtests import selects_servers

    assert selects_servers(args) is servers


def test_runtests_runs_in_parallel_unless_told_or_picking_a_few_tests():
    from studies.management.commands.runtests import parallel

    xdist = ["-n", "2", "-p", "tests.parallel"]
    assert parallel(["-q", "--quick"], {}) == xdist == parallel(["--pass=embedded"], {})
    assert parallel(["--pass", "production"], {"CONCORDIA_TEST_WORKERS": "4"})[1] == "4"
    # the production pass: a worker for each group of served modules, one for the rest
    assert (
        parallel(["--pass", "production"], {})[1] == "3" == parallel(["--pass=production"], {})[1]
    )
    assert parallel(["--quick"], {"CONCORDIA_TEST_WORKERS": "1"}) == []
    # both passes in one selection (committing and rolled-back tests): one process
    assert parallel([], {}) == [] == parallel(["-q"], {})
    # the caller's own -n, or a few tests picked (a collection per worker would cost more)
    assert parallel(["--quick", "-n", "4"], {}) == [] == parallel(["--quick", "-nauto"], {})
    assert parallel(["--quick", "-k", "x"], {}) == [] == parallel(["--quick", "tests/api"], {})


def test_each_pass_of_the_whole_suite_runs_in_parallel_processes():
    from studies.management.commands.runtests import one_pass

    assert one_pass("embedded", ["-q"], {}) == [
        "--pass",
        "embedded",
        "-n",
        "2",
        "-p",
        "tests.parallel",
    ]
    assert one_pass("production", [], {"CONCORDIA_TEST_WORKERS": "1"}) == ["--pass", "production"]


def test_the_whole_suite_on_the_embedded_backends_runs_as_its_two_passes_at_once():
    from studies.management.commands.runtests import splits

    assert splits([], {}) and splits(["-q"], {})
    assert not splits(["-q"], {"CONCORDIA_TESTS_SERIAL": "1"})
    # a selection, or backends shared by both passes (one database, one broker): one process
    assert not splits(["-k", "import"], {}) and not splits(["tests/api"], {})
    assert not splits(["--pass", "embedded"], {}) and not splits(["--quick"], {})
    assert not splits([], {"DATABASE_URL": "postgres://x/y"})
    assert not splits([], {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"})


def test_each_xdist_worker_gets_its_own_folder_and_redis_databases(tmp_path):
    from tests.parallel import isolate

    redis = {"CONCORDIA_DATA_DIR": str(tmp_path), "CELERY_BROKER_URL": "redis://h:6379/0"}
    isolate("gw1", redis)
    assert redis["CONCORDIA_DATA_DIR"] == str(tmp_path / "gw1")
    assert (redis["CELERY_BROKER_URL"], redis["CELERY_RESULT_BACKEND"]) == (
        "redis://h:6379/3",
        "redis://h:6379/4",
    )
    assert redis["CACHE_URL"] == "redis://h:6379/5"
    first = {"CELERY_BROKER_URL": "redis://h:6379/0", "CACHE_URL": "redis://c:1/7"}
    isolate("gw0", first)
    assert (
        first["CELERY_BROKER_URL"] == "redis://h:6379/0" and first["CACHE_URL"] == "redis://c:1/7"
    )
    embedded = {"CONCORDIA_DATA_DIR": str(tmp_path), "MKL_NUM_THREADS": "2"}
    isolate("gw2", embedded)
    assert embedded["CONCORDIA_DATA_DIR"] == str(tmp_path / "gw2")
    assert (embedded["OMP_NUM_THREADS"], embedded["MKL_NUM_THREADS"]) == ("1", "2")
    assert "CELERY_BROKER_URL" not in embedded and "CACHE_URL" not in embedded


def test_each_group_of_served_modules_is_one_scope_and_other_modules_their_own():
    from tests.passes import scope

    assert scope("tests/scoring/test_served_engine.py::t[1]") == "served-2"
    assert scope("tests/studies/test_served_runs.py::t") == "served-2"
    assert scope("tests/studies/test_served_batch.py::t") == "served-1"
    assert len({scope(f"{path}::t") for path in SERVED_MODULES}) == len(SERVED_GROUPS) == 2
    assert scope("tests/a/test_x.py::t[1]") == "tests/a/test_x.py" == scope("tests/a/test_x.py::u")
