"""The Celery application. Workers start with ``celery -A evalsite worker -Q cpu,gpu``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("concordia")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
