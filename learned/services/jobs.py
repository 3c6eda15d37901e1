"""Training jobs: validate and freeze a request into a PENDING :class:`TrainedMetric`
(enqueued on commit), cancel, and resume after a worker died."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from learned.models import TrainedMetric
from learned.services.data import TrainingError, load_task, tasks_for
from scoring.learned.backbone import POOLINGS as POOLINGS  # the choices, for the command
from scoring.learned.backbone import BackboneError, BackboneInfo, LayerError, describe_backbone
from scoring.learned.config import TrainConfig
from scoring.learned.pairs import DEFAULT_MARGIN
from scoring.learned.split import DEFAULT_RATIOS, pairs_in, split_documents
from scoring.lm.encoder import DEFAULT_ENCODER_LABEL
from scoring.lm.store import ModelNotInstalled
from studies.models import AllowedModel, Dataset
from studies.permissions import visible_datasets
from studies.services import queue
from studies.services.catalog.model_catalog import (
    DEFAULT_DIR_NAME,
    DEFAULT_LABEL,
    check_model,
    default_encoder_path,
    fingerprint,
    installed_models,
    library_versions,
    resolve_encoder,
    resolve_model,
)
from studies.services.lookup import DatasetNotFound, find_dataset
from studies.services.runs.aspects import find_aspect
from studies.services.runs.types import RunError

STALE_AFTER = timedelta(minutes=5)  # a RUNNING job without a heartbeat this long may resume
MIN_PAIRS = {"train": 8, "validation": 1, "test": 1}
HEAD_DEFAULTS = TrainConfig()
FULL_DEFAULTS = TrainConfig(
    learning_rate=2e-5, weight_decay=0.0, batch_size=4, accumulate=4, epochs=3, patience=1
)
ENCODER_NAMES = ("minilm", "encoder")  # the default BERTScore encoder as a backbone


@dataclass(frozen=True)
class TrainingRequest:
    """What a researcher asks for (command, page or API)."""

    dataset: str
    aspect: str
    setup: str = "single"
    datasets: tuple[str, ...] = ()
    backbone: str = "default"
    mode: str = "head"
    pooling: str = ""  # empty: last token + answer mean for decoders, mean for encoders
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
    layer: int | None = None  # features of the first N blocks (None: default_layer)


def resolve_backbone(name: str) -> tuple[str, str]:
    """(location, label): ``default`` is SmolLM2-135M-Instruct, ``minilm`` the encoder."""
    if name in ENCODER_NAMES:
        return resolve_encoder("default")
    return resolve_model(name)


HEAD_LAYER_SHARE = 0.4  # a frozen decoder's features are taken 40% of the way up


def default_layer(probe: BackboneInfo, mode: str) -> int | None:
    """The blocks a job uses when none were asked for: every block for an encoder or a
    full fine-tuning; for a frozen decoder (head mode), the first 40% of its blocks. On
    the default model (12 of 30 blocks) that is both better and 2.5x cheaper than the
    last layer: intermediate states of a small decoder carry more of what a linear head
    can read than the last one, which is shaped for predicting the next token (measured
    in bench/learned_metric.py; see the README)."""
    if not probe.n_layers:
        return None  # the configuration does not say: every block
    if mode == "full" or not probe.is_decoder:
        return probe.n_layers
    return max(1, round(HEAD_LAYER_SHARE * probe.n_layers))


def backbone_choices() -> list[tuple[str, str]]:
    """The backbones a web request may use (the run form's rule for models): the default
    model, the default encoder, the other installed models and the hub ids an admin
    allowed."""
    hidden = {DEFAULT_DIR_NAME, default_encoder_path().name}  # listed as default / minilm
    return [
        ("default", f"{DEFAULT_LABEL} (the default; decoder, 30 blocks)"),
        ("minilm", f"{DEFAULT_ENCODER_LABEL} (encoder, 6 blocks)"),
        *((name, f"{name} (installed)") for name in installed_models() if name not in hidden),
        *(
            (hub, f"{hub} (hub id allowed by an admin)")
            for hub in AllowedModel.objects.values_list("hub_id", flat=True)
        ),
    ]


def visible_jobs(user: Any) -> QuerySet[TrainedMetric]:
    """Training jobs of the datasets the user may see (the pages' and the API's rule)."""
    return TrainedMetric.objects.filter(dataset__in=visible_datasets(user)).select_related(
        "dataset", "aspect"
    )


def _hyperparameters(request: TrainingRequest) -> TrainConfig:
    base = FULL_DEFAULTS if request.mode == "full" else HEAD_DEFAULTS
    asked = {
        "learning_rate": request.learning_rate,
        "epochs": request.epochs,
        "patience": request.patience,
        "batch_size": request.batch_size,
        "accumulate": request.accumulate,
    }
    config = replace(base, seed=request.seed, **{k: v for k, v in asked.items() if v is not None})
    if request.max_minutes is not None:
        config = replace(config, max_seconds=request.max_minutes * 60)
    return config


def _find_dataset(ref: str, user: Any, field: str) -> Dataset:
    """The command's lookup (an id, owner/name or an unambiguous name); a user (a web
    request) finds only the datasets they may see, and others as not found."""
    try:
        dataset = find_dataset(ref)
    except DatasetNotFound as exc:
        raise TrainingError(str(exc), field=field) from exc
    if user is not None and not visible_datasets(user).filter(pk=dataset.pk).exists():
        raise TrainingError(f"no dataset {ref[:200]!r}", field=field)
    return dataset


def check_backbone(name: str, *, local_paths: bool = False) -> None:
    """The run form's rule for models (:func:`check_model`), plus ``minilm``; raises
    :class:`TrainingError` naming the backbone."""
    if name in ENCODER_NAMES:
        return
    try:
        check_model(name, local_paths=local_paths)
    except ModelNotInstalled as exc:
        raise TrainingError(str(exc), field="backbone") from exc


def plan(
    request: TrainingRequest, *, user: Any = None, local_paths: bool = False
) -> dict[str, Any]:
    """Validate everything and compute the frozen configuration, split and pair counts;
    raises :class:`TrainingError` (its ``field`` names the culprit) and writes nothing.

    ``user`` (a web request) may use only the datasets they see; ``local_paths`` (the
    operator's shell, never a web request) lets the backbone be any local path or hub id.
    The backbone is described from its configuration files (fast: a page waits for
    this); the worker loads its weights and fails the job if they cannot be loaded."""
    if request.mode not in ("head", "full"):
        raise TrainingError(f"Unknown mode {request.mode!r}; use head or full.", field="mode")
    check_backbone(request.backbone, local_paths=local_paths)
    # names are unique per owner: the commands' lookup (id, owner/name or an unambiguous
    # name), and the aspects a run on the dataset may use (shared ones and its owner's)
    dataset = _find_dataset(request.dataset, user, "dataset")
    others = []
    for name in request.datasets:
        try:
            others.append(_find_dataset(name, user, "datasets"))
        except TrainingError as exc:
            raise TrainingError(f"{exc} (in the extra datasets)", field="datasets") from exc
    try:
        aspect = find_aspect(request.aspect, dataset)
    except RunError as exc:
        raise TrainingError(str(exc), field="aspect") from exc
    training, target = tasks_for(request.setup, dataset, aspect, others)
    data = {
        t.key: load_task(t, margin=request.margin, exclude_flagged=request.exclude_flagged)
        for t in dict.fromkeys([*training, target])
    }
    if not data[target.key].pairs and data[target.key].counts.candidates == 0:
        raise TrainingError(
            f"The aspect {aspect.code} has no judgments on {dataset.name}: nothing to train or test on.",
            field="aspect",
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
                f"{counts['test']} test). {why}. Lower the margin or judge more outputs."
            )
    try:
        location, label = resolve_backbone(request.backbone)
        probe = describe_backbone(
            location,
            pooling=request.pooling or None,
            max_length=request.max_length,
            layer=request.layer,
        )
    except LayerError as exc:
        raise TrainingError(str(exc), field="layer") from exc
    except (BackboneError, ModelNotInstalled) as exc:
        raise TrainingError(str(exc), field="backbone") from exc
    hyper = _hyperparameters(request)
    by_dataset: dict[str, dict[str, list[str]]] = {}
    for part, keys in split.as_dict().items():
        for key in keys:
            name, doc_key = key.split("/", 1)
            by_dataset.setdefault(name, {"train": [], "validation": [], "test": []})[part].append(
                doc_key
            )
    config = {
        "setup": request.setup,
        "mode": request.mode,
        "target": target.frozen(),
        "target_dataset": dataset.name,
        "tasks": [t.frozen() for t in training],
        "backbone": {
            "asked": request.backbone,
            "label": label,
            "location": location,
            "files": fingerprint(location),
            "pooling": probe.pooling,
            "decoder": probe.is_decoder,
            "dim": probe.dim,
            "feature_dim": probe.feature_dim,
            "max_length": probe.max_length,
            "layer": request.layer or default_layer(probe, request.mode),
            "layers": probe.n_layers,
        },
        "head": {
            "kind": f"mlp-{request.hidden}" if request.hidden else "linear",
            "hidden": request.hidden,
        },
        "hyperparameters": hyper.as_dict(),
        "seed": request.seed,
        "margin": request.margin,
        "ratios": list(request.ratios),
        "exclude_flagged": request.exclude_flagged,
        "input_format": "<instruction>\\n\\n<context>\\n\\n<answer>; the context is shortened to fit",
        "versions": library_versions(),
        "folder": uuid.uuid4().hex,  # its checkpoints' folder: ids can repeat in a rebuilt database
    }
    pairs = {**counts, "per_task": {k: vars(d.counts) for k, d in data.items()}}
    return {
        "dataset": dataset,
        "aspect": aspect,
        "config": config,
        "split": by_dataset,
        "pairs": pairs,
        "label": f"learned:{label}:{request.setup}:{request.mode}:{aspect.code}",
    }


def create_job(
    request: TrainingRequest, *, user: Any = None, enqueue: bool = True, local_paths: bool = False
) -> TrainedMetric:
    """Validate, freeze and save a PENDING job; enqueue it once committed. ``user`` also
    limits the datasets to those they may see (see :func:`plan`)."""
    planned = plan(request, user=user, local_paths=local_paths)
    with transaction.atomic():
        job = TrainedMetric.objects.create(
            label=planned["label"],
            dataset=planned["dataset"],
            aspect=planned["aspect"],
            setup=request.setup,
            mode=request.mode,
            config=planned["config"],
            split=planned["split"],
            pairs=planned["pairs"],
            created_by=user,
        )
        if enqueue:
            enqueue_job(job)
    return job


def queue_of(job: TrainedMetric) -> str:
    """Full fine-tuning needs a GPU worker; a head trains on the ``cpu`` queue."""
    return "gpu" if job.mode == TrainedMetric.Mode.FULL else "cpu"


def enqueue_job(job: TrainedMetric) -> None:
    """Send the job's task by name once the transaction commits (no import of tasks)."""
    name = queue.TRAIN_METRIC if queue_of(job) == "gpu" else queue.TRAIN_METRIC_CPU
    queue.send_on_commit(name, job.pk, queue=queue_of(job))


def cancel_job(job: TrainedMetric) -> bool:
    """Ask a pending or running job to stop (after its current epoch or chunk)."""
    return bool(
        TrainedMetric.objects.filter(
            pk=job.pk, status__in=[TrainedMetric.Status.PENDING, TrainedMetric.Status.RUNNING]
        ).update(status=TrainedMetric.Status.CANCELLED, finished_at=timezone.now())
    )


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
