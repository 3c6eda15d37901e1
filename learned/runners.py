"""Runs of a learned metric: a trained :class:`learned.models.TrainedMetric` scores any
dataset through the normal run machinery (frozen configuration, resumable chunks).
:class:`LearnedConfig.ready() <learned.apps.LearnedConfig>` registers :data:`RUNNER`
with the runs registry (studies never imports this app)."""

from __future__ import annotations

from typing import Any

from learned.models import TrainedMetric
from learned.services.data import Task
from scoring.metrics.base import Item, ScoreResult
from studies.models import Dataset, MetricRun, Output
from studies.services.runs.types import ModelFactory, Plan, RunError, Runner, RunRequest, Scorer


def build(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """Freeze the trained model (id, checkpoint and its sha256, backbone, instruction)."""
    if not str(request.model).isdigit():
        raise RunError(f"A learned metric is chosen by its id (--model N), not {request.model!r}.")
    trained = (
        TrainedMetric.objects.select_related("aspect", "dataset")
        .filter(pk=int(request.model))
        .first()
    )
    # a researcher's trained metrics score that researcher's datasets only
    foreign = trained is not None and trained.dataset.owner_id not in (None, dataset.owner_id)
    if trained is None or foreign or trained.status != TrainedMetric.Status.SUCCEEDED:
        raise RunError(f"No finished trained metric with id {request.model}.")
    task = Task(dataset, trained.aspect)
    aspect_version = trained.aspect.current_version()
    config = {
        "metric": "learned",
        "trained_metric": trained.pk,
        "model": str(trained.pk),
        "model_label": trained.label,
        "checkpoint": trained.checkpoint,
        "checkpoint_sha256": trained.checkpoint_sha256,
        "checkpoint_version": trained.version,
        "backbone": trained.config["backbone"],
        "mode": trained.mode,
        "aspect": trained.aspect.code,
        "aspect_version": aspect_version.version,
        "instruction": task.instruction,
        "task": dataset.task.code,
        "trained_on": {
            d: parts.get("train", []) + parts.get("validation", [])
            for d, parts in trained.split.items()
        },
        "test_docs": {d: parts.get("test", []) for d, parts in trained.split.items()},
        "limit_docs": request.limit_docs,
        "versions": trained.config.get("versions", {}),
    }
    return Plan("learned", f"learned#{trained.pk}:{trained.label}", config, aspect_version)


def load_scorer(run: MetricRun) -> Any:
    """The trained metric's backbone and head, checked against the frozen sha256."""
    # torch comes with the loader: imported when a worker prepares a learned run, not at
    # every Django start (LearnedConfig.ready() imports this module to register it)
    from learned.services.scoring import load_trained

    return load_trained(run.config["checkpoint"], run.config["checkpoint_sha256"])


def prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    scorer = (model_factory or load_scorer)(run)
    instruction = run.config["instruction"]

    def score(items: list[Item]) -> list[ScoreResult]:
        values = scorer.score(instruction, items)
        return [ScoreResult(i.key, v) for i, v in zip(items, values, strict=True)]

    return score


def test_docs(trained_id: int, dataset: str) -> tuple[str, ...]:
    """The documents of ``dataset`` that trained metric ``trained_id`` held out (its
    test split): any metric may be scored on them alone (``run_metric --test-docs-of``)."""
    trained = TrainedMetric.objects.filter(pk=trained_id).first()
    return tuple(trained.split.get(dataset, {}).get("test", []) if trained else [])


RUNNER = Runner(
    names=("learned",),
    label="Learned metric",
    hint="(model: its id)",
    build=build,
    prepare=prepare,
    queue="gpu",
    checks_model=False,  # ``model`` is the trained metric's id, checked by ``build``
    page="learned/partials/run_about_learned.html",
    test_docs=test_docs,
)
