"""Runs of the classic baselines on the ``cpu`` queue: ROUGE-1/2/L, BLEU, chrF and
BERTScore-style similarity, all against the document's references; and the sentinels
that need no model, output length and a seeded random score."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from scoring.metrics import bertscore, rouge, sacrebleu_metrics, sentinels
from scoring.metrics.base import Item, ScoreResult
from studies.models import Dataset, MetricRun, Output
from studies.services.catalog.model_catalog import fingerprint, resolve_encoder
from studies.services.runs.core import ModelFactory, Plan, RunError, Scorer
from studies.services.runs.request import RunRequest

METRICS = (*rouge.ROUGE_TYPES, *sacrebleu_metrics.METRICS, "bertscore", *sentinels.METRICS)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def build(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """Validate the request and freeze the run's configuration."""
    metric = request.metric
    config: dict[str, Any] = {
        "metric": metric,
        "limit_docs": request.limit_docs,
        "task": dataset.task.code,
    }
    if metric in rouge.ROUGE_TYPES:
        aggregation = request.reference_aggregation or "mean"
        if aggregation not in rouge.AGGREGATIONS:
            raise RunError(f"Reference aggregation must be mean or max, not {aggregation!r}.")
        config.update(
            rouge_type=metric,
            stemming=True,
            reference_aggregation=aggregation,
            versions={"rouge-score": _version("rouge-score")},
        )
        return Plan(metric, f"{metric}:{aggregation}", config)
    if metric in sacrebleu_metrics.METRICS:
        config.update(
            signature=sacrebleu_metrics.signature(metric),
            reference_aggregation="sacrebleu multi-reference",
            versions={"sacrebleu": _version("sacrebleu")},
        )
        return Plan(metric, metric, config)
    if metric == "length":
        config.update(tokenizer=sentinels.TOKENIZER, sentinel=True)
        return Plan(metric, f"length:{sentinels.TOKENIZER}", config)
    if metric == "random":
        config.update(seed=request.seed, sentinel=True)
        return Plan(metric, f"random:seed{request.seed}", config)
    if metric == "bertscore":
        aggregation = request.reference_aggregation or "max"
        if aggregation not in bertscore.AGGREGATIONS:
            raise RunError(f"Reference aggregation must be max or mean, not {aggregation!r}.")
        if request.layer is not None and request.layer < 0:
            raise RunError("The encoder layer must be 0 or more.")
        location, label = resolve_encoder(request.model)
        config.update(
            model=request.model,
            model_label=label,
            model_location=location,
            model_files=fingerprint(location),
            layer=request.layer,
            reference_aggregation=aggregation,
            batch_size=request.batch_size,
            idf=False,
            rescaled=False,
            versions={p: _version(p) for p in ("torch", "transformers")},
        )
        layer = "" if request.layer is None else f":L{request.layer}"
        return Plan(metric, f"bertscore:{label}{layer}:{aggregation}", config)
    raise RunError(f"Unknown baseline metric {metric!r}.")


def load_encoder(run: MetricRun) -> Any:
    from scoring.lm.encoder import HFEncoder

    c = run.config
    return HFEncoder(c["model_location"], layer=c.get("layer"), batch_size=c.get("batch_size", 32))


def prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    c = run.config
    if run.metric in rouge.ROUGE_TYPES:
        return lambda items: rouge.score(items, run.metric, c["reference_aggregation"])
    if run.metric in sacrebleu_metrics.METRICS:
        return lambda items: sacrebleu_metrics.score(items, run.metric)
    if run.metric == "length":
        return sentinels.score_length
    if run.metric == "random":
        return lambda items: sentinels.score_random(items, int(c["seed"]))
    encoder = (model_factory or load_encoder)(run)

    def score(items: list[Item]) -> list[ScoreResult]:
        return bertscore.score(encoder, items, c["reference_aggregation"])

    return score
