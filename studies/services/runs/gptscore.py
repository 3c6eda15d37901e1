"""GPTScore runs: the frozen configuration (template, aspect definition, model, setting,
dimension) and the scorer (IDM demonstrations picked once per document)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Avg

from scoring.lm.base import LanguageModel, Reduction
from scoring.lm.served import Capabilities
from scoring.metrics import gptscore
from scoring.metrics.base import Item, ScoreResult
from studies.models import Aspect, Dataset, Judgment, MetricRun, Output, PromptTemplate
from studies.services.catalog.model_catalog import library_versions
from studies.services.options import Option
from studies.services.runs.aspects import find_aspect
from studies.services.runs.model import load_language_model, model_config
from studies.services.runs.options import PRECISION, REFERENCES
from studies.services.runs.types import ModelFactory, Plan, RunError, Runner, RunRequest, Scorer

DIMENSION_ALIASES = {
    "src-hypo": "src_hypo",
    "ref-hypo": "ref_hypo",
    "hypo-ref": "hypo_ref",
    "avg-f": "avg_f",
    "avg": "avg_f",
    "hypo-only": "hypo",
    "source-free": "hypo",
}


def _template(
    dataset: Dataset, aspect: Aspect, setting: str, dimension: str, variant: str
) -> PromptTemplate:
    query = PromptTemplate.objects.filter(
        task=dataset.task, kind=PromptTemplate.Kind.GPTSCORE, dimension=dimension, variant=variant
    )
    if setting == "VAL":
        found = query.filter(setting="VAL", aspect__isnull=True).first()
    else:
        found = query.filter(setting="IST", aspect=aspect).first()
    if found is None and not variant and dataset.task.code == "dialogue":
        return _template(dataset, aspect, setting, dimension, "turn")
    if found is None:
        raise RunError(
            f"No GPTScore {setting} template for {dataset.task.code} × {aspect.code} × "
            f"{dimension}{' (' + variant + ')' if variant else ''}; add one in the admin."
        )
    return found


def _frozen_template(template: PromptTemplate) -> dict[str, Any]:
    version = template.current_version()
    return {
        "id": template.pk,
        "version": version.version,
        "version_id": version.pk,
        "text": version.text,
        "target": version.target,
    }


def build(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """Validate the request and freeze the run's configuration."""
    dimension = DIMENSION_ALIASES.get(request.dimension, request.dimension)
    if dimension not in gptscore.DIMENSIONS:
        raise RunError(
            f"Unknown dimension {request.dimension!r}; use src-hypo, ref-hypo, hypo-ref, avg-f "
            "or hypo (source-free)."
        )
    if request.setting not in gptscore.SETTINGS:
        raise RunError(f"Unknown setting {request.setting!r}; use VAL, IST or IDM.")
    if request.setting == "IDM" and request.k < 1:
        raise RunError("IDM needs k ≥ 1 demonstrations.")
    aspect = find_aspect(request.aspect, dataset)
    setting_template = "VAL" if request.setting == "VAL" else "IST"
    # avg_f starts with ref→hypo; the source-free "hypo" blanks the source of src→hypo's
    first_dimension = {"avg_f": "ref_hypo", "hypo": "src_hypo"}.get(dimension, dimension)
    template = _template(dataset, aspect, setting_template, first_dimension, request.variant)
    reverse = (
        _template(dataset, aspect, setting_template, "hypo_ref", request.variant)
        if dimension == "avg_f"
        else None
    )
    aspect_version = aspect.current_version()
    config = {
        **model_config("gptscore", dataset, aspect_version, request, user),
        "task_description": dataset.task.description,
        "setting": request.setting,
        "dimension": dimension,
        "template": _frozen_template(template),
        "reverse_template": _frozen_template(reverse) if reverse else None,
        "k": request.k if request.setting == "IDM" else 0,
        "seed": request.seed,
        "reduction": request.reduction,
        "reference_aggregation": request.reference_aggregation or "max",
        "batch_size": request.batch_size,
        "limit_docs": request.limit_docs,
        "versions": library_versions(),
    }
    label = f"gptscore:{config['model_label']}:{request.setting}:{dimension}:{aspect.code}"
    return Plan("gptscore", label, config, aspect_version, config["template"]["version_id"])


def config_of(run: MetricRun) -> gptscore.GPTScoreConfig:
    c = run.config
    reverse = c.get("reverse_template")
    return gptscore.GPTScoreConfig(
        template=gptscore.Template(c["template"]["text"], c["template"]["target"]),
        reverse=gptscore.Template(reverse["text"], reverse["target"]) if reverse else None,
        dimension=c["dimension"],
        setting=c["setting"],
        aspect_definition=c["aspect_definition"],
        task_description=c["task_description"],
        reduction=Reduction(c["reduction"]),
        reference_aggregation=c["reference_aggregation"],
        k=c["k"],
        seed=c["seed"],
    )


def _demonstration_pool(run: MetricRun) -> dict[str, gptscore.Demonstration]:
    """One demonstration per document: its best-judged output on the run's aspect
    (the first output where nobody judged), with the document's first reference."""
    means = dict(
        Judgment.objects.filter(
            output__document__dataset=run.dataset, aspect__code=run.config["aspect"]
        )
        .values("output_id")
        .annotate(mean=Avg("value"))
        .values_list("output_id", "mean")
    )
    pool: dict[str, gptscore.Demonstration] = {}
    by_doc: dict[str, list[Output]] = defaultdict(list)
    for output in Output.objects.filter(document__dataset=run.dataset).select_related("document"):
        by_doc[output.document.doc_key].append(output)
    for key, candidates in by_doc.items():
        best = max(candidates, key=lambda o: (means.get(o.pk, float("-inf")), -o.pk))
        refs = best.reference_texts() or [""]
        pool[key] = gptscore.Demonstration(
            source=best.document.source, hypothesis=best.text, reference=refs[0]
        )
    return pool


def prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    model: LanguageModel = (model_factory or load_language_model)(run)
    config = config_of(run)
    demos: dict[str, list[gptscore.Demonstration]] = {}
    if config.setting == "IDM":
        pool = _demonstration_pool(run)
        demos = {
            key: gptscore.pick_demonstrations(pool, key, config.k, config.seed)
            for key in {o.document.doc_key for o in todo}
        }

    def score(items: list[Item]) -> list[ScoreResult]:
        return gptscore.score(model, items, config, demos)

    return score


def served_needs(config: dict[str, Any], capabilities: Capabilities) -> str:
    """What an endpoint lacks for GPTScore: the prompt's token log-probabilities."""
    if not capabilities.target_logprobs:
        return (
            "GPTScore needs the prompt's token log-probabilities (a completion with echo "
            "and logprobs, or vLLM's prompt_logprobs), and the endpoint's probe found neither"
        )
    if not capabilities.tokens_spell_text:
        return (
            "GPTScore takes the output's tokens by character offsets, and the tokens the "
            "endpoint returned for the probe text did not spell it (the tokenizer check)"
        )
    return ""


SETTING = Option(
    "setting",
    str,
    "IST",
    "the prompt: an instruction, none, or an instruction with k demonstrations",
    choices=("IST", "VAL", "IDM"),
    labels={
        "IST": "IST: instruction",
        "VAL": "VAL: no instruction",
        "IDM": "IDM: instruction + demonstrations",
    },
)
DIMENSION = Option(
    "dimension",
    str,
    "src_hypo",
    "what is conditioned on what (hypo: the source-free sentinel)",
    choices=gptscore.DIMENSIONS,
    labels={
        "src_hypo": "src→hypo",
        "ref_hypo": "ref→hypo",
        "hypo_ref": "hypo→ref",
        "avg_f": "avg of ref→hypo and hypo→ref",
        "hypo": "hypo only (source-free sentinel)",
    },
    dashed=True,
)
K = Option("k", int, 2, "demonstrations (IDM only)", minimum=0, maximum=8)
REDUCTION = Option(
    "reduction",
    str,
    "mean",
    "the output's token log-probabilities: their mean or sum",
    choices=("mean", "sum"),
    command_only=True,
)

RUNNER = Runner(
    names=("gptscore",),
    label="GPTScore",
    build=build,
    prepare=prepare,
    queue="gpu",
    per_aspect=True,
    options=(SETTING, DIMENSION, K, REFERENCES, PRECISION, REDUCTION),
    page="studies/partials/run_about_gptscore.html",
    served=served_needs,
)
