"""Correlation matrices, drill-downs and paper tables, computed from stored scores and
cached under a key that includes the dataset's ``data_version`` (any change to its
outputs, judgments or scores gives a new key; nothing is kept as a running total).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

import numpy as np
from django.core.cache import cache
from django.db.models import Q

from scoring.stats import (
    TIE_COEFFICIENTS,
    Alternative,
    Average,
    Coefficient,
    CorrelationResult,
    DegeneratePolicy,
    Groups,
    Level,
    Options,
    Resamples,
    Unit,
    Unsupported,
    average_ranks,
    bootstrap_distribution,
    calibrate_ties,
    cluster,
    correlate,
    coverage,
    draw_resamples,
    intercorrelation,
    paired_bootstrap_p,
    paired_bootstrap_test,
    scored,
    unsupported,
)
from studies.models import Dataset, ImportJob, Judgment
from studies.services.frames import AspectInfo, ScoreFrame, load_frame, restrict_to_documents
from studies.services.matrix_cost import is_cheap
from studies.services.sentinels import mark_sentinels

log = logging.getLogger(__name__)
ALPHA = 0.05
COEFFICIENT_NAMES = {
    "pearson": Coefficient.PEARSON,
    "spearman": Coefficient.SPEARMAN,
    "kendall": Coefficient.KENDALL_B,
    "kendall_c": Coefficient.KENDALL_C,
    "kendall_23": Coefficient.KENDALL_23,
    "acc23": Coefficient.ACC23,
    "kendall_like": Coefficient.KENDALL_LIKE,
    "pdp": Coefficient.PDP,
    "spa": Coefficient.SPA,
}
COEFFICIENT_LABELS = {
    Coefficient.PEARSON: "Pearson r",
    Coefficient.SPEARMAN: "Spearman ρ",
    Coefficient.KENDALL_B: "Kendall τ-b",
    Coefficient.KENDALL_C: "Kendall τ-c",
    Coefficient.KENDALL_23: "Kendall τ23",
    Coefficient.ACC23: "Pairwise accuracy acc23",
    Coefficient.KENDALL_LIKE: "Kendall-like τ (WMT20)",
    Coefficient.PDP: "Pairwise difference Pearson",
    Coefficient.SPA: "Soft pairwise accuracy (SPA)",
}
AVERAGES = ("macro", "micro")
SOURCE_PATTERN = re.compile(r"(import|campaign):[0-9]{1,12}|file:[^\x00-\x1f]{1,255}")
NO_JUDGMENT = Q(pk__isnull=True)  # matches no row (an empty IN list cannot be raw SQL)
DEFAULT_MIN_COVERAGE = 0.9
# Kendall-like counts the pairs whose human scores differ by at least this share of the
# aspect's scale: WMT20's 25 points on DA's 0-100.
KENDALL_LIKE_SHARE = 0.25


@dataclass(frozen=True)
class MatrixParams:
    """Everything a matrix depends on besides the data."""

    level: str = "sample"
    coefficient: str = "spearman"
    ci: bool = True
    resamples: int = 1000
    unit: str = "documents"
    seed: int = 0
    policy: str = "skip"
    average: str = "macro"  # sample level: documents count the same (macro) or by size (micro)
    tie_calibration: bool = False  # acc23, kendall_23: metric ties within the best ε
    exclude_flagged: bool = False  # leave out annotators flagged on gold items
    weight_by_competence: bool = False  # mean of judgments weighted by MACE competence
    test_of: int = 0  # a trained metric's id: only its test documents (0: every document)
    # whose judgments make the human side: "" (all), "import:<job id>" (one uploaded
    # file), "file:<name>" (a file imported without a job, e.g. by the import command)
    # or "campaign:<id>" (the answers given in one campaign)
    source: str = ""
    # a run scoring less than this share of a column's judged outputs is greyed, never best
    min_coverage: float = DEFAULT_MIN_COVERAGE

    @classmethod
    def from_query(cls, query: Any) -> MatrixParams:
        """Parse request/command values; unknown ones fall back to the defaults, and an
        option that does not apply to the chosen statistic (tie calibration, micro
        averaging) is dropped. A statistic asked at a level where it does not exist
        stays, for :attr:`problem` to explain."""
        params = cls()
        level = query.get("level", params.level)
        coefficient = query.get("coef", params.coefficient)
        average = query.get("average", params.average)
        test_of = str(query.get("testof", "") or "")
        min_coverage = parse_min_coverage(query.get("mincov"))
        source = str(query.get("source", "") or "")
        return replace(
            params,
            level=level if level in {lv.value for lv in Level} else params.level,
            coefficient=coefficient if coefficient in COEFFICIENT_NAMES else params.coefficient,
            average=average if average in AVERAGES else params.average,
            tie_calibration=query.get("ties") == "calibrate",
            exclude_flagged=query.get("flagged") == "exclude",
            weight_by_competence=query.get("weights") == "competence",
            test_of=int(test_of) if test_of.isdigit() else 0,
            source=source if SOURCE_PATTERN.fullmatch(source) else "",
            min_coverage=params.min_coverage if min_coverage is None else min_coverage,
        ).applicable()

    def applicable(self) -> MatrixParams:
        """These parameters without the options the statistic ignores."""
        params = self
        if params.tie_calibration and self.coefficient_enum not in TIE_COEFFICIENTS:
            params = replace(params, tie_calibration=False)
        if params.average != "macro" and unsupported(
            self.coefficient_enum, self.level_enum, average=Average(params.average)
        ):
            params = replace(params, average="macro")
        return params

    @property
    def problem(self) -> Unsupported | None:
        """Why these parameters name no statistic (e.g. SPA at sample level), or None."""
        return unsupported(
            self.coefficient_enum,
            self.level_enum,
            average=self.average_enum,
            tie_calibration=self.tie_calibration,
        )

    @property
    def level_enum(self) -> Level:
        return Level(self.level)

    @property
    def coefficient_enum(self) -> Coefficient:
        return COEFFICIENT_NAMES[self.coefficient]

    @property
    def average_enum(self) -> Average:
        return Average(self.average)

    @property
    def label(self) -> str:
        """The statistic's name with its options (tie calibration, micro average)."""
        label = COEFFICIENT_LABELS[self.coefficient_enum]
        if self.tie_calibration:
            label += ", tie-calibrated"
        if self.average == "micro":
            label += ", micro-averaged"
        return label

    @property
    def query(self) -> str:
        """The page's choices as a query string, for links that keep them."""
        choices = {"level": self.level, "coef": self.coefficient}
        if self.average != "macro":
            choices["average"] = self.average
        if self.tie_calibration:
            choices["ties"] = "calibrate"
        if self.exclude_flagged:
            choices["flagged"] = "exclude"
        if self.weight_by_competence:
            choices["weights"] = "competence"
        if self.test_of:
            choices["testof"] = str(self.test_of)
        if self.source:
            choices["source"] = self.source
        if self.min_coverage != DEFAULT_MIN_COVERAGE:
            choices["mincov"] = f"{self.min_coverage * 100:g}"
        return urlencode(choices)

    def key(self, dataset: Dataset) -> str:
        # created_at tells apart datasets that reuse a primary key (a rebuilt database)
        identity = [dataset.pk, dataset.created_at.isoformat(), dataset.data_version]
        raw = json.dumps([*identity, asdict(self)], sort_keys=True)
        return "corr:" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def parse_min_coverage(value: Any) -> float | None:
    """``mincov``, a percentage from 0 to 100, as a share; None when absent or not one."""
    try:
        percent = float(value)
    except (TypeError, ValueError):
        return None
    return round(percent / 100, 6) if 0 <= percent <= 100 else None


def frame_for(
    dataset: Dataset,
    params: MatrixParams,
    *,
    only_runs: Collection[int] | None = None,
    only_aspects: Collection[int] | None = None,
) -> ScoreFrame:
    """The dataset's scores and judgments (only these runs and aspects when given):
    without flagged annotators when asked; with each output's judgments weighted by
    their annotators' MACE competence when asked (annotators without an estimate weigh
    1, see :func:`~annotation.services.competence.competence_weights`); and only
    a trained metric's test documents when asked (so no metric is credited for the
    documents a learned metric was trained on)."""
    excluded: set[int] = set()
    if params.exclude_flagged:
        from annotation.services.gold import flagged_for_dataset

        excluded = flagged_for_dataset(dataset)
    weights = None
    if params.weight_by_competence:
        from annotation.services.competence import competence_weights

        weights = competence_weights(dataset)
    frame = load_frame(
        dataset,
        exclude_annotators=excluded,
        judgment_weights=weights,
        only_runs=only_runs,
        only_aspects=only_aspects,
        judgments=source_filter(dataset, params.source),
    )
    if params.test_of:
        from learned.models import TrainedMetric

        trained = TrainedMetric.objects.filter(pk=params.test_of).first()
        frame = restrict_to_documents(
            frame, trained.split.get(dataset.name, {}).get("test", []) if trained else []
        )
    return frame


def source_filter(dataset: Dataset, source: str) -> Q | None:
    """The judgments a ``source`` choice keeps (None: all): one imported file's (an import
    job of this dataset, by its file name, or a file name) or one campaign's answers (a
    campaign of a study on this dataset); an unknown one keeps none."""
    if not source:
        return None
    kind, _, raw = source.partition(":")
    if kind == "file":
        return Q(annotator__isnull=True, import_file=raw)
    if kind == "import":
        name = (
            ImportJob.objects.filter(pk=int(raw), dataset=dataset)
            .values_list("original_name", flat=True)
            .first()
        )
        return Q(annotator__isnull=True, import_file=name) if name else NO_JUDGMENT
    from annotation.models import Campaign
    from annotation.services.report import campaign_judgments

    if not Campaign.objects.filter(pk=int(raw), study__dataset=dataset).exists():
        return NO_JUDGMENT
    return Q(pk__in=campaign_judgments(int(raw)).values("pk"))


def judgment_sources(dataset: Dataset) -> list[tuple[str, str]]:
    """What the page's source control offers: the dataset's uploaded files, the files
    imported without an upload (the import command), then the campaigns of its studies
    (value, label). Cached per data version (a campaign's first answer changes it) for
    five minutes, so the cached page stays a handful of queries."""
    key = f"judgment-sources:{dataset.pk}:{dataset.created_at.isoformat()}:{dataset.data_version}"
    found = cache.get(key)
    if isinstance(found, list):
        return found
    choices = _judgment_sources(dataset)
    cache.set(key, choices, 300)
    return choices


def _judgment_sources(dataset: Dataset) -> list[tuple[str, str]]:
    from annotation.models import Campaign

    jobs = ImportJob.objects.filter(dataset=dataset, status=ImportJob.Status.SUCCEEDED)
    uploaded = list(jobs.order_by("created_at").values_list("pk", "original_name"))
    choices = [(f"import:{pk}", f"imported file {name}") for pk, name in uploaded]
    files = (
        Judgment.objects.filter(output__document__dataset=dataset, annotator__isnull=True)
        .order_by("import_file")
        .values_list("import_file", flat=True)
        .distinct()
    )
    named = {name for _, name in uploaded}
    choices += [(f"file:{name}", f"imported file {name}") for name in files if name not in named]
    campaigns = Campaign.objects.filter(study__dataset=dataset).order_by("created_at")
    choices += [
        (f"campaign:{pk}", f"campaign {name}") for pk, name in campaigns.values_list("pk", "name")
    ]
    return choices


def trained_metrics(dataset: Dataset) -> list[Any]:
    """The dataset's finished learned metrics (for the page's test-documents filter)."""
    from learned.models import TrainedMetric

    return list(
        TrainedMetric.objects.filter(dataset=dataset, status=TrainedMetric.Status.SUCCEEDED)
        .select_related("aspect")
        .only("pk", "label", "split", "aspect__code")
    )


def excluded_annotators(dataset: Dataset, params: MatrixParams) -> list[str]:
    """The usernames ``params`` leaves out (annotators flagged on gold items)."""
    if not params.exclude_flagged:
        return []
    from django.contrib.auth import get_user_model

    from annotation.services.gold import flagged_for_dataset

    users = get_user_model().objects.filter(pk__in=flagged_for_dataset(dataset))
    return sorted(users.values_list("username", flat=True))


def cached_matrix(dataset: Dataset, params: MatrixParams) -> dict[str, Any] | None:
    result: dict[str, Any] | None = cache.get(params.key(dataset))
    return result


def progress(dataset: Dataset, params: MatrixParams) -> dict[str, int] | None:
    value: dict[str, int] | None = cache.get(params.key(dataset) + ":progress")
    return value


def available_matrix(dataset: Dataset, params: MatrixParams) -> dict[str, Any] | None:
    """What a page may show now: the cached matrix, or one computed in the request when
    it is estimated cheap (:func:`~studies.services.matrix_cost.is_cheap`); else None
    after asking a worker to compute it."""
    result = cached_matrix(dataset, params)
    if result is None and is_cheap(dataset, params):
        result = compute_and_cache(dataset, params)
    if result is None:
        request_matrix(dataset, params)
    return result


def matrix_for(dataset: Dataset, params: MatrixParams) -> dict[str, Any]:
    """The cached matrix, computing and caching it first if needed."""
    return cached_matrix(dataset, params) or compute_and_cache(dataset, params)


def compute_and_cache(dataset: Dataset, params: MatrixParams) -> dict[str, Any]:
    key = params.key(dataset)

    def report(done: int, total: int) -> None:
        cache.set(key + ":progress", {"done": done, "total": total}, 600)

    frame = frame_for(dataset, params)
    result = compute_matrix(frame, params, report)
    from studies.services.ceiling import ceiling_row  # it imports this module

    result["ceiling"] = ceiling_row(dataset, frame, params)
    cache.set(key, result)
    cache.delete(key + ":progress")
    return result


def request_matrix(dataset: Dataset, params: MatrixParams) -> bool:
    """Enqueue the computation unless one is already under way; True if enqueued."""
    from studies.tasks import compute_correlations

    key = params.key(dataset)
    if not cache.add(key + ":progress", {"done": 0, "total": 0}, 600):
        return False
    compute_correlations.delay(dataset.pk, asdict(params))
    return True


# --- the matrix -----------------------------------------------------------------------


def statistic_options(aspect: AspectInfo) -> Options:
    """The pairwise statistics' settings for an aspect: Kendall-like counts pairs whose
    human scores differ by a quarter of the aspect's scale."""
    return Options(threshold=KENDALL_LIKE_SHARE * max(aspect.scale_max - aspect.scale_min, 1e-12))


def cell_statistic(
    metric: np.ndarray,
    human: np.ndarray,
    aspect: AspectInfo,
    params: MatrixParams,
    docs: Groups,
    systems: Groups,
) -> CorrelationResult:
    """One matrix cell's statistic (the page, the drill-down and the command share it);
    with tie calibration, ``result.options.epsilon`` is the calibrated ε."""
    level, coefficient, average = params.level_enum, params.coefficient_enum, params.average_enum
    options = statistic_options(aspect)
    calibration = None
    if params.tie_calibration:
        calibration = calibrate_ties(
            metric,
            human,
            level=level,
            coefficient=coefficient,
            docs=docs,
            average=average,
            rng=np.random.default_rng(params.seed),
        )
        options = replace(options, epsilon=calibration.epsilon)
    return correlate(
        metric,
        human,
        level=level,
        coefficient=coefficient,
        docs=docs,
        systems=systems,
        policy=DegeneratePolicy(params.policy),
        average=average,
        options=options,
        calibration=calibration,
    )


def compute_matrix(
    frame: ScoreFrame,
    params: MatrixParams,
    report: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Correlate every run with every aspect, with bootstrap CIs, and rank the runs of
    each aspect into significance clusters (one-sided paired bootstrap on the shared
    resamples, as WMT ranks metrics; the best run and those below it follow)."""
    refusal = params.problem
    if refusal is not None:
        raise ValueError(refusal.message)
    started = time.perf_counter()
    level, coefficient = params.level_enum, params.coefficient_enum
    policy = DegeneratePolicy(params.policy)
    docs = Groups.from_keys(frame.doc_codes)
    systems = Groups.from_keys(frame.system_codes)
    plan = None
    if params.ci and frame.n_outputs:
        unit = Unit.SYSTEMS if level is Level.SYSTEM else Unit(params.unit)
        rng = np.random.default_rng(params.seed)
        plan = draw_resamples(rng, docs, systems, unit=unit, resamples=params.resamples)
    columns = []
    total = len(frame.aspects) * len(frame.runs)
    for j, aspect in enumerate(frame.aspects):
        human = frame.human[:, j]
        cells, draws, options = [], [], []
        for i, run in enumerate(frame.runs):
            metric = frame.metrics[:, i]
            result = cell_statistic(metric, human, aspect, params, docs, systems)
            options.append(result.options)
            covered = coverage(metric, human, frame.doc_codes)
            cell: dict[str, Any] = {
                "run": run.pk,
                "value": _num(result.value),
                "n_outputs": result.n_outputs,
                "n_documents": result.n_documents,
                "n_systems": result.n_systems,
                "n_skipped": result.n_skipped,
                "low": None,
                "high": None,
                "epsilon": result.options.epsilon if params.tie_calibration else None,
                "coverage_outputs": covered.n_outputs,
                "coverage_documents": covered.n_documents,
                "judged_outputs": covered.of_outputs,
                "judged_documents": covered.of_documents,
                "coverage": covered.share,
                "partial": covered.share < params.min_coverage,
            }
            dist = None
            if plan is not None and np.isfinite(result.value):
                dist = bootstrap_distribution(
                    plan,
                    metric,
                    human,
                    level=level,
                    coefficient=coefficient,
                    policy=policy,
                    average=params.average_enum,
                    options=result.options,
                    estimate=result,
                )
                finite = dist[np.isfinite(dist)]
                if finite.size:
                    low, high = np.quantile(finite, [ALPHA / 2, 1 - ALPHA / 2])
                    cell["low"], cell["high"] = float(low), float(high)
            cells.append(cell)
            draws.append(dist)
            if report:
                report(j * len(frame.runs) + i + 1, total)
        used = [scored(frame.metrics[:, i], human) for i in range(len(frame.runs))]
        compare = comparer(plan, frame.metrics, human, options, params)
        for cell, run in zip(cells, frame.runs, strict=True):
            cell["sentinel"] = run.sentinel  # never ranked or best
        rank_column(cells, draws if plan is not None else None, used, compare)
        mark_sentinels(cells, frame.runs, draws if plan is not None else None, used, compare)
        columns.append({"aspect": asdict(aspect), "cells": cells})
    ranked = average_ranks([{str(c["run"]): c["rank"] for c in col["cells"]} for col in columns])
    inter_coefficient = (
        Coefficient.KENDALL_B if coefficient is Coefficient.KENDALL_LIKE else coefficient
    )  # Kendall-like is not symmetric in its two sides
    inter = (
        intercorrelation(
            frame.human.T,
            level=level,
            coefficient=inter_coefficient,
            docs=docs,
            systems=systems,
            policy=policy,
        )
        if frame.aspects
        else np.zeros((0, 0))
    )
    return {
        "params": asdict(params),
        "intercorrelation": [[_num(v) for v in row] for row in inter],
        "intercorrelation_label": COEFFICIENT_LABELS[inter_coefficient],
        "coefficient_label": params.label,
        "runs": [asdict(r) for r in frame.runs],
        "average_rank": [ranked.get(str(r.pk)) if columns else None for r in frame.runs],
        "columns": columns,
        "n_outputs": frame.n_outputs,
        "n_documents": len(frame.doc_keys),
        "n_systems": len(frame.system_names),
        "seconds": round(time.perf_counter() - started, 3),
    }


def comparer(
    plan: Resamples | None,
    metrics: np.ndarray,
    human: np.ndarray,
    options: list[Options],
    params: MatrixParams,
) -> Callable[[int, int], float]:
    """``p(a, b)``: the one-sided paired bootstrap p that run a beats run b on the
    outputs both scored (both recomputed there on ``plan``'s resamples)."""

    def p_on_shared(a: int, b: int) -> float:
        if plan is None:
            return float("nan")
        return paired_bootstrap_test(
            plan,
            metrics[:, a],
            metrics[:, b],
            human,
            level=params.level_enum,
            coefficient=params.coefficient_enum,
            policy=DegeneratePolicy(params.policy),
            alternative=Alternative.GREATER,
            average=params.average_enum,
            options=options[a],
            options_b=options[b],
        ).p_value

    return p_on_shared


def rank_column(
    cells: list[dict[str, Any]],
    draws: list[np.ndarray | None] | None,
    used: list[np.ndarray],
    p_on_shared: Callable[[int, int], float],
) -> None:
    """Rank one aspect's cells into significance clusters (WMT's AssignRanks on
    one-sided paired bootstrap p-values over the shared resamples) and flag the best
    cell and those significantly below it (p ≤ ALPHA against the best). Without
    ``draws`` (no intervals asked) there is no test: no ranks, no marks but the best.

    Only runs that are not ``partial`` (below the coverage threshold) nor ``sentinel``
    are ranked and may be best; a partial run is only tested against the best. Two runs are compared
    on the outputs both scored (``used``): with the same outputs, on their draws; else
    ``p_on_shared`` recomputes both on the shared outputs. Each cell records how many
    outputs it shares with the best (``n_shared_with_best``)."""
    values = [np.nan if c["value"] is None else float(c["value"]) for c in cells]

    def p_better(a: int, b: int) -> float:
        assert draws is not None
        draw_a, draw_b = draws[a], draws[b]
        if draw_a is None or draw_b is None:
            return float("nan")
        if not np.array_equal(used[a], used[b]):
            return p_on_shared(a, b)
        return paired_bootstrap_p(draw_a, draw_b, values[a], values[b], Alternative.GREATER)

    ranked = [
        np.nan if c["partial"] or c.get("sentinel") else v
        for c, v in zip(cells, values, strict=True)
    ]
    clusters = cluster(ranked, p_better if draws is not None else None, ALPHA)
    position = {int(k): n for n, k in enumerate(clusters.order)}
    best = int(clusters.order[0]) if clusters.order.size else -1
    for k, cell in enumerate(cells):
        p = None
        if draws is not None and k != best and best >= 0:
            if k in position:
                p = _num(float(clusters.sig[0, position[k]]))
            elif np.isfinite(values[k]):
                p = _num(p_better(best, k))
        shared = int((used[k] & used[best]).sum()) if best >= 0 else None
        cell.update(
            best=k == best,
            rank=clusters.ranks[k],
            p_vs_best=p,
            below_best=p is not None and p <= ALPHA,
            n_shared_with_best=shared,
        )


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
