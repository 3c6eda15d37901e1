"""``python manage.py demo``: set up the demo study and run the web server and the workers.

Everything runs on the embedded defaults unless DATABASE_URL / CELERY_BROKER_URL are
set: a SQLite file and a filesystem broker under ./data, no server needed.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from evalsite.celery import local_workers, node_name, workers_ready_signals
from evalsite.supervisor import Supervisor, describe_exit
from studies import hooks
from studies.demo_data import write_demo_jsonl
from studies.models import Aspect, Dataset, Study, StudyMember
from studies.services import workers
from studies.services.imports import ImportOptions, import_file
from studies.services.studies import CREATE_ANNOTATORS

log = logging.getLogger(__name__)
DEMO_DATASET = "demo-synthetic"
DEMO_USERS = {  # username: (password, role)
    "admin": ("admin", "admin"),
    "researcher": ("researcher", "researcher"),
    "annotator": ("annotator", "annotator"),
}


def _exit_on_signal(signum: int, frame: Any) -> None:
    """SIGTERM or SIGHUP end the command like Ctrl+C, so its ``finally`` stops the workers."""
    raise SystemExit(128 + signum)


class Command(BaseCommand):
    help = (
        "Load the synthetic demo study, then run the web server and five Celery workers (the "
        "model worker; ones that load no model for the short metrics, imports and computed "
        "pages, served endpoints, and beat with the sweeper), restarting any that dies."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address:port to serve on")
        parser.add_argument("--setup-only", action="store_true", help="load the demo and exit")
        parser.add_argument(
            "--skip-model", action="store_true", help="do not install the default model"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        self.setup_demo()
        if not opts["skip_model"]:
            try:
                call_command("install_model")
            except Exception as exc:  # the app still runs; GPTScore runs then say how to install
                log.warning("the default scoring model could not be installed: %s", exc)
        if opts["setup_only"]:
            return
        for stop in (signal.SIGTERM, signal.SIGHUP):  # not only Ctrl+C: the workers stop too
            signal.signal(stop, _exit_on_signal)
        commands = local_workers("demo", settings.DATA_DIR / "celerybeat-schedule")
        supervisor = Supervisor(
            {node_name(cmd): cmd for cmd in commands},
            cwd=settings.BASE_DIR,
            env=os.environ.copy(),
            say=self.say,
            on_exit=self.worker_exited,
        )
        supervisor.start()
        try:
            self.wait_for_worker()
            host, _, port = opts["addr"].rpartition(":")
            self.stdout.write(
                self.style.SUCCESS(
                    f"\nConcordia is running at http://{host or '127.0.0.1'}:{port}/\n"
                    "  log in as researcher / researcher (datasets, uploads), annotator / annotator,\n"
                    "  or admin / admin (Django admin at /admin/). Ctrl+C stops the server and the workers.\n"
                )
            )
            call_command("runserver", opts["addr"], use_reloader=False)
        finally:
            supervisor.stop()

    def say(self, line: str) -> None:
        """A line of the demo's output (the supervisor's: a worker died, restarts)."""
        self.stdout.write(self.style.WARNING(line))

    def worker_exited(self, name: str, code: int, restart_in: float) -> None:
        """The jobs page shows the worker dead at once, not after its heartbeats lapse."""
        workers.stopped(name, f"{describe_exit(code)}; restarting in {restart_in:g} s")

    @transaction.atomic
    def setup_demo(self) -> None:
        users = get_user_model().objects
        for username, (password, role) in DEMO_USERS.items():
            user, created = users.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.is_staff = user.is_superuser = role == "admin"
                user.save()
            if role != "admin":
                user.groups.add(Group.objects.get(name=role))
        researcher = users.get(username="researcher")
        # the demo researcher may create annotator accounts on a study's Members page
        app, codename = CREATE_ANNOTATORS.split(".")
        researcher.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
        path = settings.DATA_DIR / "demo" / "demo-synthetic.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_demo_jsonl(path)
        summary = import_file(
            path,
            ImportOptions(
                dataset=DEMO_DATASET,
                task="summarization",
                file_format="jsonl",
                file_name=path.name,
                owner=researcher,
                description="SYNTHETIC demo data written by Concordia: 12 invented news texts, six "
                "systems of controlled quality (shuffled sentences, dropped facts, injected "
                "errors, broken grammar) and simulated judgments that follow the degradations.",
            ),
        )
        dataset = Dataset.objects.get(name=DEMO_DATASET, owner=researcher)
        study, _ = Study.objects.get_or_create(
            name="Demo study (synthetic data)", dataset=dataset, defaults={"owner": researcher}
        )
        study.aspects.set(
            Aspect.objects.filter(owner__isnull=True, code__in=["COH", "CON", "FLU", "REL"])
        )
        for username, role in (("researcher", "researcher"), ("annotator", "annotator")):
            StudyMember.objects.get_or_create(
                study=study, user=users.get(username=username), defaults={"role": role}
            )
        accounts = {user.username: user for user in users.filter(username__in=DEMO_USERS)}
        for contribute in hooks.demo_setup:  # the apps' own parts (the demo campaign)
            contribute(study, accounts)
        self.stdout.write(f"Demo dataset {DEMO_DATASET}: {summary.records} outputs.")

    def wait_for_worker(self) -> None:
        results = workers_ready_signals("demo start")
        started = time.monotonic()
        try:
            for result in results:
                result.get(timeout=60)
            self.stdout.write(f"Workers ready in {time.monotonic() - started:.1f} s.")
        except Exception as exc:  # the server still starts; the pages say when imports wait
            log.warning("the worker did not answer yet: %s", exc)
