"""Yes/no judge runs: a binary aspect asked as a question, scored ``log p(Yes) −
log p(No)`` (:mod:`scoring.metrics.yesno`); the frozen configuration and the scorer."""

from __future__ import annotations

from typing import Any

from scoring.lm.rating import RatingModel
from scoring.lm.served import Capabilities
from scoring.metrics import geval_labels, yesno
from scoring.metrics.base import Item, ScoreResult
from studies.models import Dataset, MetricRun, Output, PromptTemplate
from studies.services.catalog.model_catalog import library_versions
from studies.services.runs.aspects import find_aspect
from studies.services.runs.model import load_language_model, model_config
from studies.services.runs.options import PRECISION
from studies.services.runs.types import ModelFactory, Plan, RunError, Runner, RunRequest, Scorer


def build(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """Validate the request (a binary aspect) and freeze the run's configuration."""
    aspect = find_aspect(request.aspect, dataset)
    version = aspect.current_version()
    if version.kind != "binary":
        raise RunError(
            f"The yes/no judge asks about a binary aspect; {aspect.code} is a {version.kind} one."
        )
    labels = [str(label) for label in version.labels]
    positive = str(version.positive)
    template = PromptTemplate.objects.filter(
        task=dataset.task, aspect=aspect, kind=PromptTemplate.Kind.GEVAL
    ).first()
    text = template.current_version().text if template else ""
    introduction, source_label, output_label = geval_labels.introduction_for(
        dataset.task.code, text
    )
    config = {
        **model_config("yesno", dataset, version, request, user),
        "introduction": introduction,
        "aspect_name": version.name,
        "criteria": geval_labels.criteria_text(
            version.name, version.definition, labels, version.anchors
        ),
        "positive": positive,
        "negative": next(label for label in labels if label != positive),
        "source_label": source_label,
        "output_label": output_label,
        "use_chat_template": True,
        "batch_size": request.batch_size,
        "limit_docs": request.limit_docs,
        "versions": library_versions(),
    }
    label = ":".join(["yesno", config["model_label"], aspect.code])
    return Plan("yesno", label, config, version)


def config_of(run: MetricRun) -> yesno.YesNoConfig:
    c = run.config
    return yesno.YesNoConfig(
        introduction=c["introduction"],
        aspect_name=c["aspect_name"],
        criteria=c["criteria"],
        positive=c["positive"],
        negative=c["negative"],
        source_label=c["source_label"],
        output_label=c["output_label"],
        use_chat_template=c["use_chat_template"],
    )


def prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    model = (model_factory or load_language_model)(run)
    if not isinstance(model, RatingModel):
        raise RunError(f"{type(model).__name__} gives no probabilities for the answers.")
    config = config_of(run)

    def score(items: list[Item]) -> list[ScoreResult]:
        return yesno.score(model, items, config)

    return score


def served_needs(config: dict[str, Any], capabilities: Capabilities) -> str:
    """What an endpoint lacks: the answers' probabilities (top_logprobs, or prompt
    log-probabilities to score them exactly)."""
    if capabilities.chat_top_logprobs < 1 and not capabilities.prompt_logprobs:
        return (
            "The yes/no judge reads the answers' probabilities (chat top_logprobs or "
            "prompt_logprobs), and the endpoint's probe found neither"
        )
    return ""


RUNNER = Runner(
    names=("yesno",),
    label="Yes/no judge",
    build=build,
    prepare=prepare,
    queue="gpu",
    per_aspect=True,
    options=(PRECISION,),
    served=served_needs,
)
