"""The Celery application, its queues and the workers a single machine runs.

Queues: ``gpu`` (model-based runs), ``cpu`` (model-free runs, training on the CPU),
``light`` (imports and computed pages: matrices, diagnostics, plans, agreement), ``io``
(runs on served endpoints: HTTP requests, no model) and ``maintenance`` (the sweeper
alone). A model worker serves ``cpu,gpu``; light workers, which load no model, serve
``light`` (so an upload or a matrix never waits behind a model job), ``io`` and
``maintenance`` (with celery beat, so a sweep never waits behind the runs it recovers):
``celery -A evalsite worker -Q cpu,gpu``, ``celery -A evalsite worker -Q light``,
``celery -A evalsite worker -Q io`` and one ``celery -A evalsite worker -Q maintenance -B``.
"""

import logging
import os
import sys
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("concordia")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

log = logging.getLogger(__name__)
MODEL_QUEUES = "cpu,gpu"
LIGHT_QUEUE = "light"  # imports and computed pages
IO_QUEUE = "io"  # runs on served endpoints
MAINTENANCE_QUEUE = "maintenance"  # the sweeper's (settings: CELERY_TASK_ROUTES, beat)


def worker_command(
    node_name: str, queues: str = MODEL_QUEUES, beat_schedule: Path | None = None
) -> list[str]:
    """argv of a single-process worker that starts fast (demo and tests run them).

    With ``beat_schedule`` (a file, e.g. under the data dir) the worker also runs celery
    beat, which sends the periodic tasks: the sweeper that recovers lost runs. Run one beat
    per deployment (compose's ``beat`` service runs it beside the maintenance queue).
    """
    beat = ["-B", "-s", str(beat_schedule)] if beat_schedule else []
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "evalsite",
        "worker",
        "-Q",
        queues,
        "--pool=solo",
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        node_name,
        *beat,
    ]


def local_workers(name: str, beat_schedule: Path) -> list[list[str]]:
    """argv of the four workers one machine runs (``manage.py demo``, the tests' worker): a
    model worker on ``cpu,gpu``, a light one on ``maintenance`` with celery beat, which
    loads no model and so runs each sweep on time however long the runs are, a light one
    on ``io`` for runs on served endpoints and a light one on ``light`` for imports and
    computed pages, which so never wait behind a model job."""
    return [
        worker_command(f"{name}@%h"),
        worker_command(f"{name}-maintenance@%h", MAINTENANCE_QUEUE, beat_schedule),
        worker_command(f"{name}-io@%h", IO_QUEUE),
        worker_command(f"{name}-light@%h", LIGHT_QUEUE),
    ]


def workers_ready_signals(note: str) -> list[Any]:
    """One heartbeat sent to the model worker's queue and one to the light worker's: both
    answer once the two workers that the pages wait on are up."""
    return [
        app.send_task("studies.tasks.heartbeat", args=[note], queue=queue)
        for queue in ("cpu", LIGHT_QUEUE)
    ]


@celeryd_after_setup.connect
def warn_if_beat_sweeps_elsewhere(sender: str, instance: Any, **kwargs: Any) -> None:
    """Log a warning when a worker runs beat (``-B``) but not the maintenance queue, as the
    layout before that queue did: its sweeps then wait for another worker to take them,
    and recover nothing if none serves ``maintenance``."""
    queues = instance.app.amqp.queues
    if getattr(instance, "beat", None) and MAINTENANCE_QUEUE not in queues:
        log.warning(
            "worker %s runs celery beat but not the %r queue, where beat sends the sweeper "
            "that recovers lost runs: add -Q %s to a worker that runs no long task, e.g. "
            "`celery -A evalsite worker -Q %s -B` instead of -B here",
            sender,
            MAINTENANCE_QUEUE,
            MAINTENANCE_QUEUE,
            MAINTENANCE_QUEUE,
        )
