"""Shared fixtures: a fixed cast of users, small dataset files, and a real Celery worker."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# vLLM and the fault proxy, hostile servers, CI's passes and markers, the durations report
pytest_plugins = ["tests.served", "tests.adversary", "tests.passes", "tests.durations"]

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data beside the checkout ($CONCORDIA_SHARED_DATA: elsewhere, e.g. for a worktree)
SHARED_DATA = Path(os.environ.get("CONCORDIA_SHARED_DATA") or ROOT.parent / "shared" / "data")
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Playwright's sync API runs an event loop in the main thread; the ORM calls in browser
# tests are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _flush_retried_on_deadlock() -> None:
    """A transactional test's teardown empties every table (TRUNCATE); a worker or live
    server thread still reading from the test before can make PostgreSQL pick the
    TRUNCATE as a deadlock's victim. The other side goes on, so the flush is tried again
    (a few times, a moment apart) instead of failing the test that happened to be next."""
    from django.db import OperationalError
    from django.test import TransactionTestCase

    teardown = TransactionTestCase._fixture_teardown

    def retried(self):  # type: ignore[no-untyped-def]
        for attempt in range(4):
            try:
                return teardown(self)
            except Exception as exc:  # flush's CommandError wraps the OperationalError
                cause = exc.__cause__ or exc
                if attempt == 3 or not (
                    isinstance(cause, OperationalError) and "deadlock" in str(cause)
                ):
                    raise
                time.sleep(0.5 * (attempt + 1))
        return None

    TransactionTestCase._fixture_teardown = retried  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    _flush_retried_on_deadlock()


@pytest.fixture
def cast(db):  # type: ignore[no-untyped-def]
    """owner and outsider (researchers), annotator, admin."""
    from tests.factories import UserFactory

    return {
        "owner": UserFactory(username="owner", role="researcher"),
        "outsider": UserFactory(username="outsider", role="researcher"),
        "annotator": UserFactory(username="annotator", role="annotator"),
        "admin": UserFactory(username="boss", is_staff=True, is_superuser=True),
    }


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[..., Path]:
    """Write records (dicts, or raw strings written as-is) to a .jsonl file."""

    def write(records: list[object], name: str = "data.jsonl") -> Path:
        path = tmp_path / name
        with path.open("w", encoding="utf-8") as fh:
            for record in records:
                fh.write(record if isinstance(record, str) else json.dumps(record))
                fh.write("\n")
        return path

    return write


def record(doc: str = "d1", system: str = "s1", **overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "doc_id": doc,
        "system_id": system,
        "source": f"Source of {doc}.",
        "references": [f"Reference of {doc}."],
        "output": f"Output of {system} for {doc}.",
        "human": {"coherence": 3.0, "fluency": 4.0},
    }
    base.update(overrides)
    return base


def row_counts() -> dict[str, int]:
    from studies import models

    return {
        m.__name__: m.objects.count()
        for m in (
            models.Dataset,
            models.Document,
            models.Output,
            models.Judgment,
            models.MetricRun,
            models.MetricScore,
            models.Aspect,
            models.AspectVersion,
        )
    }


@pytest.fixture(scope="module")
def schema(django_db_blocker):  # type: ignore[no-untyped-def]
    """The public OpenAPI schema, as drf-spectacular generates it (once per test module)."""
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return dict(SchemaGenerator().get_schema(request=None, public=True))


@pytest.fixture
def allow_loopback(settings):  # type: ignore[no-untyped-def]
    """Researchers' endpoints may reach 127.0.0.1, where the tests' servers run (the
    egress policy's allow-list, as an operator sets it; the workers have the same)."""
    settings.ENDPOINT_ALLOWED_HOSTS = ["127.0.0.1"]
    return settings


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it), for a server a test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worker_env() -> dict[str, str]:
    """The environment of a worker that uses the test database and the tests' broker."""
    from django.conf import settings
    from django.db import connection

    from tests.adversary import TEST_KEY_ENV, TEST_KEY_VALUE

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        url = f"sqlite:///{db['NAME']}"
    else:
        auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
        url = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return dict(
        os.environ,
        DATABASE_URL=url,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CONCORDIA_DATA_DIR=str(settings.DATA_DIR),
        # the tests' servers run on 127.0.0.1: an operator's allow-list lets researchers'
        # endpoints reach that host (as written: localhost, 127.0.0.2, 2130706433… stay
        # refused, which the egress tests check through these workers)
        ENDPOINT_ALLOWED_HOSTS="127.0.0.1",
        # the one variable a shared endpoint may read its key from (tests/security)
        ENDPOINT_KEY_ENV_ALLOWED=TEST_KEY_ENV,
        **{TEST_KEY_ENV: TEST_KEY_VALUE},
        # one io process per endpoint (a researcher's: per researcher), so that a second
        # io worker shows the other processes stay free (tests/security/test_served_*)
        SERVED_ENDPOINT_SLOTS="1",
    )


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """Real ``celery worker`` processes on the test database and the configured broker, as
    the demo runs them (evalsite.celery.local_workers): the model worker, yielded, the
    maintenance worker with beat, the io worker and the light worker."""
    from django.conf import settings

    from evalsite.celery import local_workers, workers_ready_signals

    procs, logs = [], []
    for k, cmd in enumerate(
        local_workers(f"test-{os.getpid()}", settings.DATA_DIR / "test-beat-schedule")
    ):
        logs.append(settings.DATA_DIR / f"test-worker-{k}.log")
        with logs[-1].open("wb") as log:
            procs.append(
                subprocess.Popen(
                    cmd, cwd=ROOT, env=worker_env(), stdout=log, stderr=subprocess.STDOUT
                )
            )
    proc = procs[0]
    try:
        with django_db_blocker.unblock():
            started = time.monotonic()
            results = workers_ready_signals("worker fixture start")
            while not all(result.ready() for result in results):
                assert proc.poll() is None, logs[0].read_text()[-3000:]
                # four processes importing Django, Celery and torch at once on two busy
                # cores: a start-up budget, not a timing
                assert time.monotonic() - started < 240, (
                    "worker did not start: " + logs[0].read_text()[-3000:]
                )
                time.sleep(0.2)
        yield proc
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


@pytest.fixture
def extra_io_worker(celery_worker_process) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """One more ``io`` worker process beside the session's (the same environment), so two
    processes serve ``io``: what a test of who may hold them needs."""
    from django.conf import settings

    from evalsite.celery import IO_QUEUE, worker_command

    node = f"extra-io-{os.getpid()}@{socket.gethostname()}"
    log = settings.DATA_DIR / "test-worker-extra-io.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            worker_command(node, IO_QUEUE), cwd=ROOT, env=worker_env(), stdout=out, stderr=out
        )
    try:
        started = time.monotonic()
        while " ready." not in log.read_text(errors="replace"):  # celery's own start line
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() - started < 120, "io worker did not start: " + log.read_text()
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a task it would not leave: it dies with it
            proc.kill()
            proc.wait()


def wait_until_true(page, expression: str, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Poll a JavaScript expression until it is true. Playwright's ``wait_for_function``
    evaluates its predicate with ``eval``, which the content security policy refuses;
    ``page.evaluate`` runs through the DevTools protocol, which the policy does not cover."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout} s: {expression}"
        time.sleep(0.05)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):  # type: ignore[no-untyped-def]
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: run the tests with `python3 manage.py runtests`, "
            "which installs it, or set CHROMIUM_PATH."
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):  # type: ignore[no-untyped-def]
    """Playwright's assertions wait 5 s by default: on the 2-core CI machine, with the
    production pass's served tests running beside the browser, one POST and its swap
    have taken longer. The assertions still fail when the page never gets there; they
    only wait longer for it (a condition with a deadline, not a sleep)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    return browser_context_args


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):  # type: ignore[no-untyped-def]
    """PBKDF2 costs ~0.3 s a user; the tests do not test hashing strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def defaults_restored(transactional_db):  # type: ignore[no-untyped-def]
    """Transactional tests flush the database afterwards, data migrations included:
    put the default tasks, aspects, templates and role groups back."""
    from django.apps import apps

    from studies.defaults import load_defaults

    load_defaults(apps)


@pytest.fixture(autouse=True)
def _empty_cache():  # type: ignore[no-untyped-def]
    """Cached correlations must not leak from one test (or test run) into another."""
    from django.core.cache import cache

    cache.clear()
    yield


# Cases run by the import fuzz tests (tests/studies/test_import_fuzz.py), by outcome.
FUZZ_CASES: Counter[str] = Counter()
# What the browser XSS test (tests/test_browser_xss.py) checked: vectors, pages, executed.
XSS_CHECKS: Counter[str] = Counter()


def pytest_terminal_summary(terminalreporter):  # type: ignore[no-untyped-def]
    """Say how many fuzzed files went through the import and how many XSS vectors × pages
    were checked in Chromium (the README cites these lines)."""
    if FUZZ_CASES:
        parts = ", ".join(f"{n} {what}" for what, n in sorted(FUZZ_CASES.items()))
        terminalreporter.write_line(f"import fuzzing: {sum(FUZZ_CASES.values())} cases ({parts})")
    if XSS_CHECKS:
        terminalreporter.write_line(
            f"xss: {XSS_CHECKS['vectors']} vectors × {XSS_CHECKS['pages']} pages, "
            f"{XSS_CHECKS['executed']} executed, {XSS_CHECKS['injected']} injected elements"
        )
