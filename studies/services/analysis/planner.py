"""The sample-size planner: from a dataset's per-document correlations, the CI
half-width of a metric's (and of two metrics' difference in) sample-level correlation
as a function of the number of documents, and the documents needed to separate the two
at p < 0.05 with 80% power (:mod:`scoring.stats.planner`).

A plan takes a few seconds, so a worker computes it (``studies.tasks.compute_planner``)
and caches it under a key that includes the dataset's ``data_version``; pages and the
API show a pending state meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

import numpy as np
from django.core.cache import cache
from django.urls import reverse

from scoring.stats import Average, DegeneratePolicy, Groups, Level, unsupported
from scoring.stats import planner as stats_planner
from scoring.stats.correlation import Coefficient, sample_level
from studies.models import Aspect, Dataset, MetricRun
from studies.services import queue
from studies.services.analysis import charts
from studies.services.analysis.frames import load_frame
from studies.services.analysis.matrix import statistic_options
from studies.services.analysis.params import COEFFICIENT_LABELS, COEFFICIENT_NAMES
from studies.services.jobs import track

PENDING_SECONDS = 600
SERIES_NAMES = {"half_width_a": "a", "half_width_b": "b", "half_width_diff": "a − b"}


class UnknownChoice(ValueError):
    """A run or aspect that is not the dataset's."""


@dataclass(frozen=True)
class PlannerParams:
    """What a plan depends on besides the data: the aspect, run a (and run b to compare
    with), the statistic, the seed and the simulation sizes."""

    aspect: int = 0
    a: int = 0
    b: int = 0
    level: str = "sample"
    coefficient: str = "spearman"
    average: str = "macro"
    policy: str = "skip"
    seed: int = 0
    resamples: int = 1000  # bootstrap draws per size for the half-widths
    trials: int = 200  # simulated studies per size for the power
    inner: int = 200  # bootstrap draws within each simulated study

    @classmethod
    def from_query(cls, query: Any) -> PlannerParams:
        """Parse request values; unknown ones fall back to the defaults."""

        def number(name: str) -> int:
            raw = str(query.get(name, "") or "")
            return int(raw) if raw.isdigit() else 0

        params = cls()
        coefficient = query.get("coef", params.coefficient)
        average = query.get("average", params.average)
        return replace(
            params,
            aspect=number("aspect"),
            a=number("a"),
            b=number("b"),
            level=str(query.get("level", params.level)),
            coefficient=coefficient if coefficient in COEFFICIENT_NAMES else params.coefficient,
            average=average if average in ("macro", "micro") else params.average,
            seed=number("seed"),
        )

    @property
    def coefficient_enum(self) -> Coefficient:
        return COEFFICIENT_NAMES[self.coefficient]

    @property
    def problem(self) -> str:
        """Why these parameters cannot be planned ("" when they can)."""
        if self.level != Level.SAMPLE.value:
            return (
                "The planner resamples documents of a sample-level correlation (per document, "
                "then averaged); choose the sample level"
            )
        if self.coefficient_enum is Coefficient.PDP:
            return "Pairwise difference Pearson pools the pairs of every document: no per-document values to resample"
        refusal = unsupported(self.coefficient_enum, Level.SAMPLE, average=Average(self.average))
        return refusal.message if refusal else ""

    @property
    def ready(self) -> bool:
        """Whether an aspect and a run are chosen and the statistic can be planned."""
        return bool(self.aspect and self.a and not self.problem)

    @property
    def query(self) -> str:
        choices = {
            "aspect": self.aspect,
            "a": self.a,
            "b": self.b,
            "level": self.level,
            "coef": self.coefficient,
            "average": self.average,
            "seed": self.seed,
        }
        return urlencode({k: v for k, v in choices.items() if v not in (0, "")})

    @property
    def label(self) -> str:
        label = COEFFICIENT_LABELS[self.coefficient_enum]
        return label + (", micro-averaged" if self.average == "micro" else "")

    def key(self, dataset: Dataset) -> str:
        identity = [dataset.pk, dataset.created_at.isoformat(), dataset.data_version]
        raw = json.dumps([*identity, asdict(self)], sort_keys=True)
        return "planner:v2:" + hashlib.sha256(raw.encode()).hexdigest()[:32]  # v2: Vega charts


def choices(dataset: Dataset) -> tuple[list[MetricRun], list[Any]]:
    """The runs and the judged aspects a plan may use."""
    runs = list(dataset.runs.order_by("label", "pk").only("pk", "label", "metric", "config"))
    aspects = list(
        Aspect.objects.filter(judgments__output__document__dataset=dataset)
        .distinct()
        .order_by("code")
    )
    return runs, aspects


def validate(dataset: Dataset, params: PlannerParams) -> None:
    """Refuse a run or an aspect the dataset does not have (:class:`UnknownChoice`)."""
    runs, aspects = choices(dataset)
    run_ids = {r.pk for r in runs}
    if params.aspect and params.aspect not in {a.pk for a in aspects}:
        raise UnknownChoice("No such aspect among the dataset's judgments.")
    for pk in (params.a, params.b):
        if pk and pk not in run_ids:
            raise UnknownChoice("No such run in this dataset.")


def cached_plan(dataset: Dataset, params: PlannerParams) -> dict[str, Any] | None:
    found: dict[str, Any] | None = cache.get(params.key(dataset))
    return found


def available_plan(
    dataset: Dataset, params: PlannerParams, user: Any = None
) -> dict[str, Any] | None:
    """The cached plan, or None after asking a worker to compute it (once)."""
    found = cached_plan(dataset, params)
    pending = params.key(dataset) + ":pending"
    if found is None and cache.add(pending, True, PENDING_SECONDS):
        url = reverse("studies:planner", args=[dataset.pk])
        track(pending, "plan", dataset, f"sample-size plan of {dataset.name}", url, user)
        queue.send_on_commit(queue.COMPUTE_PLANNER, dataset.pk, asdict(params))
    return found


def compute_and_cache(dataset: Dataset, params: PlannerParams) -> dict[str, Any]:
    key = params.key(dataset)
    result = compute_plan(dataset, params)
    cache.set(key, result)
    cache.delete(key + ":pending")
    return result


def document_values(
    metric: np.ndarray, human: np.ndarray, docs: Groups, params: PlannerParams, options: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Per-document values and weights of the sample-level statistic (NaN value and
    weight 0 for a skipped document)."""
    part = sample_level(
        metric,
        human,
        docs,
        params.coefficient_enum,
        DegeneratePolicy(params.policy),
        Average(params.average),
        options,
    )
    weights = part.weights if part.weights is not None else np.ones(part.values.size)
    return part.values, weights


def compute_plan(dataset: Dataset, params: PlannerParams) -> dict[str, Any]:
    """The plan for ``params`` (see the module's docstring) as plain data."""
    if not params.ready:
        raise ValueError(params.problem or "choose an aspect and a run")
    started = time.perf_counter()
    runs = [pk for pk in (params.a, params.b) if pk]
    frame = load_frame(dataset, only_runs=runs, only_aspects=[params.aspect])
    aspect = frame.aspects[frame.aspect_index(params.aspect)]
    human = frame.human[:, frame.aspect_index(params.aspect)]
    columns = [frame.metrics[:, frame.run_index(pk)] for pk in runs]
    rows = np.isfinite(human)
    for column in columns:
        rows &= np.isfinite(column)  # the outputs every chosen run scored
    docs = Groups.from_keys(frame.doc_codes[rows])
    options = statistic_options(aspect)
    parts = (
        [document_values(c[rows], human[rows], docs, params, options) for c in columns]
        if rows.any()
        else []
    )
    usable = np.ones(docs.n_groups if rows.any() else 0, dtype=bool)
    for values, weights in parts:
        usable &= np.isfinite(values) & (weights > 0)
    n_docs = int(usable.sum())
    labels = {r.pk: r.label for r in frame.runs}
    result: dict[str, Any] = {
        "params": asdict(params),
        "label": params.label,
        "aspect": aspect.code,
        "a": {"run": params.a, "label": labels.get(params.a, "")},
        "b": {"run": params.b, "label": labels.get(params.b, "")} if params.b else None,
        "n_documents": n_docs,
        "n_outputs": int(rows.sum()),
        "sizes": [],
        "rows": [],
        "needed": None,
        "target_power": stats_planner.TARGET_POWER,
        "alpha": stats_planner.ALPHA,
    }
    if n_docs < 2:
        result["problem"] = (
            "Fewer than two documents where every chosen run and the humans scored outputs."
        )
        result["seconds"] = round(time.perf_counter() - started, 3)
        return result
    rng = np.random.default_rng(params.seed)
    (va, wa), *rest = [(v[usable], w[usable]) for v, w in parts]
    sizes = stats_planner.size_grid(n_docs)
    result["sizes"] = sizes
    result["a"]["value"] = float(np.sum(wa * va) / np.sum(wa))
    series: dict[str, list[float]] = {
        "half_width_a": stats_planner.half_widths(
            va, sizes, rng, weights=wa, resamples=params.resamples
        ).tolist(),
    }
    if rest:
        vb, wb = rest[0]
        result["b"]["value"] = float(np.sum(wb * vb) / np.sum(wb))
        series["half_width_b"] = stats_planner.half_widths(
            vb, sizes, rng, weights=wb, resamples=params.resamples
        ).tolist()
        series["half_width_diff"] = stats_planner.paired_half_widths(
            va, vb, sizes, rng, weights_a=wa, weights_b=wb, resamples=params.resamples
        ).tolist()
        curve = stats_planner.documents_needed(
            va,
            vb,
            sizes,
            rng,
            weights_a=wa,
            weights_b=wb,
            trials=params.trials,
            resamples=params.inner,
        )
        series["power"] = curve.power
        result["needed"] = curve.needed
    result["rows"] = [
        {"n": n, "here": n == n_docs, **{k: v[i] for k, v in series.items()}}
        for i, n in enumerate(sizes)
    ]
    result["chart"] = chart(sizes, series, n_docs)
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def chart(sizes: list[int], series: dict[str, list[float]], here: int) -> dict[str, Any]:
    """A Vega-Lite line chart of the CI half-width against the number of documents (log₂
    x axis): one line per half-width series (a, b, a − b), the dataset's size marked."""
    rows = [
        {"n": n, "series": SERIES_NAMES[k], "value": v[i]}
        for k, v in series.items()
        if k in SERIES_NAMES
        for i, n in enumerate(sizes)
    ]
    return charts.lines(
        rows,
        x="n",
        x_title="documents",
        y_title="CI half-width",
        title="CI half-width against documents",
        log_x=True,
        mark_x=here,
        mark_label=f"this dataset: {here} documents",
    )
