"""Executing a training job: claim it, compute (or read cached) features, train with a
checkpoint after every epoch, evaluate Base and trained on the test documents, and
store the final checkpoint with its sha256. A job whose worker died goes on from its
last checkpoint."""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from learned.models import TrainedMetric
from learned.services.data import Task, TaskData, load_task, outputs_by_id
from scoring.learned.backbone import Backbone, BackboneError, BackboneInfo
from scoring.learned.cache import FeatureCache
from scoring.learned.checkpoint import load_checkpoint, save_checkpoint
from scoring.learned.evaluate import pairwise_accuracy, sample_spearman
from scoring.learned.head import RewardHead
from scoring.learned.inputs import Formatted, format_input
from scoring.learned.pairs import Pair
from scoring.learned.scorer import context_of
from scoring.learned.split import pairs_in
from scoring.learned.train import TrainConfig, TrainState, fit
from studies.models import Aspect, Dataset
from studies.services import heartbeat
from studies.services.runs.core import item_of

log = logging.getLogger(__name__)
Key = tuple[str, int]


class Cancelled(Exception):
    """The job was cancelled while it ran."""


def learned_dir() -> Path:
    return Path(settings.DATA_DIR) / "learned"


def feature_cache(job_config: dict[str, Any]) -> FeatureCache:
    backbone = job_config["backbone"]
    key = "|".join(
        str(backbone.get(k)) for k in ("files", "location", "pooling", "max_length", "layer")
    )
    return FeatureCache(learned_dir() / "features", key)


def load_backbone(config: dict[str, Any]) -> Backbone:
    b = config["backbone"]
    return Backbone(
        b["location"], pooling=b["pooling"], max_length=b["max_length"], layer=b.get("layer")
    )


def check_planned(backbone: Backbone, config: dict[str, Any]) -> None:
    """The job was planned from the backbone's configuration files alone: refuse to
    train if the loaded model disagrees (say, its files changed since)."""
    b = config["backbone"]
    planned = BackboneInfo(
        b["location"],
        b["decoder"],
        b["pooling"],
        b["dim"],
        b["feature_dim"],
        b["max_length"],
        b.get("layers") or 0,
        b.get("layer") or 0,
    )
    differences = planned.differences(backbone.info)
    if differences:
        raise BackboneError(
            f"the backbone {b['location']!r} loaded differently from the job's plan "
            f"({'; '.join(differences)}): start a new job"
        )


class _Job:
    """One execution of a job: its rows, data, backbone and progress reporting."""

    def __init__(self, job: TrainedMetric) -> None:
        self.job = job
        self.config = job.config
        self.margin = float(self.config["margin"])
        self.hyper = TrainConfig(**self.config["hyperparameters"])
        self.started = time.monotonic()
        self._last_report = 0.0

    # -- progress and cancellation ------------------------------------------------
    def report(self, force: bool = False, **fields: Any) -> None:
        now = time.monotonic()
        if not force and now - self._last_report < 1.0:
            return
        self._last_report = now
        progress = {**(self.job.progress or {}), **fields, "heartbeat": timezone.now().isoformat()}
        self.job.progress = progress
        TrainedMetric.objects.filter(pk=self.job.pk).update(progress=progress)
        if TrainedMetric.objects.filter(
            pk=self.job.pk, status=TrainedMetric.Status.CANCELLED
        ).exists():
            raise Cancelled

    # -- data -------------------------------------------------------------------
    def load(self) -> None:
        tasks = [self._task(t) for t in self.config["tasks"]]
        target = self._task(self.config["target"])
        self.data: dict[str, TaskData] = {
            t.key: load_task(t, margin=self.margin, exclude_flagged=self.config["exclude_flagged"])
            for t in dict.fromkeys([*tasks, target])
        }
        self.instructions = {
            t["key"]: t["instruction"] for t in [*self.config["tasks"], self.config["target"]]
        }
        split = {
            part: {f"{d}/{k}" for d, parts in self.job.split.items() for k in parts[part]}
            for part in ("train", "validation", "test")
        }
        self.train = [p for t in tasks for p in pairs_in(self.data[t.key].pairs, split["train"])]
        self.validation = [
            p for t in tasks for p in pairs_in(self.data[t.key].pairs, split["validation"])
        ]
        target_data = self.data[target.key]
        self.test = pairs_in(target_data.pairs, split["test"])
        self.test_rows = [k for k, d in enumerate(target_data.docs) if d in split["test"]]
        self.target = target_data

    def _task(self, frozen: dict[str, Any]) -> Task:
        return Task(
            Dataset.objects.select_related("task").get(pk=frozen["dataset_id"]),
            Aspect.objects.get(code=frozen["aspect"]),
        )

    def keys(self) -> list[Key]:
        """Every input the job needs: pair members and the target's test outputs."""
        wanted: dict[Key, None] = {}
        for pair in [*self.train, *self.validation, *self.test]:
            wanted[pair.good] = wanted[pair.bad] = None  # type: ignore[index]
        for k in self.test_rows:
            wanted[(self.target.task.key, self.target.output_ids[k])] = None
        return list(wanted)

    def inputs(self, backbone: Backbone, keys: Sequence[Key]) -> list[Formatted]:
        outputs = outputs_by_id([k[1] for k in keys])
        result = []
        for task_key, output_id in keys:
            item = item_of(outputs[output_id])
            result.append(
                format_input(
                    self.instructions[task_key],
                    context_of(item),
                    item.hypothesis,
                    count=backbone.count,
                    limit=backbone.max_length,
                )
            )
        return result


def execute_job(job_id: int) -> str:
    """Claim a PENDING job and train it; safe to call twice (the second does nothing)."""
    claimed = TrainedMetric.objects.filter(pk=job_id, status=TrainedMetric.Status.PENDING).update(
        status=TrainedMetric.Status.RUNNING, error="", started_at=timezone.now()
    )
    if not claimed:
        return "not pending"
    job = TrainedMetric.objects.select_related("dataset", "aspect").get(pk=job_id)
    run = _Job(job)
    try:
        # the heartbeat from a thread in every phase: loading the backbone, the features,
        # an epoch, the evaluation (Resume offers itself only once it stops)
        with heartbeat.beating(lambda: _beat(job_id), heartbeat.interval(), f"training {job_id}"):
            outcome = _train(run)
    except Cancelled:
        return "cancelled"
    except Exception as exc:  # the job ends FAILED with its error; its last checkpoint stays
        log.exception("training job %s failed", job_id)
        TrainedMetric.objects.filter(pk=job_id).update(
            status=TrainedMetric.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        return "failed"
    return outcome


def _beat(job_id: int) -> None:
    """Renew a running job's ``progress["heartbeat"]`` (under the row's lock: the job's
    own progress reports rewrite the whole entry)."""
    with transaction.atomic():
        row = (
            TrainedMetric.objects.select_for_update()
            .filter(pk=job_id, status=TrainedMetric.Status.RUNNING)
            .only("progress")
            .first()
        )
        if row is not None:
            progress = {**(row.progress or {}), "heartbeat": timezone.now().isoformat()}
            TrainedMetric.objects.filter(pk=job_id).update(progress=progress)


def _train(run: _Job) -> str:
    import torch

    job = run.job
    run.report(force=True, phase="loading")
    run.load()
    backbone = load_backbone(run.config)
    check_planned(backbone, run.config)
    keys = run.keys()
    index = {k: i for i, k in enumerate(keys)}
    seconds = dict((job.progress or {}).get("seconds", {}))
    torch.manual_seed(run.hyper.seed)
    head = RewardHead(backbone.feature_dim, int(run.config["head"]["hidden"]))
    full = job.mode == TrainedMetric.Mode.FULL
    started = time.monotonic()
    if full:
        texts = run.inputs(backbone, keys)
        features = None
        with torch.no_grad():
            head.fit_scaling(backbone.encode([texts[index[k]] for k in _members(run.train)]))
    else:
        run.report(force=True, phase="features", done=0, total=len(keys))
        inputs = run.inputs(backbone, keys)
        cache = feature_cache(run.config)
        array = cache.features(
            inputs,
            lambda chunk: backbone.features(chunk).cpu().numpy(),
            progress=lambda done, total: run.report(phase="features", done=done, total=total),
        )
        features = torch.from_numpy(array)
        seconds["features"] = round(time.monotonic() - started, 2)
        seconds["feature_cache_hits"] = cache.hits
        head.fit_scaling(features[[index[k] for k in _members(run.train)]])
    base_head = RewardHead(backbone.feature_dim, head.hidden)
    base_head.load_state_dict(head.state_dict())  # the untrained head: the paper's "Base"
    base_scores = _score(run, backbone, base_head, keys, features, index, full)
    module: torch.nn.Module = (
        torch.nn.ModuleDict({"head": head, "backbone": backbone.model}) if full else head
    )

    def score(batch: Sequence[Hashable]) -> torch.Tensor:
        if features is not None:
            return head(features[[index[k] for k in batch]])  # type: ignore[index]
        if module.training:
            return head(backbone.encode([texts[index[k]] for k in batch], grad=True))  # type: ignore[index]
        return head(backbone.encode([texts[index[k]] for k in batch]))  # type: ignore[index]

    state = _resume_state(job, module)
    run.report(
        force=True,
        phase="training",
        epoch=state.epoch,
        epochs=run.hyper.epochs,
        resumed_from_epoch=state.epoch or None,
    )
    train_started = time.monotonic()

    def on_epoch(st: TrainState, point: dict[str, float]) -> None | bool:
        _save_last(job, module, st)
        TrainedMetric.objects.filter(pk=job.pk).update(curves=st.curves)
        try:
            run.report(
                force=True,
                phase="training",
                epoch=st.epoch,
                step=st.step,
                loss=point["loss"],
                validation_accuracy=point["validation_accuracy"],
            )
        except Cancelled:
            return False
        return True

    def on_step(st: TrainState, loss: float) -> None:
        run.report(phase="training", step=st.step, loss=loss, epoch=st.epoch)

    state = fit(
        module,
        score,
        run.train,
        run.validation,
        run.hyper,
        state=state,
        on_epoch=on_epoch,
        on_step=on_step,
    )
    if state.stopped == "cancelled":
        return "cancelled"
    seconds["training"] = round(time.monotonic() - train_started, 2)
    run.report(force=True, phase="evaluating")
    trained_scores = _score(run, backbone, head, keys, features, index, full)
    results = {
        "base": _evaluate(run, base_scores),
        "trained": _evaluate(run, trained_scores),
        "best_epoch": state.best_epoch,
        "stopped": state.stopped,
        "patience": run.hyper.patience,
    }
    version = job.version + 1
    path = _folder(job) / f"v{version}" / "model.pt"
    payload: dict[str, Any] = {
        "head": head.state_dict(),
        "head_config": {"dim": head.dim, "hidden": head.hidden},
        "config": run.config,
        "version": version,
    }
    if full:
        payload["backbone"] = backbone.model.state_dict()
    digest = save_checkpoint(path, payload)
    seconds["total"] = round(
        sum(v for k, v in seconds.items() if k in ("features", "training"))
        + time.monotonic()
        - train_started
        - seconds["training"],
        2,
    )
    TrainedMetric.objects.filter(pk=job.pk, status=TrainedMetric.Status.RUNNING).update(
        status=TrainedMetric.Status.SUCCEEDED,
        finished_at=timezone.now(),
        results=results,
        curves=state.curves,
        checkpoint=str(path.relative_to(settings.DATA_DIR)),
        checkpoint_sha256=digest,
        version=version,
        progress={
            **job.progress,
            "phase": "done",
            "seconds": seconds,
            "heartbeat": timezone.now().isoformat(),
        },
    )
    return "succeeded"


def _members(pairs: Sequence[Pair]) -> list[Key]:
    return list(dict.fromkeys(k for p in pairs for k in (p.good, p.bad)))  # type: ignore[misc]


def _score(
    run: _Job,
    backbone: Backbone,
    head: RewardHead,
    keys: list[Key],
    features: Any,
    index: dict[Key, int],
    full: bool,
) -> dict[Key, float]:
    """Scores of the test pairs' and test outputs' inputs."""
    import torch

    wanted = list(
        dict.fromkeys(
            [
                *_members(run.test),
                *((run.target.task.key, run.target.output_ids[k]) for k in run.test_rows),
            ]
        )
    )
    head.eval()
    with torch.no_grad():
        if features is not None:
            values = head(features[[index[k] for k in wanted]]).tolist()
        else:
            backbone.model.eval()
            values = head(backbone.encode(run.inputs(backbone, wanted))).tolist()
    return dict(zip(wanted, values, strict=True))


def _evaluate(run: _Job, scores: dict[Key, float]) -> dict[str, float]:
    """Test pairwise accuracy and sample-level Spearman against the aggregated scores."""
    target = run.target
    rows = [k for k in run.test_rows if not np.isnan(target.human[k])]
    values = [scores[(target.task.key, target.output_ids[k])] for k in rows]
    accuracy = pairwise_accuracy(scores, run.test)  # type: ignore[arg-type]
    rho = sample_spearman(values, [target.human[k] for k in rows], [target.docs[k] for k in rows])
    return {
        "pairwise_accuracy": _finite(accuracy),
        "spearman": _finite(rho),
        "pairs": len(run.test),
        "outputs": len(rows),
    }


def _finite(value: float) -> float | None:
    """JSON (and PostgreSQL's jsonb) has no NaN: an undefined number is stored as null."""
    return None if value is None or value != value else round(float(value), 6)


def _folder(job: TrainedMetric) -> Path:
    return learned_dir() / f"{job.pk}-{job.config['folder']}"


def _last_path(job: TrainedMetric) -> Path:
    return _folder(job) / "last.pt"


def _save_last(job: TrainedMetric, module: Any, state: TrainState) -> None:
    """The checkpoint a resumed job starts from: weights and the whole training state."""
    save_checkpoint(_last_path(job), {"module": module.state_dict(), "state": state.as_dict()})


def _resume_state(job: TrainedMetric, module: Any) -> TrainState:
    path = _last_path(job)
    if not path.is_file():
        return TrainState()
    saved = load_checkpoint(path)
    module.load_state_dict(saved["module"])
    log.info("job %s resumes after epoch %s", job.pk, saved["state"]["epoch"])
    return TrainState(**saved["state"])
