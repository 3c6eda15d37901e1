"""The one way services enqueue work: a task sent by its name once the transaction commits.

Services never import ``studies.tasks`` (tasks import services; the arrow points one way),
so a task is named here and routed to its queue by ``CELERY_TASK_ROUTES``.

A message sent on commit follows work that is already committed (a run that finished, an
import, a run saved PENDING), so a broker that does not answer at that moment must not
undo or fail that work: the send is logged and the message kept as an
:class:`~studies.models.UnsentTask`, which the sweeper sends again
(:func:`resend_unsent`) once the broker answers. Every task is safe to receive twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import DatabaseError, transaction
from django.db.models import F

from evalsite.celery import app
from studies.models import UnsentTask

log = logging.getLogger(__name__)

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
TUNE_JUDGE = "studies.tasks.tune_judge"  # a tuning job: light, gpu or io (the job says)
TRAIN_METRIC = "learned.tasks.train_metric"  # full fine-tuning, queue gpu
TRAIN_METRIC_CPU = "learned.tasks.train_metric_cpu"  # a head on frozen features, queue cpu
RESEND_BATCH = 500  # unsent messages one sweep sends again at most


def send(
    name: str, *args: object, queue: str | None = None, countdown: float | None = None
) -> None:
    """Send the task ``name`` with ``args`` now (its queue: ``queue``, else the task
    routes'), to start ``countdown`` seconds from now when given."""
    extra: dict[str, object] = {"queue": queue} if queue else {}
    if countdown:
        extra["countdown"] = countdown
    app.send_task(name, args=list(args), **extra)


def send_on_commit(name: str, *args: object, queue: str | None = None) -> None:
    """Send the task once the current transaction commits, so the worker finds its rows;
    kept for the sweeper when the broker does not take it then (see the module)."""
    transaction.on_commit(lambda: send_or_keep(name, args, queue))


def send_or_keep(name: str, args: Sequence[object], queue: str | None = None) -> bool:
    """Send the task now; when the broker refuses, log it and keep the message for the
    sweeper instead of raising. True when it was sent."""
    try:
        send(name, *args, **({"queue": queue} if queue else {}))
    except Exception as exc:  # kombu's OperationalError, a socket error, a timeout
        log.warning("could not send %s%s (%s); kept for the sweeper", name, tuple(args), exc)
        try:
            UnsentTask.objects.create(
                name=name, args=list(args), queue=queue or "", error=f"{exc}"[:2000]
            )
        except DatabaseError:
            log.exception("could not keep the unsent task %s%s either", name, tuple(args))
        return False
    return True


def resend_unsent(limit: int = RESEND_BATCH) -> int:
    """Send again the messages kept by :func:`send_or_keep`, oldest first, until one fails
    (the broker is still away: the next sweep tries again). Returns how many were sent."""
    sent = 0
    for kept in UnsentTask.objects.order_by("pk")[:limit]:
        try:
            send(kept.name, *kept.args, **({"queue": kept.queue} if kept.queue else {}))
        except Exception as exc:
            UnsentTask.objects.filter(pk=kept.pk).update(
                attempts=F("attempts") + 1, error=f"{exc}"[:2000]
            )
            log.warning("unsent task %s still not sent: %s", kept, exc)
            break
        # another sweeper may have sent it too: harmless, every task is idempotent
        sent += UnsentTask.objects.filter(pk=kept.pk).delete()[0]
    return sent
