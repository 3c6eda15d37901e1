"""One matrix cell in detail: the scatter of metric vs human, the per-document
correlations at sample level, and the outputs the two rank most differently."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

import numpy as np
from django.core.cache import cache
from django.urls import reverse
from scipy.stats import rankdata

from scoring.stats import Groups, Level
from studies.models import Dataset, Output
from studies.services.dashboards import MatrixParams, cell_statistic, frame_for

MAX_POINTS = 1500  # a scatter beyond this is a blur; a seeded sample keeps it readable
WIDTH, HEIGHT, PAD = 640, 420, 48
TOP_DISAGREEMENTS = 12
HISTOGRAM_BINS = 20


def drilldown(
    dataset: Dataset, run_pk: int, aspect_pk: int, params: MatrixParams
) -> dict[str, Any] | None:
    """The cell's details (cached like the matrix); None when the run or aspect is unknown."""
    key = "drill:" + params.key(dataset) + f":{run_pk}:{aspect_pk}"
    found: dict[str, Any] | None = cache.get(key)
    if found is None:
        found = _compute(dataset, run_pk, aspect_pk, params)
        if found is not None:
            cache.set(key, found)
    return found


def _compute(
    dataset: Dataset, run_pk: int, aspect_pk: int, params: MatrixParams
) -> dict[str, Any] | None:
    frame = frame_for(dataset, params)
    try:
        i, j = frame.run_index(run_pk), frame.aspect_index(aspect_pk)
    except StopIteration:
        return None
    metric, human = frame.metrics[:, i], frame.human[:, j]
    docs, systems = Groups.from_keys(frame.doc_codes), Groups.from_keys(frame.system_codes)
    result = cell_statistic(metric, human, frame.aspects[j], params, docs, systems)
    valid = np.flatnonzero(np.isfinite(metric) & np.isfinite(human))
    rng = np.random.default_rng(params.seed)
    shown = (
        np.sort(rng.choice(valid, MAX_POINTS, replace=False)) if valid.size > MAX_POINTS else valid
    )
    # rank disagreement over the pooled outputs, as percentiles so both scales compare
    disagreement = np.zeros(0)
    if valid.size:
        pct_m = (rankdata(metric[valid]) - 0.5) / valid.size
        pct_h = (rankdata(human[valid]) - 0.5) / valid.size
        disagreement = pct_m - pct_h
    order = np.argsort(-np.abs(disagreement))[:TOP_DISAGREEMENTS]  # largest gaps first
    top = valid[order] if valid.size else valid
    texts = dict(
        Output.objects.filter(pk__in=frame.output_ids[np.union1d(shown, top)]).values_list(
            "pk", "text"
        )
    )

    def describe(k: int) -> dict[str, Any]:
        pk = int(frame.output_ids[k])
        return {"doc": frame.doc_keys[frame.doc_codes[k]], "system": frame.system_names[frame.system_codes[k]],
                "metric": float(metric[k]), "human": float(human[k]), "text": texts.get(pk, "")[:400],
                "id": pk, "href": reverse("studies:output-detail", args=[pk])}  # fmt: skip

    details: dict[str, Any] = {
        "run": asdict(frame.runs[i]),
        "aspect": asdict(frame.aspects[j]),
        "value": float(result.value) if np.isfinite(result.value) else None,
        "coefficient_label": params.label,
        "epsilon": result.options.epsilon if params.tie_calibration else None,
        "level": params.level,
        "n_outputs": result.n_outputs,
        "n_documents": result.n_documents,
        "n_skipped": result.n_skipped,
        "scatter": _scatter([describe(k) for k in shown]),
        "n_shown": int(shown.size),
        "disagreements": [
            {**describe(k), "gap": float(d)} for k, d in zip(top, disagreement[order], strict=True)
        ],
        "histogram": None,
        # the output browser showing this cell's outputs (scored by the run, judged on the aspect)
        "browse": reverse("studies:dataset-outputs", args=[dataset.pk])
        + "?"
        + urlencode({"run": run_pk, "aspect": frame.aspects[j].code, "sort": f"-run:{run_pk}"}),
    }
    if params.level_enum is Level.SAMPLE and result.per_group is not None:
        details["histogram"] = _histogram(result.per_group)
    return details


def _scale(values: np.ndarray, low_px: float, high_px: float) -> tuple[np.ndarray, float, float]:
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    return low_px + (values - lo) / (hi - lo) * (high_px - low_px), lo, hi


def _scatter(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Points in SVG coordinates (x: metric, y: human, y axis pointing up)."""
    xs, x_lo, x_hi = _scale(np.array([p["metric"] for p in points]), PAD, WIDTH - PAD / 2)
    ys, y_lo, y_hi = _scale(np.array([p["human"] for p in points]), HEIGHT - PAD, PAD / 2)
    for point, x, y in zip(points, xs, ys, strict=True):
        point["x"], point["y"] = round(float(x), 1), round(float(y), 1)
    return {"points": points, "width": WIDTH, "height": HEIGHT, "pad": PAD,
            "x_range": (x_lo, x_hi), "y_range": (y_lo, y_hi)}  # fmt: skip


def _histogram(per_doc: np.ndarray) -> dict[str, Any]:
    values = per_doc[np.isfinite(per_doc)]
    counts, edges = np.histogram(values, bins=HISTOGRAM_BINS, range=(-1.0, 1.0))
    peak = max(int(counts.max()) if counts.size else 0, 1)
    bar = (WIDTH - 2 * PAD) / HISTOGRAM_BINS
    bars = [
        {"x": round(PAD + k * bar, 1), "width": round(bar - 2, 1),
         "height": round(c / peak * (HEIGHT / 2 - PAD), 1), "count": int(c),
         "low": round(float(edges[k]), 2), "high": round(float(edges[k + 1]), 2)}
        for k, c in enumerate(counts)
    ]  # fmt: skip
    return {"bars": bars, "baseline": HEIGHT / 2 - PAD / 2, "n": int(values.size),
            "mean": float(values.mean()) if values.size else None,
            "median": float(np.median(values)) if values.size else None}  # fmt: skip
