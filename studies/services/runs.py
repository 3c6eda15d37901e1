"""Metric runs: start (freeze the configuration, enqueue on commit), execute (claim,
score document by document, bulk-write, resume where a previous attempt stopped),
cancel and resume.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Avg
from django.utils import timezone

from scoring.lm.base import LanguageModel, Reduction
from scoring.metrics import gptscore
from studies.models import (
    Aspect,
    Dataset,
    Judgment,
    MetricRun,
    MetricScore,
    Output,
    PromptTemplate,
)
from studies.services.models import fingerprint, library_versions, resolve_model

log = logging.getLogger(__name__)
STALE_AFTER = timedelta(minutes=5)  # a RUNNING run without progress this long may be resumed
DIMENSION_ALIASES = {"src-hypo": "src_hypo", "ref-hypo": "ref_hypo", "hypo-ref": "hypo_ref",
                     "avg-f": "avg_f", "avg": "avg_f"}  # fmt: skip


class RunError(ValueError):
    """A run that cannot be started as asked; the message says why."""


@dataclass(frozen=True)
class RunRequest:
    """What a researcher asks for (from the page, the command or the API)."""

    aspect: str
    setting: str = "IST"
    dimension: str = "src_hypo"
    model: str = "default"
    k: int = 0
    seed: int = 0
    reduction: str = "mean"
    reference_aggregation: str = "max"
    batch_size: int = 8
    limit_docs: int | None = None
    variant: str = ""


def _template(
    dataset: Dataset, aspect: Aspect, setting: str, dimension: str, variant: str
) -> PromptTemplate:
    query = PromptTemplate.objects.filter(task=dataset.task, kind=PromptTemplate.Kind.GPTSCORE,
                                          dimension=dimension, variant=variant)  # fmt: skip
    if setting == "VAL":
        found = query.filter(setting="VAL", aspect__isnull=True).first()
    else:
        found = query.filter(setting="IST", aspect=aspect).first()
    if found is None and not variant and dataset.task.code == "dialogue":
        return _template(dataset, aspect, setting, dimension, "turn")
    if found is None:
        raise RunError(f"No GPTScore {setting} template for {dataset.task.code} × {aspect.code} × "
                       f"{dimension}{' (' + variant + ')' if variant else ''}; add one in the admin.")  # fmt: skip
    return found


def _frozen_template(template: PromptTemplate) -> dict[str, Any]:
    version = template.current_version()
    return {"id": template.pk, "version": version.version, "version_id": version.pk,
            "text": version.text, "target": version.target}  # fmt: skip


def start_run(
    dataset: Dataset, request: RunRequest, *, user: Any = None, enqueue: bool = True
) -> MetricRun:
    """Save a PENDING run with its frozen configuration; enqueue it once committed."""
    dimension = DIMENSION_ALIASES.get(request.dimension, request.dimension)
    if dimension not in gptscore.DIMENSIONS:
        raise RunError(
            f"Unknown dimension {request.dimension!r}; use src-hypo, ref-hypo, hypo-ref or avg-f."
        )
    if request.setting not in gptscore.SETTINGS:
        raise RunError(f"Unknown setting {request.setting!r}; use VAL, IST or IDM.")
    if request.setting == "IDM" and request.k < 1:
        raise RunError("IDM needs k ≥ 1 demonstrations.")
    aspect = (
        Aspect.objects.filter(code__iexact=request.aspect).first()
        or Aspect.objects.filter(name__iexact=request.aspect).first()
    )
    if aspect is None:
        raise RunError(f"Unknown aspect {request.aspect!r}.")
    setting_template = "VAL" if request.setting == "VAL" else "IST"
    first_dimension = "ref_hypo" if dimension == "avg_f" else dimension
    template = _template(dataset, aspect, setting_template, first_dimension, request.variant)
    reverse = (
        _template(dataset, aspect, setting_template, "hypo_ref", request.variant)
        if dimension == "avg_f"
        else None
    )
    location, model_label = resolve_model(request.model)
    aspect_version = aspect.current_version()
    config = {
        "metric": "gptscore",
        "model": request.model,
        "model_label": model_label,
        "model_location": location,
        "model_files": fingerprint(location),
        "aspect": aspect.code,
        "aspect_version": aspect_version.version,
        "aspect_definition": aspect_version.definition,
        "task": dataset.task.code,
        "task_description": dataset.task.description,
        "setting": request.setting,
        "dimension": dimension,
        "template": _frozen_template(template),
        "reverse_template": _frozen_template(reverse) if reverse else None,
        "k": request.k if request.setting == "IDM" else 0,
        "seed": request.seed,
        "reduction": request.reduction,
        "reference_aggregation": request.reference_aggregation,
        "batch_size": request.batch_size,
        "limit_docs": request.limit_docs,
        "versions": library_versions(),
    }
    label = f"gptscore:{model_label}:{request.setting}:{dimension}:{aspect.code}"
    with transaction.atomic():
        run = MetricRun.objects.create(
            dataset=dataset, metric="gptscore", label=label, kind=MetricRun.Kind.COMPUTED,
            config=config, aspect_version=aspect_version,
            template_version_id=config["template"]["version_id"], created_by=user,
            total=len(_outputs(dataset, request.limit_docs)),
        )  # fmt: skip
        if enqueue:
            from studies.tasks import run_metric

            transaction.on_commit(lambda: run_metric.delay(run.pk))
    return run


def _outputs(dataset: Dataset, limit_docs: int | None) -> list[Output]:
    outputs = Output.objects.filter(document__dataset=dataset).select_related("document")
    if limit_docs:
        keys = list(
            dataset.documents.order_by("doc_key").values_list("doc_key", flat=True)[:limit_docs]
        )
        outputs = outputs.filter(document__doc_key__in=keys)
    return list(outputs.order_by("document__doc_key", "system_id"))


def _config(run: MetricRun) -> gptscore.GPTScoreConfig:
    c = run.config
    reverse = c.get("reverse_template")
    return gptscore.GPTScoreConfig(
        template=gptscore.Template(c["template"]["text"], c["template"]["target"]),
        reverse=gptscore.Template(reverse["text"], reverse["target"]) if reverse else None,
        dimension=c["dimension"], setting=c["setting"], aspect_definition=c["aspect_definition"],
        task_description=c["task_description"], reduction=Reduction(c["reduction"]),
        reference_aggregation=c["reference_aggregation"], k=c["k"], seed=c["seed"],
    )  # fmt: skip


def _item(output: Output) -> gptscore.Item:
    context = output.document.context
    history = tuple(str(t.get("text", t)) if isinstance(t, dict) else str(t) for t in context) \
        if isinstance(context, list) else ()  # fmt: skip
    return gptscore.Item(key=output.pk, doc_key=output.document.doc_key, source=output.document.source,
                         hypothesis=output.text, references=tuple(output.document.references or ()),
                         history=history)  # fmt: skip


def _demonstration_pool(run: MetricRun, outputs: list[Output]) -> dict[str, gptscore.Demonstration]:
    """One demonstration per document: its best-judged output on the run's aspect
    (the first output where nobody judged), with the document's first reference."""
    means = dict(
        Judgment.objects.filter(output__document__dataset=run.dataset, aspect__code=run.config["aspect"])
        .values("output_id").annotate(mean=Avg("value")).values_list("output_id", "mean")
    )  # fmt: skip
    pool: dict[str, gptscore.Demonstration] = {}
    by_doc: dict[str, list[Output]] = defaultdict(list)
    for output in Output.objects.filter(document__dataset=run.dataset).select_related("document"):
        by_doc[output.document.doc_key].append(output)
    for key, candidates in by_doc.items():
        best = max(candidates, key=lambda o: (means.get(o.pk, float("-inf")), -o.pk))
        refs = best.document.references or [""]
        pool[key] = gptscore.Demonstration(
            source=best.document.source, hypothesis=best.text, reference=refs[0]
        )
    return pool


def load_language_model(run: MetricRun) -> LanguageModel:
    from scoring.lm.hf import HFLanguageModel

    return HFLanguageModel(run.config["model_location"], batch_size=run.config.get("batch_size", 8))


def execute_run(
    run_id: int,
    *,
    model_factory: Callable[[MetricRun], LanguageModel] = load_language_model,
    chunk_outputs: int | None = None,
) -> str:
    """Claim a PENDING run and score what is not scored yet; safe to call twice."""
    now = timezone.now()
    claimed = MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.PENDING).update(
        status=MetricRun.Status.RUNNING, error="", started_at=now
    )
    if not claimed:
        return "not pending"
    run = MetricRun.objects.select_related("dataset").get(pk=run_id)
    try:
        return _score_all(
            run, model_factory, chunk_outputs or settings.CONCORDIA["RUN_CHUNK_OUTPUTS"]
        )
    except Exception as exc:  # the run ends FAILED with its error; finished scores stay
        log.exception("run %s failed", run_id)
        MetricRun.objects.filter(pk=run_id).update(
            status=MetricRun.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        return "failed"


def _score_all(
    run: MetricRun, model_factory: Callable[[MetricRun], LanguageModel], chunk_outputs: int
) -> str:
    outputs = _outputs(run.dataset, run.config.get("limit_docs"))
    scored = set(MetricScore.objects.filter(run=run).values_list("output_id", flat=True))
    todo = [o for o in outputs if o.pk not in scored]
    timings = dict(run.timings or {})
    started = time.perf_counter()
    load_started = time.perf_counter()
    model = model_factory(run)
    timings["model_load_s"] = round(time.perf_counter() - load_started, 3)
    config = _config(run)
    demos: dict[str, list[gptscore.Demonstration]] = {}
    if config.setting == "IDM":
        pool = _demonstration_pool(run, outputs)
        demos = {
            key: gptscore.pick_demonstrations(pool, key, config.k, config.seed)
            for key in {o.document.doc_key for o in todo}
        }
    tokens = int(timings.get("target_tokens", 0))
    prior_seconds = float(timings.get("seconds", 0.0))  # from an earlier attempt, when resumed
    scored_now = 0
    for chunk in _chunks_by_document(todo, chunk_outputs):
        if MetricRun.objects.filter(pk=run.pk, status=MetricRun.Status.CANCELLED).exists():
            return "cancelled"
        items = [_item(o) for o in chunk]
        try:
            results = gptscore.score(model, items, config, demos)
        except Exception as exc:  # a failing document marks its outputs, the others go on
            log.warning("run %s: document %s failed: %s", run.pk, items[0].doc_key, exc)
            results = [
                gptscore.ScoreResult(i.key, None, error=f"{type(exc).__name__}: {exc}")
                for i in items
            ]
        tokens += sum(
            sum(d.get("n_tokens", []))
            for r in results
            for d in r.details.values()
            if isinstance(d, dict)
        )
        scored_now += len(results)
        elapsed = time.perf_counter() - started
        timings.update(seconds=round(prior_seconds + elapsed, 3), target_tokens=tokens,
                       outputs_per_s=round(scored_now / elapsed, 3) if elapsed else None,
                       tokens_per_s=round(tokens / elapsed, 1) if elapsed else None,
                       heartbeat=timezone.now().isoformat())  # fmt: skip
        _write(run, results, timings)
    MetricRun.objects.filter(pk=run.pk, status=MetricRun.Status.RUNNING).update(
        status=MetricRun.Status.SUCCEEDED, finished_at=timezone.now(), timings=timings
    )
    return "succeeded"


def _chunks_by_document(outputs: list[Output], size: int) -> list[list[Output]]:
    """Whole documents per chunk (their outputs share a prompt prefix), about ``size`` outputs."""
    chunks: list[list[Output]] = []
    current: list[Output] = []
    for output in outputs:
        if current and len(current) >= size and current[-1].document_id != output.document_id:
            chunks.append(current)
            current = []
        current.append(output)
    if current:
        chunks.append(current)
    return chunks


def _write(run: MetricRun, results: list[gptscore.ScoreResult], timings: dict[str, Any]) -> None:
    rows = [
        MetricScore(run=run, output_id=r.key, value=r.value, details=r.details, error=r.error or "")
        if r.value is not None else MetricScore(run=run, output_id=r.key, error=r.error or "not scored")
        for r in results
    ]  # fmt: skip
    with transaction.atomic():
        MetricScore.objects.bulk_create(rows, ignore_conflicts=True)  # unique (run, output)
        done = MetricScore.objects.filter(run=run).count()
        MetricRun.objects.filter(pk=run.pk).update(done=done, timings=timings)
        run.dataset.bump_data_version()


def cancel_run(run: MetricRun) -> bool:
    """Ask a pending or running run to stop after its current chunk."""
    return bool(MetricRun.objects.filter(
        pk=run.pk, status__in=[MetricRun.Status.PENDING, MetricRun.Status.RUNNING]
    ).update(status=MetricRun.Status.CANCELLED, finished_at=timezone.now()))  # fmt: skip


def can_resume(run: MetricRun) -> bool:
    if (
        run.kind != MetricRun.Kind.COMPUTED
        or run.status == MetricRun.Status.SUCCEEDED
        and run.done >= run.total
    ):
        return False
    if run.status == MetricRun.Status.RUNNING:
        beat = (run.timings or {}).get("heartbeat")
        last = timezone.datetime.fromisoformat(beat) if beat else run.started_at
        return last is None or timezone.now() - last > STALE_AFTER
    return run.status in (MetricRun.Status.FAILED, MetricRun.Status.CANCELLED)


def resume_run(run: MetricRun, *, force: bool = False, enqueue: bool = True) -> bool:
    """Put a failed, cancelled or stalled run back to PENDING; its scores are kept."""
    if not (force or can_resume(run)):
        return False
    with transaction.atomic():
        MetricRun.objects.filter(pk=run.pk).update(
            status=MetricRun.Status.PENDING, finished_at=None, error=""
        )
        if enqueue:
            from studies.tasks import run_metric

            transaction.on_commit(lambda: run_metric.delay(run.pk))
    return True
