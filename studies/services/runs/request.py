"""What a researcher asks for (from the page, the command or the API), and where it goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from studies.models import Aspect, Dataset, MetricRun
from studies.services.catalog.model_catalog import check_model
from studies.services.runs.core import RunError, save_run

METRICS = (
    "gptscore",
    "geval",
    "rouge1",
    "rouge2",
    "rougeL",
    "bleu",
    "chrf",
    "bertscore",
    "learned",
    "length",
    "random",
)
METRIC_GROUPS = {"rouge": ("rouge1", "rouge2", "rougeL")}  # one request, several runs


@dataclass(frozen=True)
class RunRequest:
    """A run to start. Fields a metric does not use are ignored (and not frozen).

    ``reference_aggregation`` empty means the metric's convention: ``max`` for GPTScore
    and BERTScore, ``mean`` for ROUGE.
    """

    aspect: str = ""
    metric: str = "gptscore"
    setting: str = "IST"
    dimension: str = "src_hypo"
    model: str = "default"
    k: int = 0
    seed: int = 0
    reduction: str = "mean"
    reference_aggregation: str = ""
    batch_size: int = 8
    limit_docs: int | None = None
    variant: str = ""
    steps: str = "auto"  # G-Eval: "auto" (generated once, editable) or "none"
    weighting: str = "prob"  # G-Eval: "prob" (Σ p·s) or "argmax"
    estimation: str = "probs"  # G-Eval: "probs" or "sampled" (n samples at temperature 1)
    n_samples: int = 20
    layer: int | None = None  # BERTScore: the encoder layer (default: the last)
    doc_keys: tuple[str, ...] = ()  # only these documents (say, a learned metric's test set)
    precision: str = "auto"  # GPTScore, G-Eval: "auto", "exact" (float32) or "fast" (bf16 on a GPU)


def find_aspect(name: str, dataset: Dataset) -> Aspect:
    """The aspect of that code or name among those a run on ``dataset`` may use: the
    shared ones and the dataset owner's (another researcher's never match)."""
    from studies.permissions import dataset_aspects

    usable = dataset_aspects(dataset)
    aspect = usable.filter(code__iexact=name).first() or usable.filter(name__iexact=name).first()
    if aspect is None:
        raise RunError(f"Unknown aspect {name!r}.")
    return aspect


def start_run(
    dataset: Dataset,
    request: RunRequest,
    *,
    user: Any = None,
    enqueue: bool = True,
    local_paths: bool = False,
) -> MetricRun:
    """Save a PENDING run with its frozen configuration; enqueue it once committed.

    The model must be allowed (:func:`check_model`); ``local_paths`` (the operator's
    shell, never a web request) also accepts any local path or hub id.
    """
    from studies.services.runs.registry import runner

    found = runner(request.metric)
    if found is None:
        raise RunError(f"Unknown metric {request.metric!r}; use one of {', '.join(METRICS)}.")
    if request.metric != "learned":  # a learned metric names a trained metric's id
        check_model(request.model, local_paths=local_paths)
    plan = found.build(dataset, request, user)
    if request.doc_keys:
        plan.config["doc_keys"] = sorted(request.doc_keys)
    return save_run(dataset, plan, user=user, enqueue_it=enqueue)


def start_runs(
    dataset: Dataset,
    request: RunRequest,
    *,
    user: Any = None,
    enqueue: bool = True,
    local_paths: bool = False,
) -> list[MetricRun]:
    """Like :func:`start_run`; a group name (``rouge``) starts one run per member."""
    metrics = METRIC_GROUPS.get(request.metric, (request.metric,))
    return [
        start_run(
            dataset, replace(request, metric=m), user=user, enqueue=enqueue, local_paths=local_paths
        )
        for m in metrics
    ]


def start_requested(
    dataset: Dataset, base: RunRequest, aspects: Sequence[Aspect], *, user: Any = None
) -> list[MetricRun]:
    """What the run form asks for: one run per aspect for GPTScore and G-Eval, one run
    per member of a group (``rouge``) otherwise."""
    if base.metric in ("gptscore", "geval"):
        return [start_run(dataset, replace(base, aspect=a.code), user=user) for a in aspects]
    return start_runs(dataset, base, user=user)
