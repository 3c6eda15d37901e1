"""Batch runs by file: a served run's requests written as a request file in a batch
format (:mod:`scoring.lm.served.batch`), answered by a batch processor (a provider's
batch job, ``vllm run-batch``), and the output file read back into the run.

Each step scores what it can with a :class:`~scoring.lm.served.batch.BatchClient` in
place of the endpoint's client, through the metric's own runner (the same prompts, the
same request bodies, the same reading of the answers as online): an output whose
requests are all answered is stored as a score, the others stay unscored. The answers
read are kept in the response cache (under the keys the online path reads), so a later
step, or an online Resume, never asks for them again. While requests are outstanding
the run is WAITING (for batch answers: no worker takes it, the sweeper leaves it alone,
its page, the API and the jobs page say what it waits for); the step that answers the
last of them ends it SUCCEEDED. A G-Eval label outside the top-k candidates
asks for exact label scores after its first answers: such requests come in a next
request file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scoring.lm.served import ServedModel
from scoring.lm.served.batch import (
    AWAITING,
    AwaitingBatch,
    BatchClient,
    batch_format,
    read_results,
)
from scoring.metrics.base import ScoreResult
from studies.models import MetricRun, MetricScore
from studies.services import queue
from studies.services.catalog import endpoints
from studies.services.runs.core import chunks_by_document, item_of, outputs_of, storable
from studies.services.runs.model import record_engine
from studies.services.runs.registry import runner
from studies.services.runs.served import endpoint_of, settle_probe
from studies.services.runs.types import RunError

DEFAULT_FORMAT = "openai-batch"
SHOWN = 20  # custom_ids named in a summary, per kind


@dataclass
class BatchReport:
    """What a batch step did: outputs scored now and in all, the requests still
    outstanding (written to the request file when one was asked for), and, of those
    the last request file asked for, the ones the results file lacked (``missing``) or
    held unusable (``failed``: why), by ``custom_id``; ``refused``: the requests it
    answered with a refusal for good (a prompt past the context: that output's error, as
    online)."""

    run_id: int
    status: str
    scored: int
    done: int
    total: int
    outstanding: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # answered for good with a refusal
    unreadable: list[int] = field(default_factory=list)  # line numbers with no custom_id
    written: int = 0  # requests in the request file written
    lines: list[str] = field(default_factory=list, repr=False)  # the request file's lines

    def summary(self) -> str:
        lines = [
            f"run {self.run_id}: {self.status}; {self.scored} outputs scored now, "
            f"{self.done}/{self.total} in all; {len(self.outstanding)} requests outstanding"
        ]
        if self.missing:
            lines.append(f"{len(self.missing)} missing from the results: {_ids(self.missing)}")
        if self.failed:
            shown = [f"{k} ({why})" for k, why in sorted(self.failed.items())]
            lines.append(f"{len(self.failed)} failed: {_ids(shown)}")
        if self.refused:
            lines.append(
                f"{len(self.refused)} refused (the outputs' errors, as online): "
                f"{_ids(self.refused)}"
            )
        if self.unreadable:
            lines.append(f"lines with no readable custom_id: {self.unreadable[:SHOWN]}")
        if self.written:
            lines.append(f"{self.written} requests written to the request file")
        return "\n".join(lines)


def write_requests(run: MetricRun, fmt: str = DEFAULT_FORMAT) -> BatchReport:
    """The requests a served run still needs, as request lines in the batch format
    ``fmt`` (``report.lines``); the run waits for their answers."""
    return _step(run, None, True, fmt)


def read_answers(
    run: MetricRun, results: Iterable[str], *, write: bool = False, fmt: str | None = None
) -> BatchReport:
    """Read a results file's lines into the run; with ``write``, the requests still
    outstanding (the missing, the failed, and those the answers lead to) as the next
    request file's lines (``report.lines``)."""
    return _step(run, results, write, fmt)


def save_lines(path: Path, lines: list[str]) -> None:
    """A request file of ``lines``."""
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _step(run: MetricRun, lines: Iterable[str] | None, write: bool, fmt: str | None) -> BatchReport:
    if not run.config.get("endpoint"):
        raise RunError(f"run {run.pk} scores with a local model: a batch file is for served runs")
    if run.status in (MetricRun.Status.RUNNING, MetricRun.Status.SUCCEEDED):
        raise RunError(f"run {run.pk} is {run.status}: a batch step needs a waiting run")
    state = dict((run.provenance or {}).get("batch") or {})
    name = fmt or str(state.get("format") or DEFAULT_FORMAT)
    try:
        wire = batch_format(name)
    except ValueError as exc:
        raise RunError(str(exc)) from exc
    results = read_results(lines, wire) if lines is not None else None
    found = runner(run.metric)
    if found is None or found.served is None:
        raise RunError(f"the metric {run.metric!r} runs on no endpoint")
    settle_probe(run, found.served)
    endpoint = endpoint_of(run)
    capabilities = endpoints.stored_capabilities(endpoint)
    if capabilities is None:
        try:
            capabilities = endpoints.probe_endpoint(endpoint)
        except endpoints.EndpointProblem as exc:
            raise RunError(str(exc)) from exc
    spec = endpoints.spec_of(
        endpoint,
        model_version=str(run.config.get("model_version") or ""),
        data_owner=run.dataset.owner_id,
    )
    client = BatchClient(
        spec,
        answers=results.answers if results else None,
        refused=results.refused if results else None,
        cache=endpoints.DatabaseCache(),
    )
    model = ServedModel(client, capabilities=capabilities)
    provenance = {k: v for k, v in model.provenance().items() if k != "usage"}
    record_engine(run, {**provenance, "batch_format": name})
    outputs = outputs_of(run.dataset, run.config.get("limit_docs"), run.config.get("doc_keys"))
    stored = set(MetricScore.objects.filter(run=run).values_list("output_id", flat=True))
    todo = [o for o in outputs if o.pk not in stored]
    scored = 0
    try:
        scorer = found.prepare(run, todo, lambda _run: model)
    except AwaitingBatch:
        pass  # the run's own requests first (G-Eval's steps): nothing to score yet
    else:
        for chunk in chunks_by_document(todo, 1):
            kept = [r for r in scorer([item_of(o) for o in chunk]) if not _waiting(r)]
            scored += _write(run, kept)
    asked = set(state.get("requested") or [])
    outstanding = sorted(client.pending)
    report = BatchReport(run.pk, "", scored, 0, run.total, outstanding)
    if results is not None:
        report.failed = {k: v for k, v in results.failed.items() if k in client.pending}
        report.missing = [k for k in outstanding if k in asked and k not in results.failed]
        report.unreadable = results.unreadable
        report.refused = sorted(results.refused)
    if write:
        report.lines = client.request_lines(wire)
        report.written = len(report.lines)
        asked = set(outstanding)
    state.update(
        format=name, requested=sorted(asked & set(outstanding)), outstanding=len(outstanding)
    )
    report.status, report.done = _settle(run, state, report)
    return report


def _waiting(result: ScoreResult) -> bool:
    return result.value is None and AWAITING in (result.error or "")


def _write(run: MetricRun, results: list[ScoreResult]) -> int:
    """Store a document's finished scores (unique per run and output)."""
    rows = []
    for result in map(storable, results):
        value = result.value
        error = result.error or ("" if value is not None else "not scored")
        rows.append(
            MetricScore(
                run=run, output_id=result.key, value=value, details=result.details, error=error
            )
        )
    with transaction.atomic():
        made = MetricScore.objects.bulk_create(rows, ignore_conflicts=True)
    return len(made)


def _settle(run: MetricRun, state: dict[str, object], report: BatchReport) -> tuple[str, int]:
    """The run's status after a step: WAITING while requests are outstanding (their
    number kept in the run's batch state, which its ``outcome`` says; a Resume would score the rest
    online); else ended as an online run
    ends: SUCCEEDED, or FAILED when more than ``RUN_MAX_ERROR_SHARE`` of its outputs got
    no score (Resume scores them again)."""
    rows = MetricScore.objects.filter(run=run)
    done = rows.count()
    provenance = {**(run.provenance or {}), "batch": state}
    fields: dict[str, object] = {"done": done, "provenance": provenance}
    n_failed = rows.filter(value__isnull=True).count()
    share = float(settings.CONCORDIA["RUN_MAX_ERROR_SHARE"])
    if report.outstanding:  # no worker takes it, the sweeper leaves it alone
        fields.update(status=MetricRun.Status.WAITING, error="", finished_at=None)
    elif done and n_failed > share * done:
        first = str(
            rows.filter(value__isnull=True).order_by("pk").values_list("error", flat=True)[0]
        )
        fields.update(
            status=MetricRun.Status.FAILED,
            error=(
                f"{n_failed} of {done} outputs got no score (more than {share:.0%}); the first "
                f"error: {first[:300]}. The {done - n_failed} scores are kept; Resume scores the "
                "failed outputs again."
            ),
            finished_at=timezone.now(),
        )
    else:
        fields.update(status=MetricRun.Status.SUCCEEDED, error="", finished_at=timezone.now())
    MetricRun.objects.filter(pk=run.pk).update(**fields)
    run.refresh_from_db()
    run.dataset.bump_data_version()
    if not report.outstanding:  # ended: its columnar snapshot, as any run's
        queue.send_on_commit(queue.WRITE_SNAPSHOT, run.dataset_id)
    return str(run.status), done


def _ids(ids: list[str]) -> str:
    more = f" … and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more
