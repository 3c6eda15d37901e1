"""The Celery application. Workers start with ``celery -A evalsite worker -Q cpu,gpu``."""

import os
import sys

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("concordia")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def worker_command(node_name: str, queues: str = "cpu,gpu") -> list[str]:
    """argv of a single-process worker that starts fast (demo and tests run one)."""
    return [
        sys.executable, "-m", "celery", "-A", "evalsite", "worker", "-Q", queues,
        "--pool=solo", "--loglevel=INFO", "--without-gossip", "--without-mingle",
        "--without-heartbeat", "-n", node_name,
    ]  # fmt: skip
