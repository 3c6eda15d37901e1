"""Metric runs: start (freeze the configuration, enqueue on commit), execute (claim,
score document by document, bulk-write, resume where a previous attempt stopped),
cancel and resume. :mod:`.core` holds what every metric shares; ``gptscore``,
``geval`` and ``baselines`` build each metric's configuration and scorer."""

from studies.services.runs.core import (
    CPU_METRICS,
    RunError,
    can_resume,
    cancel_run,
    chunks_by_document,
    enqueue_run,
    eta,
    execute_run,
    outcome,
    phase,
    queue_for,
    resume_run,
    run_lease,
)
from studies.services.runs.geval import derive_variant
from studies.services.runs.gptscore import DIMENSION_ALIASES, load_language_model
from studies.services.runs.request import (
    METRIC_GROUPS,
    METRICS,
    RunRequest,
    start_requested,
    start_run,
    start_runs,
)

__all__ = [
    "CPU_METRICS",
    "DIMENSION_ALIASES",
    "METRICS",
    "METRIC_GROUPS",
    "RunError",
    "RunRequest",
    "can_resume",
    "cancel_run",
    "chunks_by_document",
    "eta",
    "derive_variant",
    "enqueue_run",
    "execute_run",
    "outcome",
    "phase",
    "load_language_model",
    "queue_for",
    "resume_run",
    "start_requested",
    "run_lease",
    "start_run",
    "start_runs",
]
