"""The types a metric run is made of: what a researcher asks for (:class:`RunRequest`),
the frozen run a runner builds from it (:class:`Plan`), the scorer it prepares, and
:class:`Runner`, one metric (or family of metrics) as the registry knows it.

A leaf of the runs package: runner modules (here and in other apps) import it, and it
imports nothing of the package, so the arrows point one way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scoring.lm.served import Capabilities
from scoring.metrics.base import Item, ScoreResult
from studies.models import AspectVersion, Dataset, MetricRun, Output
from studies.services.options import Option

Scorer = Callable[[list[Item]], list[ScoreResult]]
ModelFactory = Callable[[MetricRun], Any]  # replaces a runner's own model loader (tests)
# the Celery queue a run goes to: gpu (language models), cpu (encoders), quick (the short
# model-free metrics), io (served endpoints)
Queue = Literal["cpu", "gpu", "io", "quick"]
# what a served endpoint lacks for a run's frozen configuration ("" if nothing)
ServedCheck = Callable[[dict[str, Any], Capabilities], str]
ABOUT_PAGE = "studies/partials/run_about.html"  # the run page's part on a run's metric


class RunError(ValueError):
    """A run that cannot be started as asked; the message says why."""


@dataclass(frozen=True)
class Plan:
    """A run about to be saved: what a metric's builder returns."""

    metric: str
    label: str
    config: dict[str, Any]
    aspect_version: AspectVersion | None = None
    template_version_id: int | None = None
    steps_id: int | None = None


@dataclass(frozen=True)
class RunRequest:
    """A run to start. Fields a metric does not use are ignored (and not frozen).

    The typed carrier of the options the runners declare (:mod:`~.options`, each
    runner's ``options``): a field's default is its option's (a test holds them equal),
    and the form, the API and the command fill it from those declarations.
    ``reference_aggregation`` empty means the metric's convention: ``max`` for GPTScore
    and BERTScore, ``mean`` for ROUGE. ``metric``'s default is the form's, the API's and
    the command's.
    """

    aspect: str = ""
    metric: str = "gptscore"
    setting: str = "IST"
    dimension: str = "src_hypo"
    model: str = "default"
    k: int = 2  # GPTScore's demonstrations (IDM only)
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
    endpoint: str = ""  # a served endpoint's name (GPTScore, G-Eval): scored there, not here
    cost_cap: float | None = None  # a served run stops before spending more than this
    # G-Eval on an endpoint: refuse it unless every label is read exactly (not top-k only)
    require_exact_labels: bool = False
    # pairwise judge: which pairs ("all" within each document, "k" seeded pairs per
    # document, "campaign": a pairwise campaign's), k, the campaign's id, a tie answer
    pairs: str = "all"
    pairs_per_doc: int = 10
    campaign: int | None = None
    ties: bool = False


Builder = Callable[[Dataset, RunRequest, Any], Plan]  # (dataset, request, user) → plan
Preparer = Callable[[MetricRun, list[Output], ModelFactory | None], Scorer]


@dataclass(frozen=True, eq=False)
class Runner:
    """One metric, or a family of metrics scored the same way, as the registry
    (:mod:`studies.services.runs.registry`) knows it. Everything that lists metrics (form
    and API choices, the command's choices, queue routing, the per-aspect rule, page
    labels) reads it from here.

    ``build(dataset, request, user)`` validates a request and freezes the run's
    configuration (raising :class:`RunError`); ``prepare(run, todo, model_factory)`` is
    what the worker calls: it loads what the run scores with and returns the scorer.
    """

    names: tuple[str, ...]  # the metric names it serves (``MetricRun.metric``)
    label: str  # what pages call it
    build: Builder
    prepare: Preparer
    queue: Queue = "gpu"
    per_aspect: bool = False  # one run per aspect, and at least one aspect is needed
    # the options it reads besides every run's (:data:`~.options.COMMON`), declared once:
    # the form's and the API's fields and the command's flags are derived from them
    options: tuple[Option, ...] = ()
    checks_model: bool = True  # ``request.model`` names a model that must be allowed
    labels: Mapping[str, str] = field(default_factory=dict)  # a name's own label, if any
    group: str = ""  # one choice for all its names: a request for it starts one run each
    hint: str = ""  # added to the label in the form's choices
    page: str = ABOUT_PAGE  # the run page's part on its runs (``part``: summary, details)
    # the documents one of its trained models held out on a dataset (``--test-docs-of``)
    test_docs: Callable[[int, str], tuple[str, ...]] | None = None
    # runs on a served endpoint: what the endpoint lacks for a run (None: local models only)
    served: ServedCheck | None = None

    @property
    def fields(self) -> frozenset[str]:
        """The names of its options (the run form's fields it reads besides metric)."""
        return frozenset(o.name for o in self.options)

    def label_of(self, name: str) -> str:
        """What pages call the metric ``name``."""
        return self.labels.get(name, self.label)

    def choices(self) -> list[tuple[str, str]]:
        """Its choices in the run form and the API: its group, else each name."""
        if self.group:
            return [(self.group, f"{self.label} {self.hint}".strip())]
        return [(n, f"{self.label_of(n)} {self.hint}".strip()) for n in self.names]
