"""Metric-corrected system means: each system's mean human score on an aspect estimated
from the few judged outputs and a metric run that scored them all, by prediction-powered
inference (PPI++, :mod:`scoring.stats.ppi`), beside the human-only mean and the
calibrated metric's mean.

The metric is first mapped onto the human scale by a straight line fitted on the judged
outputs, cross-fitted over documents (``FOLDS`` folds, seeded), so that no output's
prediction was fitted on its own judgment. The human score of an output is the mean of
its judgments, with the correlation page's options: flagged annotators left out,
judgments weighted by competence. Results are cached under the dataset's data version.

Reading one run's scores and one aspect's judgments and a few vector operations: well
under a second for a hundred thousand outputs, so this runs in the request.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Q

from scoring.stats.ppi import (
    Estimate,
    calibrate,
    document_folds,
    fit_linear,
    system_differences,
    system_means,
)
from studies.models import Aspect, Dataset, Judgment, MetricRun
from studies.services.analysis.dashboards import frame_for
from studies.services.analysis.params import MatrixParams

FOLDS = 5
CONFIDENCE = 0.95
METHOD = "PPI++ (power-tuned prediction-powered inference)"
VERSION = 2  # 2: no interval below MIN_JUDGED judged outputs


@dataclass(frozen=True)
class PPIQuery:
    """What a table depends on besides the data. ``reference``: the system the
    differences are taken against ("" for the one with the highest PPI mean)."""

    run: int
    aspect: int
    reference: str = ""
    exclude_flagged: bool = False
    weight_by_competence: bool = False
    folds: int = FOLDS
    seed: int = 0

    def key(self, dataset: Dataset) -> str:
        identity = [dataset.pk, dataset.created_at.isoformat(), dataset.data_version, VERSION]
        raw = json.dumps([*identity, asdict(self)], sort_keys=True)
        return "ppi:" + hashlib.sha256(raw.encode()).hexdigest()[:32]


# Below this many judged outputs (per system, or per pair of systems) no interval is shown,
# nor the numbers derived from the variances: a normal approximation on three outputs
# gives "4.333 [4.333, 4.333]", which claims far more than it knows.
MIN_JUDGED = 8


def run_choices(dataset: Dataset) -> list[MetricRun]:
    """The dataset's runs, the most complete first (the page's default): by the outputs
    each scored, then by label."""
    runs = MetricRun.objects.filter(dataset=dataset).annotate(
        n_scored=Count("scores", filter=Q(scores__value__isnull=False))
    )
    return sorted(runs, key=lambda run: (-run.n_scored, run.label, run.pk))


def _too_few(n_judged: int) -> str:
    """Why a row shows no interval ("" when it may)."""
    if n_judged >= MIN_JUDGED:
        return ""
    return f"{n_judged} judged output{'s' if n_judged != 1 else ''}: no interval below {MIN_JUDGED}"


def _guarded(
    row: dict[str, Any], estimates: tuple[str, ...], derived: tuple[str, ...]
) -> dict[str, Any]:
    """The row without intervals, standard errors and variance-derived numbers when it
    has too few judged outputs (``no_interval`` says why)."""
    row["no_interval"] = _too_few(row["n_judged"])
    if row["no_interval"]:
        for name in estimates:
            row[name] = {**row[name], "se": None, "low": None, "high": None}
        for name in derived:
            row[name] = None
        if "significant" in row:
            row["significant"] = False
    return row


def aspect_choices(dataset: Dataset) -> list[Aspect]:
    """The aspects the dataset has judgments of."""
    judged = Judgment.objects.filter(output__document__dataset=dataset).values("aspect_id")
    return list(Aspect.objects.filter(pk__in=judged).order_by("code"))


def ppi_table(dataset: Dataset, query: PPIQuery) -> dict[str, Any]:
    """The per-system table (cached); the run and aspect must belong to the dataset."""
    key = query.key(dataset)
    found: dict[str, Any] | None = cache.get(key)
    if found is None:
        found = compute_table(dataset, query)
        cache.set(key, found)
    return found


def compute_table(dataset: Dataset, query: PPIQuery) -> dict[str, Any]:
    started = time.perf_counter()
    params = MatrixParams(
        exclude_flagged=query.exclude_flagged, weight_by_competence=query.weight_by_competence
    )
    frame = frame_for(dataset, params, only_runs=[query.run], only_aspects=[query.aspect])
    if not frame.runs or not frame.aspects:
        raise ValueError("the run and the aspect must belong to the dataset")
    metric, human = frame.metrics[:, 0], frame.human[:, 0]
    folds = document_folds(frame.doc_codes, query.folds, np.random.default_rng(query.seed))
    predicted = calibrate(metric, human, folds)
    means = system_means(
        predicted, human, frame.system_codes, frame.doc_codes, confidence=CONFIDENCE
    )
    names = frame.system_names
    reference = _reference(query.reference, names, means.ppi.value)
    systems = [
        _guarded(
            {
                "system": name,
                "n_total": int(means.n_total[s]),
                "n_judged": int(means.n_labelled[s]),
                "human": _estimate(means.human, s),
                "metric": _estimate(means.metric, s),
                "ppi": _estimate(means.ppi, s),
                "lam": _num(means.lam[s]),
                "variance_ratio": _num(means.variance_ratio[s]),
                "saved": _num(means.saved[s]),
                "effective_judged": _num(means.effective_labelled[s]),
            },
            ("human", "metric", "ppi"),
            ("lam", "variance_ratio", "saved", "effective_judged"),
        )
        for s, name in enumerate(names)
    ]
    differences = []
    if reference is not None:
        diffs = system_differences(
            predicted,
            human,
            frame.system_codes,
            frame.doc_codes,
            names.index(reference),
            confidence=CONFIDENCE,
        )
        differences = [
            _guarded(
                {
                    "system": name,
                    "n_documents": int(diffs.n_total[s]),
                    "n_judged": int(diffs.n_labelled[s]),
                    "human": _estimate(diffs.human, s),
                    "ppi": _estimate(diffs.ppi, s),
                    "variance_ratio": _num(diffs.variance_ratio[s]),
                    "significant": bool(_excludes_zero(diffs.ppi, s)),
                },
                ("human", "ppi"),
                ("variance_ratio",),
            )
            for s, name in enumerate(names)
            if name != reference
        ]
    line = fit_linear(metric, human)
    scored = np.isfinite(metric)
    return {
        "method": METHOD,
        "confidence": CONFIDENCE,
        "query": asdict(query),
        "run": asdict(frame.runs[0]),
        "aspect": asdict(frame.aspects[0]),
        "n_outputs": frame.n_outputs,
        "n_scored": int(scored.sum()),
        "n_judged": int((scored & np.isfinite(human)).sum()),
        "calibration": {
            "intercept": _num(line.intercept),
            "slope": _num(line.slope),
            "n": line.n,
            "folds": query.folds,
        },
        "systems": systems,
        "reference": reference,
        "differences": differences,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _reference(wanted: str, names: list[str], values: np.ndarray) -> str | None:
    if wanted in names:
        return wanted
    finite = np.flatnonzero(np.isfinite(values))
    return names[int(finite[np.argmax(values[finite])])] if finite.size else None


def _estimate(estimate: Estimate, s: int) -> dict[str, float | None]:
    return {
        "value": _num(estimate.value[s]),
        "se": _num(estimate.se[s]),
        "low": _num(estimate.low[s]),
        "high": _num(estimate.high[s]),
    }


def _excludes_zero(estimate: Estimate, s: int) -> bool:
    low, high = estimate.low[s], estimate.high[s]
    return bool(np.isfinite(low) and np.isfinite(high) and (low > 0 or high < 0))


def _num(value: Any) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None


class UnknownChoice(LookupError):
    """A run or aspect id in the query that the dataset does not have."""


def parse_query(
    dataset: Dataset, query: Any
) -> tuple[PPIQuery | None, list[MetricRun], list[Aspect]]:
    """The page's (or API's) query: ``run`` and ``aspect`` ids (default: the first run
    by label, the first judged aspect by code), ``vs`` (the reference system), and the
    correlation page's ``flagged`` and ``weights``. None when the dataset has no run or
    no judgments; :class:`UnknownChoice` for an id that is not the dataset's."""
    runs, aspects = run_choices(dataset), aspect_choices(dataset)
    run = _pick(query.get("run"), runs, "run")
    aspect = _pick(query.get("aspect"), aspects, "judged aspect")
    if run is None or aspect is None:
        return None, runs, aspects
    options = MatrixParams.from_query(query)
    found = PPIQuery(
        run=run.pk,
        aspect=aspect.pk,
        reference=str(query.get("vs") or ""),
        exclude_flagged=options.exclude_flagged,
        weight_by_competence=options.weight_by_competence,
    )
    return found, runs, aspects


def _pick(raw: Any, choices: list[Any], what: str) -> Any:
    text = str(raw or "").strip()
    if not text:
        return choices[0] if choices else None
    found = next((c for c in choices if str(c.pk) == text), None)
    if found is None:
        raise UnknownChoice(f"No {what} with id {text} in this dataset.")
    return found
