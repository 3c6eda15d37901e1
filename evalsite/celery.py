"""The Celery application, its queues and the workers a single machine runs.

Queues: ``gpu`` (model-based runs), ``cpu`` (BERTScore, training on the CPU), ``quick``
(the short model-free metrics: ROUGE, BLEU, chrF, length, random), ``light`` (imports and
computed pages: matrices, diagnostics, plans, agreement), ``io`` (runs on served
endpoints: HTTP requests, no model) and ``maintenance`` (the sweeper alone). Each lane of
:data:`LANES` is one worker: a model worker serves ``cpu,gpu`` (in turn: it takes one
message from each queue that has one); workers that load no model serve ``quick`` (so a
10-second ROUGE run never waits behind a model run), ``light`` (so an upload or a matrix
never does either), ``io`` and ``maintenance`` (with celery beat, so a sweep never waits
behind the runs it recovers): ``celery -A evalsite worker -Q cpu,gpu``, ``… -Q quick``,
``… -Q light``, ``… -Q io`` and one ``… -Q maintenance -B``. docker/compose.yml runs the
same lanes as services (tests/test_celery.py checks that they match).
"""

import logging
import os
import socket
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
QUICK_QUEUE = "quick"  # the short model-free metrics
LIGHT_QUEUE = "light"  # imports and computed pages
IO_QUEUE = "io"  # runs on served endpoints
MAINTENANCE_QUEUE = "maintenance"  # the sweeper's (settings: CELERY_TASK_ROUTES, beat)
# lane → the queues its one worker takes, in the order local_workers starts them
LANES: dict[str, tuple[str, ...]] = {
    "model": tuple(MODEL_QUEUES.split(",")),
    "maintenance": (MAINTENANCE_QUEUE,),
    "io": (IO_QUEUE,),
    "light": (LIGHT_QUEUE,),
    "quick": (QUICK_QUEUE,),
}


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
    """argv of the workers one machine runs (``manage.py demo``, the tests' worker), one
    per lane of :data:`LANES`: a model worker on ``cpu,gpu``, a light one on
    ``maintenance`` with celery beat, which loads no model and so runs each sweep on time
    however long the runs are, a light one on ``io`` for runs on served endpoints, one on
    ``light`` for imports and computed pages and one on ``quick`` for the short metrics,
    which so never wait behind a model job."""
    return [
        worker_command(
            f"{name}@%h" if lane == "model" else f"{name}-{lane}@%h",
            ",".join(queues),
            beat_schedule if lane == "maintenance" else None,
        )
        for lane, queues in LANES.items()
    ]


def node_name(argv: list[str]) -> str:
    """The Celery node name a worker's argv gives it, ``%h`` expanded as Celery does."""
    return argv[argv.index("-n") + 1].replace("%h", socket.gethostname())


def workers_ready_signals(note: str) -> list[Any]:
    """One heartbeat sent to the model worker's queue, the quick worker's and the light
    worker's: all answer once the workers that the pages wait on are up."""
    return [
        app.send_task("studies.tasks.heartbeat", args=[note], queue=queue)
        for queue in ("cpu", QUICK_QUEUE, LIGHT_QUEUE)
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
