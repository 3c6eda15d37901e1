"""Runs of the classic baselines: ROUGE-1/2/L, BLEU, chrF (the ``quick`` queue: seconds,
no model) and BERTScore-style similarity (``cpu``: an encoder), all against the
document's references; and the sentinels that need no model, output length and a seeded
random score (``quick``). One runner per family."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from scoring.metrics import bertscore, rouge, sacrebleu_metrics, sentinels
from scoring.metrics.base import Item, ScoreResult
from studies.models import Dataset, MetricRun, Output
from studies.services.catalog.model_catalog import fingerprint, resolve_encoder
from studies.services.options import Option
from studies.services.runs.model import load_encoder
from studies.services.runs.options import REFERENCES
from studies.services.runs.types import ModelFactory, Plan, RunError, Runner, RunRequest, Scorer


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _config(dataset: Dataset, request: RunRequest, **fields: Any) -> dict[str, Any]:
    """The frozen fields every baseline shares, then the metric's own."""
    return {
        "metric": request.metric,
        "limit_docs": request.limit_docs,
        "task": dataset.task.code,
        **fields,
    }


def build_rouge(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """ROUGE against each reference (stemmed), aggregated by ``mean`` unless asked."""
    metric = request.metric
    aggregation = request.reference_aggregation or "mean"
    if aggregation not in rouge.AGGREGATIONS:
        raise RunError(f"Reference aggregation must be mean or max, not {aggregation!r}.")
    config = _config(
        dataset,
        request,
        rouge_type=metric,
        stemming=True,
        reference_aggregation=aggregation,
        versions={"rouge-score": _version("rouge-score")},
    )
    return Plan(metric, f"{metric}:{aggregation}", config)


def prepare_rouge(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    aggregation = run.config["reference_aggregation"]
    return lambda items: rouge.score(items, run.metric, aggregation)


def build_sacrebleu(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """BLEU or chrF with sacrebleu's multi-reference scoring, its signature frozen."""
    metric = request.metric
    config = _config(
        dataset,
        request,
        signature=sacrebleu_metrics.signature(metric),
        reference_aggregation="sacrebleu multi-reference",
        versions={"sacrebleu": _version("sacrebleu")},
    )
    return Plan(metric, metric, config)


def prepare_sacrebleu(
    run: MetricRun, todo: list[Output], model_factory: ModelFactory | None
) -> Scorer:
    return lambda items: sacrebleu_metrics.score(items, run.metric)


def build_length(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """The output's length in tokens: a sentinel."""
    config = _config(dataset, request, tokenizer=sentinels.TOKENIZER, sentinel=True)
    return Plan(request.metric, f"{request.metric}:{sentinels.TOKENIZER}", config)


def prepare_length(
    run: MetricRun, todo: list[Output], model_factory: ModelFactory | None
) -> Scorer:
    return sentinels.score_length


def build_random(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """A seeded random score: a sentinel."""
    config = _config(dataset, request, seed=request.seed, sentinel=True)
    return Plan(request.metric, f"{request.metric}:seed{request.seed}", config)


def prepare_random(
    run: MetricRun, todo: list[Output], model_factory: ModelFactory | None
) -> Scorer:
    seed = int(run.config["seed"])
    return lambda items: sentinels.score_random(items, seed)


def build_bertscore(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """Cosine similarity of token embeddings against each reference, aggregated by
    ``max`` unless asked; the encoder's files are fingerprinted."""
    aggregation = request.reference_aggregation or "max"
    if aggregation not in bertscore.AGGREGATIONS:
        raise RunError(f"Reference aggregation must be max or mean, not {aggregation!r}.")
    if request.layer is not None and request.layer < 0:
        raise RunError("The encoder layer must be 0 or more.")
    location, label = resolve_encoder(request.model)
    config = _config(
        dataset,
        request,
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
    return Plan(request.metric, f"{request.metric}:{label}{layer}:{aggregation}", config)


def prepare_bertscore(
    run: MetricRun, todo: list[Output], model_factory: ModelFactory | None
) -> Scorer:
    encoder = (model_factory or load_encoder)(run)
    aggregation = run.config["reference_aggregation"]

    def score(items: list[Item]) -> list[ScoreResult]:
        return bertscore.score(encoder, items, aggregation)

    return score


LAYER = Option("layer", int, None, "the encoder layer (default: the last)", command_only=True)
SENTINEL_PAGE = "studies/partials/run_about_sentinel.html"  # what the run page says of one

ROUGE = Runner(
    names=rouge.ROUGE_TYPES,
    label="ROUGE-1/2/L",
    labels={"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"},
    group="rouge",
    hint="(three runs)",
    build=build_rouge,
    prepare=prepare_rouge,
    queue="quick",
    options=(REFERENCES,),
)
SACREBLEU = Runner(
    names=sacrebleu_metrics.METRICS,
    label="BLEU/chrF",
    labels={"bleu": "BLEU", "chrf": "chrF"},
    build=build_sacrebleu,
    prepare=prepare_sacrebleu,
    queue="quick",
)
BERTSCORE = Runner(
    names=("bertscore",),
    label="BERTScore-style similarity",
    build=build_bertscore,
    prepare=prepare_bertscore,
    queue="cpu",
    options=(REFERENCES, LAYER),
)
LENGTH = Runner(
    names=("length",),
    label="Output length in tokens",
    hint="(sentinel)",
    build=build_length,
    prepare=prepare_length,
    queue="quick",
    page=SENTINEL_PAGE,
)
RANDOM = Runner(
    names=("random",),
    label="Random score",
    hint="(sentinel)",
    build=build_random,
    prepare=prepare_random,
    queue="quick",
    page=SENTINEL_PAGE,
)
RUNNERS = (ROUGE, SACREBLEU, BERTSCORE, LENGTH, RANDOM)
