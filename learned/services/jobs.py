"""Training jobs: validate and freeze a request into a PENDING :class:`TrainedMetric`
(enqueued on commit), cancel, and resume after a worker died."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from learned.models import TrainedMetric
from learned.services.data import TrainingError, load_task, tasks_for
from scoring.learned.backbone import Backbone, BackboneError
from scoring.learned.pairs import DEFAULT_MARGIN
from scoring.learned.split import DEFAULT_RATIOS, pairs_in, split_documents
from scoring.learned.train import TrainConfig
from studies.services.lookup import DatasetNotFound, find_dataset
from studies.services.models import fingerprint, library_versions, resolve_encoder, resolve_model
from studies.services.runs.core import RunError
from studies.services.runs.request import find_aspect

STALE_AFTER = timedelta(minutes=5)  # a RUNNING job without a heartbeat this long may resume
MIN_PAIRS = {"train": 8, "validation": 1, "test": 1}
HEAD_DEFAULTS = TrainConfig()
FULL_DEFAULTS = TrainConfig(learning_rate=2e-5, weight_decay=0.0, batch_size=4, accumulate=4,
                            epochs=3, patience=1)  # fmt: skip


@dataclass(frozen=True)
class TrainingRequest:
    """What a researcher asks for (command, page or API)."""

    dataset: str
    aspect: str
    setup: str = "single"
    datasets: tuple[str, ...] = ()
    backbone: str = "default"
    mode: str = "head"
    pooling: str = ""  # empty: last token for decoders, mean for encoders
    hidden: int = 0  # head: 0 = linear, n = an MLP with n hidden units
    margin: float = DEFAULT_MARGIN
    ratios: tuple[float, float, float] = DEFAULT_RATIOS
    seed: int = 0
    max_minutes: float | None = None
    exclude_flagged: bool = False
    learning_rate: float | None = None
    epochs: int | None = None
    patience: int | None = None
    batch_size: int | None = None
    accumulate: int | None = None
    max_length: int | None = None
    layer: int | None = None  # features of the first N blocks (None: every block)


def resolve_backbone(name: str) -> tuple[str, str]:
    """(location, label): ``default`` is SmolLM2-135M-Instruct, ``minilm`` the encoder."""
    if name in ("minilm", "encoder"):
        return resolve_encoder("default")
    return resolve_model(name)


def _hyperparameters(request: TrainingRequest) -> TrainConfig:
    base = FULL_DEFAULTS if request.mode == "full" else HEAD_DEFAULTS
    asked = {
        "learning_rate": request.learning_rate, "epochs": request.epochs,
        "patience": request.patience, "batch_size": request.batch_size,
        "accumulate": request.accumulate,
    }  # fmt: skip
    config = replace(base, seed=request.seed, **{k: v for k, v in asked.items() if v is not None})
    if request.max_minutes is not None:
        config = replace(config, max_seconds=request.max_minutes * 60)
    return config


def plan(request: TrainingRequest) -> dict[str, Any]:
    """Validate everything and compute the frozen configuration, split and pair counts;
    raises :class:`TrainingError` (or :class:`BackboneError`) and writes nothing."""
    if request.mode not in ("head", "full"):
        raise TrainingError(f"Unknown mode {request.mode!r}; use head or full.")
    # names are unique per owner: the commands' lookup (id, owner/name or an unambiguous
    # name), and the aspects a run on the dataset may use (shared ones and its owner's)
    try:
        dataset = find_dataset(request.dataset)
        others = []
        for name in request.datasets:
            try:
                others.append(find_dataset(name))
            except DatasetNotFound as exc:
                raise TrainingError(f"{exc} (in --datasets)") from exc
        aspect = find_aspect(request.aspect, dataset)
    except (DatasetNotFound, RunError) as exc:
        raise TrainingError(str(exc)) from exc
    training, target = tasks_for(request.setup, dataset, aspect, others)
    data = {t.key: load_task(t, margin=request.margin, exclude_flagged=request.exclude_flagged)
            for t in dict.fromkeys([*training, target])}  # fmt: skip
    if not data[target.key].pairs and data[target.key].counts.candidates == 0:
        raise TrainingError(
            f"The aspect {aspect.code} has no judgments on {dataset.name}: nothing to train or test on."
        )
    docs = {d for t in data.values() for d in t.docs}
    try:
        split = split_documents(docs, seed=request.seed, ratios=request.ratios)
    except ValueError as exc:
        raise TrainingError(str(exc)) from exc
    train_pairs = [p for t in training for p in pairs_in(data[t.key].pairs, split.train)]
    validation = [p for t in training for p in pairs_in(data[t.key].pairs, split.validation)]
    test = pairs_in(data[target.key].pairs, split.test)
    counts = {"train": len(train_pairs), "validation": len(validation), "test": len(test)}
    for name, minimum in MIN_PAIRS.items():
        if counts[name] < minimum:
            why = "; ".join(f"{k}: {d.counts.explain(request.margin)}" for k, d in data.items())
            raise TrainingError(
                f"Too few preference pairs: {counts[name]} {name} pairs, at least {minimum} "
                f"needed ({counts['train']} train, {counts['validation']} validation, "
                f"{counts['test']} test). {why}. Lower --margin or judge more outputs."
            )
    location, label = resolve_backbone(request.backbone)
    try:
        probe = Backbone(location, pooling=request.pooling or None, max_length=request.max_length,
                         layer=request.layer)  # fmt: skip
    except BackboneError as exc:
        raise TrainingError(str(exc)) from exc
    hyper = _hyperparameters(request)
    by_dataset: dict[str, dict[str, list[str]]] = {}
    for part, keys in split.as_dict().items():
        for key in keys:
            name, doc_key = key.split("/", 1)
            by_dataset.setdefault(name, {"train": [], "validation": [], "test": []})[part].append(
                doc_key
            )
    config = {
        "setup": request.setup, "mode": request.mode, "target": target.frozen(),
        "target_dataset": dataset.name, "tasks": [t.frozen() for t in training],
        "backbone": {"asked": request.backbone, "label": label, "location": location,
                     "files": fingerprint(location), "pooling": probe.pooling,
                     "decoder": probe.is_decoder, "dim": probe.dim, "max_length": probe.max_length,
                     "layer": probe.layer, "layers": probe.n_layers},
        "head": {"kind": f"mlp-{request.hidden}" if request.hidden else "linear",
                 "hidden": request.hidden},
        "hyperparameters": hyper.as_dict(), "seed": request.seed, "margin": request.margin,
        "ratios": list(request.ratios), "exclude_flagged": request.exclude_flagged,
        "input_format": "<instruction>\\n\\n<context>\\n\\n<answer>; the context is shortened to fit",
        "versions": library_versions(),
        "folder": uuid.uuid4().hex,  # its checkpoints' folder: ids can repeat in a rebuilt database
    }  # fmt: skip
    pairs = {**counts, "per_task": {k: vars(d.counts) for k, d in data.items()}}
    return {"dataset": dataset, "aspect": aspect, "config": config, "split": by_dataset,
            "pairs": pairs, "label": f"learned:{label}:{request.setup}:{request.mode}:{aspect.code}"}  # fmt: skip


def create_job(
    request: TrainingRequest, *, user: Any = None, enqueue: bool = True
) -> TrainedMetric:
    """Validate, freeze and save a PENDING job; enqueue it once committed."""
    planned = plan(request)
    with transaction.atomic():
        job = TrainedMetric.objects.create(
            label=planned["label"], dataset=planned["dataset"], aspect=planned["aspect"],
            setup=request.setup, mode=request.mode, config=planned["config"],
            split=planned["split"], pairs=planned["pairs"], created_by=user,
        )  # fmt: skip
        if enqueue:
            enqueue_job(job)
    return job


def queue_of(job: TrainedMetric) -> str:
    """Full fine-tuning needs a GPU worker; a head trains on the ``cpu`` queue."""
    return "gpu" if job.mode == TrainedMetric.Mode.FULL else "cpu"


def enqueue_job(job: TrainedMetric) -> None:
    """Send the job's task by name once the transaction commits (no import of tasks)."""
    from celery import current_app

    name = (
        "learned.tasks.train_metric" if queue_of(job) == "gpu" else "learned.tasks.train_metric_cpu"
    )
    transaction.on_commit(lambda: current_app.send_task(name, args=[job.pk], queue=queue_of(job)))


def cancel_job(job: TrainedMetric) -> bool:
    """Ask a pending or running job to stop (after its current epoch or chunk)."""
    return bool(TrainedMetric.objects.filter(
        pk=job.pk, status__in=[TrainedMetric.Status.PENDING, TrainedMetric.Status.RUNNING]
    ).update(status=TrainedMetric.Status.CANCELLED, finished_at=timezone.now()))  # fmt: skip


def can_resume(job: TrainedMetric) -> bool:
    """Failed and cancelled jobs, and running ones whose worker stopped beating."""
    if job.status == TrainedMetric.Status.RUNNING:
        beat = (job.progress or {}).get("heartbeat")
        last = timezone.datetime.fromisoformat(beat) if beat else job.started_at
        return last is None or timezone.now() - last > STALE_AFTER
    return job.status in (TrainedMetric.Status.FAILED, TrainedMetric.Status.CANCELLED)


def resume_job(job: TrainedMetric, *, force: bool = False, enqueue: bool = True) -> bool:
    """Put the job back to PENDING; it goes on from its last checkpoint."""
    if job.status == TrainedMetric.Status.SUCCEEDED or not (force or can_resume(job)):
        return False
    with transaction.atomic():
        TrainedMetric.objects.filter(pk=job.pk).update(
            status=TrainedMetric.Status.PENDING, finished_at=None, error=""
        )
        if enqueue:
            enqueue_job(job)
    return True
