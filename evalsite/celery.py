"""The Celery application. Workers start with ``celery -A evalsite worker -Q cpu,gpu``."""

import os
import sys
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("concordia")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def worker_command(
    node_name: str, queues: str = "cpu,gpu", beat_schedule: Path | None = None
) -> list[str]:
    """argv of a single-process worker that starts fast (demo and tests run one).

    With ``beat_schedule`` (a file, e.g. under the data dir) the worker also runs celery
    beat, which sends the periodic tasks: the sweeper that recovers lost runs. Run one beat
    per deployment (compose has its own ``beat`` service).
    """
    beat = ["-B", "-s", str(beat_schedule)] if beat_schedule else []
    return [
        sys.executable, "-m", "celery", "-A", "evalsite", "worker", "-Q", queues,
        "--pool=solo", "--loglevel=INFO", "--without-gossip", "--without-mingle",
        "--without-heartbeat", "-n", node_name, *beat,
    ]  # fmt: skip
