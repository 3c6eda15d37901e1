"""``python manage.py runtests [pytest args]``: run the whole test suite.

``--pass embedded`` or ``--pass production`` runs one of CI's two passes, ``--quick`` the
developer's loop (no worker, browser or served test; tests/passes.py says which test
runs where). Chromium and vLLM are installed only when the selection has tests that
use them (not for ``--quick`` nor ``--pass embedded``). Tests run in
``$CONCORDIA_TEST_WORKERS`` pytest-xdist processes per pass (default 3 for the production
pass, 2 otherwise; 1: one process), each with a data folder and Redis databases of its
own (tests/parallel.py). The whole
suite on the embedded backends (no DATABASE_URL nor CELERY_BROKER_URL, no selection)
runs as the two passes at once, each in a data folder of its own;
``CONCORDIA_TESTS_SERIAL=1`` runs it in one process.

Without DATABASE_URL / CELERY_BROKER_URL the suite runs on SQLite and the filesystem
broker in ./data/test; CI sets them to PostgreSQL and Redis. Debian's Chromium is
installed for the browser tests when it is missing and this user may run apt-get. vLLM's
own virtualenv (``.venv-vllm``, or ``$CONCORDIA_VLLM_VENV``) is created for the served
tests when missing (once; minutes), in the background while the other tests run, unless
``$CONCORDIA_VLLM_URL`` names a server already running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from scoring.lm.served import local_server

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


class Command(BaseCommand):
    help = "Run the test suite with pytest (extra arguments go to pytest)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pytest_args", nargs="*", help="passed to pytest as they are")

    def run_from_argv(self, argv: list[str]) -> None:
        # Every argument belongs to pytest (-q, -k EXPR, -x ...), so skip Django's parser.
        self.handle(pytest_args=argv[2:])

    def handle(self, *args: Any, **opts: Any) -> None:
        needs_servers = selects_servers(opts["pytest_args"])
        if needs_servers:
            ensure_chromium(self.stdout.write)
        # the real default model, for the tests that run it (converted once, then cached)
        subprocess.run(
            [sys.executable, str(settings.BASE_DIR / "manage.py"), "install_model"], check=True
        )
        if (
            needs_servers
            and not os.environ.get("CONCORDIA_VLLM_URL")
            and not local_server.installed()
        ):
            install_vllm_meanwhile(self.stdout.write)
        env = dict(os.environ)
        # Bytecode caches: without them every pytest process rewrites the asserts of the
        # ~500 test modules again (half of a collection's CPU), and every worker and
        # command the tests start compiles the project again.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.setdefault("CONCORDIA_DATA_DIR", str(settings.BASE_DIR / "data" / "test"))
        env.setdefault("CONCORDIA_MODEL_DIR", str(settings.CONCORDIA["MODEL_DIR"]))
        cmd = [sys.executable, "-m", "pytest", *opts["pytest_args"]]
        sys.stdout.flush()
        os.chdir(settings.BASE_DIR)
        if splits(opts["pytest_args"], env):
            sys.exit(run_both_passes(opts["pytest_args"], env, self.stdout.write))
        os.execve(sys.executable, cmd + parallel(opts["pytest_args"], env), env)


def install_vllm_meanwhile(say: Any) -> None:
    """Install vLLM's virtualenv in a process of its own while the tests start: the served
    tests' server fixture waits for it (``local_server.install`` holds a lock until the
    install is done), the other tests need none of it."""
    where = local_server.venv_dir()
    log = Path(settings.DATA_DIR) / "vllm-install.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(
        f"Installing {local_server.VLLM_PACKAGE} in {where} for the served tests (once, "
        f"minutes; its log: {log}) while the other tests start..."
    )
    sys.stdout.flush()
    with log.open("ab") as out:
        subprocess.Popen(
            [sys.executable, str(settings.BASE_DIR / "manage.py"), "vllm", "install"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # it outlives this process when pytest replaces it
        )


# pytest-xdist processes per pass unless $CONCORDIA_TEST_WORKERS says: the production pass
# has two groups of served tests (a vLLM server each) beside the rest
PRODUCTION_WORKERS, WORKERS = 3, 2


def parallel(pytest_args: list[str], env: dict[str, str]) -> list[str]:
    """pytest-xdist's options for one pass or ``--quick``: ``$CONCORDIA_TEST_WORKERS``
    worker processes (default :data:`PRODUCTION_WORKERS` for the production pass, else
    :data:`WORKERS`; 1 runs in one process), each with its own data folder and Redis
    databases (tests/parallel.py), each group of served modules in one worker and others
    module by module. None for a selection that holds both passes (tests that commit and
    tests that roll back: one process keeps pytest-django's order, the rolled-back tests first,
    so that no flush empties their seeded rows), when the arguments choose (``-n``), or
    when they pick a few tests (``-k``, a path: a collection per worker would cost more)."""
    production = "production" in pytest_args or "--pass=production" in pytest_args
    default = PRODUCTION_WORKERS if production else WORKERS
    workers = int(env.get("CONCORDIA_TEST_WORKERS") or default)
    one_pass = "--quick" in pytest_args or any(a.startswith("--pass") for a in pytest_args)
    chosen = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in pytest_args)
    picks = any(a == "-k" or a.startswith("tests") for a in pytest_args)
    if workers <= 1 or not one_pass or chosen or picks:
        return []
    return ["-n", str(workers), "-p", "tests.parallel"]


# Arguments that leave the whole suite selected: the two passes may run side by side.
WHOLE_SUITE_ARGS = frozenset({"-q", "-v", "-vv", "-rA", "-rf", "--tb=short", "--tb=line"})


def splits(pytest_args: list[str], env: dict[str, str]) -> bool:
    """Whether the whole suite runs as its two passes at once (tests/passes.py): on the
    embedded backends only, where each pass's data folder holds its database, broker,
    results and cache, so the two share nothing; ``CONCORDIA_TESTS_SERIAL=1`` says no."""
    if env.get("CONCORDIA_TESTS_SERIAL") == "1":
        return False
    if env.get("DATABASE_URL") or env.get("CELERY_BROKER_URL"):
        return False
    return set(pytest_args) <= WHOLE_SUITE_ARGS


def run_both_passes(pytest_args: list[str], env: dict[str, str], say: Any) -> int:
    """The production pass in the background (its output in a log, printed at the end),
    the embedded pass in the foreground; each pass's wall time. Exit status: the worse."""
    data = Path(env["CONCORDIA_DATA_DIR"])
    production_data = data.with_name(data.name + "-production")
    production_data.mkdir(parents=True, exist_ok=True)
    log_path = production_data / "pytest.log"
    pytest = [sys.executable, "-m", "pytest", *pytest_args]
    say(
        f"The production pass runs beside this one (its output: {log_path}, printed at the "
        "end); CONCORDIA_TESTS_SERIAL=1 runs the suite in one process."
    )
    sys.stdout.flush()
    started = time.monotonic()
    ended: list[float] = []
    with log_path.open("wb") as log:
        production = subprocess.Popen(
            [*pytest, *one_pass("production", pytest_args, env)],
            env=dict(env, CONCORDIA_DATA_DIR=str(production_data)),
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def wait_for_production() -> None:
            production.wait()
            ended.append(time.monotonic())

        waiter = threading.Thread(target=wait_for_production, daemon=True)
        waiter.start()
        try:
            embedded = subprocess.run(
                [*pytest, *one_pass("embedded", pytest_args, env)], env=env
            ).returncode
            embedded_s = time.monotonic() - started
            waiter.join()
        finally:
            if production.poll() is None:
                production.terminate()
                production.wait()
    production_s = (ended[0] if ended else time.monotonic()) - started
    say("=" * 30 + " production pass (workers, browser, served, backend) " + "=" * 30)
    say(log_path.read_text(encoding="utf-8", errors="replace"))
    say(f"embedded pass: exit {embedded}, {embedded_s:.0f} s")
    say(f"production pass: exit {production.returncode}, {production_s:.0f} s")
    return embedded or production.returncode


def one_pass(name: str, pytest_args: list[str], env: dict[str, str]) -> list[str]:
    """The options that run pass ``name``, in parallel processes (:func:`parallel`)."""
    return ["--pass", name, *parallel([*pytest_args, "--pass", name], env)]


def selects_servers(pytest_args: list[str]) -> bool:
    """Whether the selection may hold browser or served tests: not with ``--quick``, nor
    with ``--pass embedded`` (the embedded pass has neither)."""
    if "--quick" in pytest_args or "--pass=embedded" in pytest_args:
        return False
    return not any(
        a == "--pass" and b == "embedded"
        for a, b in zip(pytest_args, pytest_args[1:], strict=False)
    )


def ensure_chromium(say: Any) -> None:
    if os.path.exists(CHROMIUM):
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        say(
            f"Chromium is not at {CHROMIUM}; install it (Debian: apt-get install chromium) "
            "for the browser tests."
        )
        return
    say("Installing Debian's chromium for the browser tests...")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        [
            "apt-get",
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "chromium",
            "fonts-liberation",
        ],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
