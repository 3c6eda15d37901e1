"""Metric runs: start (freeze the configuration, enqueue on commit), execute (claim,
score document by document, bulk-write, resume where a previous attempt stopped),
cancel and resume. :mod:`.core` holds what every metric shares; each metric is a
:class:`~.types.Runner` (``gptscore``, ``geval``, ``baselines``, and other apps' own),
found by name in :mod:`.registry`. Modules of this package never import it: they
import each other (``types`` and ``model`` are the leaves)."""

from studies.services.runs.batch import BatchReport, read_answers, save_lines, write_requests
from studies.services.runs.core import (
    can_resume,
    cancel_run,
    chunks_by_document,
    enqueue_run,
    execute_run,
    outage,
    resume_run,
    run_lease,
)
from studies.services.runs.geval import derive_variant
from studies.services.runs.gptscore import DIMENSION_ALIASES
from studies.services.runs.model import load_language_model
from studies.services.runs.registry import (
    METRIC_GROUPS,
    METRICS,
    held_out_docs,
    label_of,
    labels_using,
    metric_choices,
    option_help,
    page_of,
    per_aspect,
    per_aspect_metrics,
    queue_for,
    request_of,
    run_options,
)
from studies.services.runs.request import start_requested, start_run, start_runs
from studies.services.runs.state import eta, outcome, phase
from studies.services.runs.types import RunError, Runner, RunRequest

__all__ = [
    "BatchReport",
    "DIMENSION_ALIASES",
    "METRICS",
    "METRIC_GROUPS",
    "RunError",
    "RunRequest",
    "Runner",
    "can_resume",
    "cancel_run",
    "chunks_by_document",
    "derive_variant",
    "enqueue_run",
    "eta",
    "execute_run",
    "held_out_docs",
    "label_of",
    "labels_using",
    "load_language_model",
    "metric_choices",
    "option_help",
    "outage",
    "outcome",
    "page_of",
    "per_aspect",
    "per_aspect_metrics",
    "phase",
    "queue_for",
    "read_answers",
    "request_of",
    "resume_run",
    "run_lease",
    "run_options",
    "save_lines",
    "start_requested",
    "start_run",
    "start_runs",
    "write_requests",
]
