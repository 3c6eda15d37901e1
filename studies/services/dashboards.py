"""Correlation matrices, drill-downs and paper tables, computed from stored scores and
cached under a key that includes the dataset's ``data_version`` (any change to its
outputs, judgments or scores gives a new key; nothing is kept as a running total).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

import numpy as np
from django.conf import settings
from django.core.cache import cache

from scoring.stats import (
    Coefficient,
    DegeneratePolicy,
    Groups,
    Level,
    Unit,
    bootstrap_distribution,
    correlate,
    draw_resamples,
    intercorrelation,
)
from studies.models import Dataset, Output
from studies.services.frames import ScoreFrame, load_frame, restrict_to_documents

log = logging.getLogger(__name__)
ALPHA = 0.05
COEFFICIENT_NAMES = {
    "pearson": Coefficient.PEARSON,
    "spearman": Coefficient.SPEARMAN,
    "kendall": Coefficient.KENDALL_B,
    "kendall_c": Coefficient.KENDALL_C,
}
COEFFICIENT_LABELS = {
    Coefficient.PEARSON: "Pearson r",
    Coefficient.SPEARMAN: "Spearman ρ",
    Coefficient.KENDALL_B: "Kendall τ-b",
    Coefficient.KENDALL_C: "Kendall τ-c",
}


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
    exclude_flagged: bool = False  # leave out annotators flagged on gold items
    test_of: int = 0  # a trained metric's id: only its test documents (0: every document)

    @classmethod
    def from_query(cls, query: Any) -> MatrixParams:
        """Parse request/command values; unknown ones fall back to the defaults."""
        params = cls()
        level = query.get("level", params.level)
        coefficient = query.get("coef", params.coefficient)
        test_of = str(query.get("testof", "") or "")
        return replace(
            params,
            level=level if level in {lv.value for lv in Level} else params.level,
            coefficient=coefficient if coefficient in COEFFICIENT_NAMES else params.coefficient,
            exclude_flagged=query.get("flagged") == "exclude",
            test_of=int(test_of) if test_of.isdigit() else 0,
        )

    @property
    def level_enum(self) -> Level:
        return Level(self.level)

    @property
    def coefficient_enum(self) -> Coefficient:
        return COEFFICIENT_NAMES[self.coefficient]

    @property
    def query(self) -> str:
        """The page's choices as a query string, for links that keep them."""
        choices = {"level": self.level, "coef": self.coefficient}
        if self.exclude_flagged:
            choices["flagged"] = "exclude"
        if self.test_of:
            choices["testof"] = str(self.test_of)
        return urlencode(choices)

    def key(self, dataset: Dataset) -> str:
        # created_at tells apart datasets that reuse a primary key (a rebuilt database)
        identity = [dataset.pk, dataset.created_at.isoformat(), dataset.data_version]
        raw = json.dumps([*identity, asdict(self)], sort_keys=True)
        return "corr:" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def frame_for(dataset: Dataset, params: MatrixParams) -> ScoreFrame:
    """The dataset's scores and judgments, without flagged annotators when asked, and only
    a trained metric's test documents when asked (so no metric is credited for the
    documents a learned metric was trained on)."""
    excluded: set[int] = set()
    if params.exclude_flagged:
        from studies.annotation.services.gold import flagged_for_dataset

        excluded = flagged_for_dataset(dataset)
    frame = load_frame(dataset, exclude_annotators=excluded)
    if params.test_of:
        from learned.models import TrainedMetric

        trained = TrainedMetric.objects.filter(pk=params.test_of).first()
        frame = restrict_to_documents(
            frame, trained.split.get(dataset.name, {}).get("test", []) if trained else []
        )
    return frame


def trained_metrics(dataset: Dataset) -> list[Any]:
    """The dataset's finished learned metrics (for the page's test-documents filter)."""
    from learned.models import TrainedMetric

    return list(TrainedMetric.objects.filter(dataset=dataset, status=TrainedMetric.Status.SUCCEEDED)
                .select_related("aspect").only("pk", "label", "split", "aspect__code"))  # fmt: skip


def excluded_annotators(dataset: Dataset, params: MatrixParams) -> list[str]:
    """The usernames ``params`` leaves out (annotators flagged on gold items)."""
    if not params.exclude_flagged:
        return []
    from django.contrib.auth import get_user_model

    from studies.annotation.services.gold import flagged_for_dataset

    users = get_user_model().objects.filter(pk__in=flagged_for_dataset(dataset))
    return sorted(users.values_list("username", flat=True))


def cached_matrix(dataset: Dataset, params: MatrixParams) -> dict[str, Any] | None:
    result: dict[str, Any] | None = cache.get(params.key(dataset))
    return result


def progress(dataset: Dataset, params: MatrixParams) -> dict[str, int] | None:
    value: dict[str, int] | None = cache.get(params.key(dataset) + ":progress")
    return value


def is_small(dataset: Dataset) -> bool:
    n_outputs = Output.objects.filter(document__dataset=dataset).count()
    limit: int = settings.CONCORDIA["DASHBOARD_INLINE_LIMIT"]
    return n_outputs * max(dataset.runs.count(), 1) <= limit


def available_matrix(dataset: Dataset, params: MatrixParams) -> dict[str, Any] | None:
    """What a page may show now: the cached matrix, or one computed in the request for a
    small dataset; for a large one, None after asking a worker to compute it."""
    result = cached_matrix(dataset, params)
    if result is None and is_small(dataset):
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

    result = compute_matrix(frame_for(dataset, params), params, report)
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


def compute_matrix(
    frame: ScoreFrame,
    params: MatrixParams,
    report: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Correlate every run with every aspect, with bootstrap CIs and a paired bootstrap
    test of each cell against the best run of its column (same resamples)."""
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
        cells, draws = [], []
        for i, run in enumerate(frame.runs):
            metric = frame.metrics[:, i]
            result = correlate(metric, human, level=level, coefficient=coefficient, docs=docs,
                               systems=systems, policy=policy)  # fmt: skip
            cell: dict[str, Any] = {
                "run": run.pk,
                "value": _num(result.value),
                "n_outputs": result.n_outputs,
                "n_documents": result.n_documents,
                "n_systems": result.n_systems,
                "n_skipped": result.n_skipped,
                "low": None,
                "high": None,
            }
            dist = None
            if plan is not None and np.isfinite(result.value):
                dist = bootstrap_distribution(plan, metric, human, level=level, coefficient=coefficient,
                                              policy=policy, estimate=result)  # fmt: skip
                finite = dist[np.isfinite(dist)]
                if finite.size:
                    low, high = np.quantile(finite, [ALPHA / 2, 1 - ALPHA / 2])
                    cell["low"], cell["high"] = float(low), float(high)
            cells.append(cell)
            draws.append(dist)
            if report:
                report(j * len(frame.runs) + i + 1, total)
        _mark_best(cells, draws)
        columns.append({"aspect": asdict(aspect), "cells": cells})
    inter = intercorrelation(frame.human.T, level=level, coefficient=coefficient, docs=docs,
                             systems=systems, policy=policy) if frame.aspects else np.zeros((0, 0))  # fmt: skip
    return {
        "params": asdict(params),
        "intercorrelation": [[_num(v) for v in row] for row in inter],
        "coefficient_label": COEFFICIENT_LABELS[coefficient],
        "runs": [asdict(r) for r in frame.runs],
        "columns": columns,
        "n_outputs": frame.n_outputs,
        "n_documents": len(frame.doc_keys),
        "n_systems": len(frame.system_names),
        "seconds": round(time.perf_counter() - started, 3),
    }


def _mark_best(cells: list[dict[str, Any]], draws: list[np.ndarray | None]) -> None:
    """Flag the best cell of a column and those significantly below it (paired
    bootstrap on the shared resamples, two-sided p < ALPHA)."""
    finite = [k for k, c in enumerate(cells) if c["value"] is not None]
    for cell in cells:
        cell.update(best=False, p_vs_best=None, below_best=False)
    if not finite:
        return
    best = max(finite, key=lambda k: cells[k]["value"])
    cells[best]["best"] = True
    for k in finite:
        if k == best or draws[k] is None or draws[best] is None:
            continue
        delta = cells[best]["value"] - cells[k]["value"]
        diff = draws[best] - draws[k]  # type: ignore[operator]
        diff = diff[np.isfinite(diff)] - delta
        if diff.size:
            p = (1 + np.count_nonzero(np.abs(diff) >= abs(delta))) / (1 + diff.size)
            cells[k]["p_vs_best"] = float(p)
            cells[k]["below_best"] = bool(p < ALPHA)


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
