"""The one way services enqueue work: a task sent by its name once the transaction commits.

Services never import ``studies.tasks`` (tasks import services; the arrow points one way),
so a task is named here and routed to its queue by ``CELERY_TASK_ROUTES``.
"""

from __future__ import annotations

from django.db import transaction

from evalsite.celery import app

RUN_METRIC = "studies.tasks.run_metric"  # language-model metrics, queue gpu
RUN_METRIC_CPU = "studies.tasks.run_metric_cpu"  # BERTScore, queue cpu
RUN_METRIC_QUICK = "studies.tasks.run_metric_quick"  # ROUGE, BLEU, chrF…, queue quick
RUN_METRIC_IO = "studies.tasks.run_metric_io"  # runs on a served endpoint, queue io
PROBE_ENDPOINT = "studies.tasks.probe_endpoint"  # what a served endpoint can do, queue io
IMPORT_UPLOAD = "studies.tasks.import_upload"  # queue light
COMPUTE_AGREEMENT = "annotation.tasks.compute_agreement"  # a large campaign's, queue light
COMPUTE_PLANNER = "studies.tasks.compute_planner"  # a sample-size plan, queue light
COMPUTE_DIAGNOSTICS = "studies.tasks.compute_diagnostics"  # a large dataset's, queue light
COMPUTE_CORRELATIONS = "studies.tasks.compute_correlations"  # a matrix, queue light
COMPUTE_REPORT_CARD = "studies.tasks.compute_report_card"  # a judge report card, queue light
WRITE_SNAPSHOT = "studies.tasks.write_snapshot"  # a dataset's columnar snapshot, queue light
GENERATE_STEPS = "studies.tasks.generate_steps"  # G-Eval's evaluation steps, queue gpu
TRAIN_METRIC = "learned.tasks.train_metric"  # full fine-tuning, queue gpu
TRAIN_METRIC_CPU = "learned.tasks.train_metric_cpu"  # a head on frozen features, queue cpu


def send(name: str, *args: object, queue: str | None = None) -> None:
    """Send the task ``name`` with ``args`` now (its queue: ``queue``, else the task routes')."""
    app.send_task(name, args=list(args), **({"queue": queue} if queue else {}))


def send_on_commit(name: str, *args: object, queue: str | None = None) -> None:
    """Send the task once the current transaction commits, so the worker finds its rows."""
    extra = {"queue": queue} if queue else {}
    transaction.on_commit(lambda: send(name, *args, **extra))
