"""``python manage.py runtests [pytest args]``: run the whole test suite.

``--pass embedded`` or ``--pass production`` runs one of CI's two passes, ``--quick`` the
developer's loop (no worker, browser or served test; tests/passes.py says which test
runs where). Chromium and vLLM are installed only when the selection has tests that
use them (not for ``--quick`` nor ``--pass embedded``). Tests run in
``$CONCORDIA_TEST_WORKERS`` pytest-xdist processes (default 2; 1: one process), each with
a data folder and Redis databases of its own (tests/parallel.py).

Without DATABASE_URL / CELERY_BROKER_URL the suite runs on SQLite and the filesystem
broker in ./data/test; CI sets them to PostgreSQL and Redis. Debian's Chromium is
installed for the browser tests when it is missing and this user may run apt-get. vLLM's
own virtualenv (``.venv-vllm``, or ``$CONCORDIA_VLLM_VENV``) is created for the served
tests when missing (once; about 15 minutes), unless ``$CONCORDIA_VLLM_URL`` names a
server already running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
            self.stdout.write(
                f"Installing {local_server.VLLM_PACKAGE} in {local_server.venv_dir()} for the "
                "served tests (once; about 15 minutes)..."
            )
            sys.stdout.flush()
            local_server.install()
        env = dict(os.environ)
        # Bytecode caches: without them every pytest process rewrites the asserts of the
        # ~500 test modules again (half of a collection's CPU), and every worker and
        # command the tests start compiles the project again.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.setdefault("CONCORDIA_DATA_DIR", str(settings.BASE_DIR / "data" / "test"))
        env.setdefault("CONCORDIA_MODEL_DIR", str(settings.CONCORDIA["MODEL_DIR"]))
        cmd = [sys.executable, "-m", "pytest", *parallel(opts["pytest_args"], env)]
        cmd += opts["pytest_args"]
        sys.stdout.flush()
        os.chdir(settings.BASE_DIR)
        os.execve(sys.executable, cmd, env)


def parallel(pytest_args: list[str], env: dict[str, str]) -> list[str]:
    """pytest-xdist's options: ``$CONCORDIA_TEST_WORKERS`` worker processes (default 3 for
    the whole suite, 2 for one pass or ``--quick``; 1 runs in one process), each with its own data folder and Redis databases
    (tests/parallel.py), the served modules in one worker and others module by module. None when the arguments already choose (``-n``), or
    pick a few tests (``-k``, a path): a collection for each worker would cost more."""
    one_pass = "--quick" in pytest_args or any(a.startswith("--pass") for a in pytest_args)
    # the whole suite: one process for the served modules, two for the rest
    workers = int(env.get("CONCORDIA_TEST_WORKERS") or (2 if one_pass else 3))
    chosen = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in pytest_args)
    picks = any(a == "-k" or a.startswith("tests") for a in pytest_args)
    if workers <= 1 or chosen or picks:
        return []
    return ["-n", str(workers), "-p", "tests.parallel"]


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
