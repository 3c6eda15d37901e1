"""Where a run's time went: per test file and per kind of test (a pytest plugin).

At the end of a run it prints the time (setup + call + teardown) summed per kind (the
first of ``served``, ``browser``, ``worker``, ``backend`` a test has, else ``plain``; see
tests/passes.py) and the 15 files that took longest. A session fixture's start (the
worker, vLLM, Chromium) counts in the setup of the first test that uses it.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

KINDS = ("served", "browser", "worker", "backend")
TOP_FILES = 15


class Durations:
    def __init__(self) -> None:
        self.by_file: defaultdict[str, float] = defaultdict(float)
        self.by_kind: defaultdict[str, float] = defaultdict(float)
        self.tests: Counter[str] = Counter()
        self.files_tests: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # the report's keywords carry the test's markers, from a pytest-xdist worker too
        what = next((name for name in KINDS if name in report.keywords), "plain")
        path = report.nodeid.split("::")[0]
        self.by_file[path] += report.duration
        self.by_kind[what] += report.duration
        if report.when == "setup":
            self.tests[what] += 1
            self.files_tests[path] += 1

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.by_file:
            return
        write = terminalreporter.write_line
        terminalreporter.section("durations per kind and per file")
        total = sum(self.by_kind.values())
        for what in (*KINDS, "plain"):
            if self.tests[what]:
                write(f"{self.by_kind[what]:9.1f}s {self.tests[what]:5d} tests  {what}")
        write(f"{total:9.1f}s {sum(self.tests.values()):5d} tests  all")
        ranked = sorted(self.by_file.items(), key=lambda kv: -kv[1])
        write(f"slowest {min(TOP_FILES, len(ranked))} of {len(ranked)} files:")
        for path, seconds in ranked[:TOP_FILES]:
            write(f"{seconds:9.1f}s {self.files_tests[path]:5d} tests  {path}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Durations(), "concordia-durations")
