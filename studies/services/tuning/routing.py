"""Where a tuning job runs and how its runs are told from the others: the part of
:mod:`.job` that the jobs page and the sweeper read (it imports no analysis, so the
pages that import the jobs page's tracking do not import the tuning)."""

from __future__ import annotations

from django.db.models import Q

from studies.models import MetricRun
from studies.services import queue
from studies.services.runs import enqueue_run
from studies.services.runs.registry import queue_for
from studies.services.tuning.registry import tuner as find_tuner

PREFIX = "tuned:"  # a tuned run's metric: tuned:<tuner>
REQUEST = "tuning_request"  # the job's request in its run's config
# the tuning jobs among the runs (a tuned run made before tuning was a job has no request)
JOBS = Q(kind=MetricRun.Kind.IMPORTED, metric__startswith=PREFIX, config__has_key=REQUEST)


def is_tuning_job(run: MetricRun) -> bool:
    """The run is a tuning job's (finished or not)."""
    return run.metric.startswith(PREFIX) and REQUEST in (run.config or {})


def tuning_queue(start: MetricRun, tuner_name: str) -> str:
    """Where a tuning of ``start`` runs: ``light`` for a tuner that prompts no judge
    (calibration), else where the judge is: ``io`` served, ``gpu`` a local model."""
    if not find_tuner(tuner_name).prompts:
        return "light"
    return "io" if start.config.get("endpoint") else "gpu"


def job_queue(run: MetricRun) -> str:
    """The queue of a run's work: a tuning job's, else its metric's."""
    if is_tuning_job(run):
        return str(run.config[REQUEST]["queue"])
    return queue_for(run.metric, run.config)


def enqueue_job(run: MetricRun) -> None:
    """Send a run's task once the transaction commits: a tuning job's, else its metric's."""
    if is_tuning_job(run):
        queue.send_on_commit(queue.TUNE_JUDGE, run.pk, queue=job_queue(run))
    else:
        enqueue_run(run)
