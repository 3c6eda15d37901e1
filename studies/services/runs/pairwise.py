"""Pairwise judge runs (:mod:`scoring.metrics.pairwise_judge`): the frozen configuration
(the aspect version's name and definition, the pairs, ties, model, estimation) and the
scorer.

Which pairs (frozen at start): ``all`` pairs of outputs within each document; ``k``
pairs per document drawn with the run's seed (the same on every machine); or
``campaign``: the pairs of a pairwise annotation campaign (read through
:data:`studies.hooks.pairwise_campaigns` and frozen in the configuration as
``campaign_pairs``, lower output id first; the run covers the campaign's documents).
``n_pairs`` and ``n_requests`` (two orders per pair) are frozen too, and a served run's
``cost_estimate`` is priced from them.

Runs are scored one whole document per chunk, so the scorer gets every output of a
document at once and judges the document's pairs. What each output stores
(``MetricScore``): ``value``, its mean preference against the outputs it was paired
with, P(win) + ½·P(tie) averaged over both orders (so the run is also a pointwise
metric for the correlation matrix); ``details``::

    {"pairs": [{"vs": <other output id>, "ab": [pA, pB(, pT)], "ba": [pA, pB(, pT)],
                "mass": [m_ab, m_ba]}, ...],  # the pairs it is the lower id of
     "n_pairs": <its judged pairs>, "wins": <Σ its preferences>,
     "ties": bool, "sampled": bool (+ "n_samples", "n_unparsed" when sampled)}

``ab`` shows this output as A (first), ``ba`` shows it as B; each in its order's own
frame. An order that failed is ``null`` and the pair has an ``error``; an output in no
judged pair has no value and its error says why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from typing import Any

from django.db.models import Count

from scoring.lm.rating import RatingModel, TextSampler
from scoring.lm.served import Capabilities
from scoring.metrics import geval
from scoring.metrics import pairwise_judge as pj
from scoring.metrics.base import Item, ScoreResult
from studies import hooks
from studies.models import Dataset, MetricRun, Output
from studies.services.catalog.model_catalog import library_versions
from studies.services.options import Option
from studies.services.runs.aspects import find_aspect
from studies.services.runs.model import load_language_model, model_config
from studies.services.runs.options import ESTIMATION, N_SAMPLES, PRECISION
from studies.services.runs.types import ModelFactory, Plan, RunError, Runner, RunRequest, Scorer

MAX_PAIRS_PER_DOC = 10_000


def document_sizes(
    dataset: Dataset, limit_docs: int | None = None, doc_keys: tuple[str, ...] | list[str] = ()
) -> dict[str, int]:
    """Outputs per document of the documents a run covers (its first ``limit_docs`` by
    key; only ``doc_keys`` when given), as :func:`.core.outputs_of` chooses them."""
    outputs = Output.objects.filter(document__dataset=dataset)
    if doc_keys:
        outputs = outputs.filter(document__doc_key__in=list(doc_keys))
    if limit_docs:
        keys = dataset.documents.order_by("doc_key").values_list("doc_key", flat=True)
        outputs = outputs.filter(document__doc_key__in=list(keys[:limit_docs]))
    rows = outputs.values("document__doc_key").annotate(n=Count("pk")).order_by()
    return {row["document__doc_key"]: row["n"] for row in rows}


def pair_counts(dataset: Dataset, limit_docs: int | None = None) -> dict[str, int]:
    """What the run form shows before a pairwise run starts: documents, outputs, every
    pair within a document, and the requests they take (two orders each)."""
    sizes = list(document_sizes(dataset, limit_docs).values())
    pairs = pj.n_pairs(sizes, "all")
    return {
        "documents": len(sizes),
        "outputs": sum(sizes),
        "pairs": pairs,
        "requests": 2 * pairs,
        "largest": max(sizes, default=0),
    }


def _campaign_pairs(
    dataset: Dataset, request: RunRequest, sizes: dict[str, int]
) -> tuple[dict[str, Any], list[list[int]], list[str]]:
    if request.campaign is None:
        raise RunError("Choose the pairwise campaign whose pairs the judge should judge.")
    found = hooks.campaign_pairs(dataset, request.campaign)
    if found is None:
        raise RunError(f"There is no pairwise campaign #{request.campaign} on this dataset.")
    pairs: dict[tuple[int, int], str] = {}
    for doc, a, b in found:
        if doc in sizes and a != b:
            pairs.setdefault((min(a, b), max(a, b)), doc)
    labels = dict(hooks.pairwise_campaign_choices(dataset))
    frozen = {"id": request.campaign, "label": labels.get(request.campaign, "")}
    return frozen, [list(p) for p in sorted(pairs)], sorted(set(pairs.values()))


def build(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    """Validate the request and freeze the run's configuration."""
    if request.pairs not in pj.SELECTIONS:
        raise RunError(f"Pairs must be one of {', '.join(pj.SELECTIONS)}, not {request.pairs!r}.")
    if request.pairs == "k" and not 1 <= request.pairs_per_doc <= MAX_PAIRS_PER_DOC:
        raise RunError(f"k sampled pairs per document must be 1 to {MAX_PAIRS_PER_DOC}.")
    if request.estimation not in pj.ESTIMATIONS:
        raise RunError(f"Estimation must be 'probs' or 'sampled', not {request.estimation!r}.")
    if request.estimation == "sampled" and not 1 <= request.n_samples <= 100:
        raise RunError("Sampled estimation needs 1 to 100 samples per order of a pair.")
    aspect = find_aspect(request.aspect, dataset)
    version = aspect.current_version()
    sizes = document_sizes(dataset, request.limit_docs, request.doc_keys)
    selection: dict[str, Any] = {"pairs": request.pairs}
    if request.pairs == "campaign":
        campaign, frozen_pairs, docs = _campaign_pairs(dataset, request, sizes)
        selection |= {"campaign": campaign, "campaign_pairs": frozen_pairs, "doc_keys": docs}
        n_pairs = len(frozen_pairs)
    else:
        selection["pairs_per_doc"] = request.pairs_per_doc if request.pairs == "k" else None
        n_pairs = pj.n_pairs(list(sizes.values()), request.pairs, request.pairs_per_doc)
    if n_pairs == 0:
        raise RunError("There is no pair of outputs of one document to judge.")
    source_label, output_label = geval.TEXT_LABELS.get(dataset.task.code, geval.DEFAULT_TEXT_LABELS)
    sampled = request.estimation == "sampled"
    config = {
        **model_config("pairwise", dataset, version, request, user),
        "introduction": pj.introduction_for(source_label, output_label),
        "aspect_name": version.name,
        "source_label": source_label,
        **selection,
        "ties": request.ties,
        "n_pairs": n_pairs,
        "n_requests": 2 * n_pairs,
        "use_chat_template": True,
        "estimation": request.estimation,
        "n_samples": request.n_samples if sampled else None,
        "temperature": 1.0 if sampled else None,
        "seed": request.seed,
        "batch_size": request.batch_size,
        "limit_docs": request.limit_docs,
        "versions": library_versions(),
    }
    which = {
        "all": "all",
        "k": f"k{request.pairs_per_doc}",
        "campaign": f"campaign{request.campaign}",
    }
    parts = ["pairwise", config["model_label"], aspect.code, which[request.pairs]]
    label = ":".join(parts + (["ties"] if request.ties else []) + (["sampled"] if sampled else []))
    return Plan("pairwise", label, config, version)


def config_of(run: MetricRun) -> pj.PairwiseConfig:
    c = run.config
    return pj.PairwiseConfig(
        introduction=c["introduction"],
        aspect_name=c["aspect_name"],
        definition=c["aspect_definition"],
        source_label=c["source_label"],
        ties=c["ties"],
        use_chat_template=c["use_chat_template"],
        estimation=c["estimation"],
        n_samples=c["n_samples"] or 20,
        temperature=c["temperature"] or 1.0,
        seed=c["seed"],
    )


def pairs_for(config: dict[str, Any], items: list[Item]) -> list[tuple[Hashable, Hashable]]:
    """The pairs the run judges among ``items`` (whole documents), lower id first."""
    by_doc: dict[str, list[Hashable]] = defaultdict(list)
    for item in items:
        by_doc[item.doc_key].append(item.key)
    if config["pairs"] == "campaign":
        keys = {item.key for item in items}
        frozen = config["campaign_pairs"]
        return [(a, b) for a, b in frozen if a in keys and b in keys]
    pairs: list[tuple[Hashable, Hashable]] = []
    for doc, keys_of_doc in by_doc.items():
        if config["pairs"] == "k":
            k = int(config["pairs_per_doc"])
            pairs += pj.sampled_pairs(keys_of_doc, k, seed=int(config["seed"]), doc_key=doc)
        else:
            pairs += pj.all_pairs(keys_of_doc)
    return pairs


def prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    model = (model_factory or load_language_model)(run)
    if run.config["estimation"] == "probs" and not isinstance(model, RatingModel):
        raise RunError(
            f"{type(model).__name__} gives no probabilities; start the run with sampled "
            "estimation (n samples at temperature 1) instead."
        )
    if run.config["estimation"] == "sampled" and not isinstance(model, TextSampler):
        raise RunError(f"{type(model).__name__} cannot sample answers.")
    config = config_of(run)
    chat = bool(getattr(model, "has_chat_template", False))
    if run.config.get("chat_template") != chat:
        run.config["chat_template"] = chat  # what the prompts were wrapped in
        MetricRun.objects.filter(pk=run.pk).update(config=run.config)
    frozen = run.config

    def score(items: list[Item]) -> list[ScoreResult]:
        return pj.score(model, items, pairs_for(frozen, items), config)

    return score


def served_needs(config: dict[str, Any], capabilities: Capabilities) -> str:
    """What an endpoint lacks for the pairwise judge: chat top_logprobs to read p(A) and
    p(B), or ``n`` samples per request for the sampled estimate."""
    if config["estimation"] == "probs" and capabilities.chat_top_logprobs < 1:
        return (
            "the pairwise judge with probabilities needs chat top_logprobs, and the "
            "endpoint's probe found none; start the run with sampled estimation instead"
        )
    if config["estimation"] == "sampled" and not capabilities.sampling_n:
        return (
            "the pairwise judge's sampled estimate needs n samples per request ('n'), and "
            "the endpoint's probe found it refused"
        )
    return ""


PAIRS = Option(
    "pairs",
    str,
    "all",
    "all pairs within each document, k seeded pairs per document, or a pairwise "
    "campaign's pairs; each judged in both orders",
    choices=pj.SELECTIONS,
    labels={
        "all": "all pairs within each document",
        "k": "k sampled pairs per document (seeded)",
        "campaign": "the pairs of a pairwise annotation campaign",
    },
)
PAIRS_PER_DOC = Option(
    "pairs_per_doc",
    int,
    10,
    "k, with k sampled pairs",
    label="k pairs per document",
    minimum=1,
    maximum=MAX_PAIRS_PER_DOC,
)
CAMPAIGN = Option("campaign", int, None, "the pairwise campaign whose pairs are judged", minimum=1)
TIES = Option("ties", bool, False, "the judge may answer C for a tie", label="Allow ties")

RUNNER = Runner(
    names=("pairwise",),
    label="Pairwise judge",
    build=build,
    prepare=prepare,
    queue="gpu",
    per_aspect=True,
    options=(PAIRS, PAIRS_PER_DOC, CAMPAIGN, TIES, ESTIMATION, N_SAMPLES, PRECISION),
    page="studies/partials/run_about_pairwise.html",
    served=served_needs,
)
