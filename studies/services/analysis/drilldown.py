"""One matrix cell in detail: the scatter of metric vs human (system means at system
level, the outputs otherwise), per-system bars, the per-document correlations at sample
level, and the outputs the two rank most differently. Charts are Vega-Lite specs built
by studies/services/analysis/charts.py."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

import numpy as np
from django.core.cache import cache
from django.urls import reverse
from scipy.stats import rankdata

from scoring.stats import Groups, Level
from scoring.stats.correlation import system_means
from studies.models import Dataset, Output
from studies.services.analysis import charts
from studies.services.analysis.dashboards import frame_for
from studies.services.analysis.label_cells import label_detail
from studies.services.analysis.matrix import cell_statistic
from studies.services.analysis.params import MatrixParams

MAX_POINTS = 1500  # a scatter beyond this is a blur; a seeded sample keeps it readable
TOP_DISAGREEMENTS = 12
HISTOGRAM_BINS = 20


def drilldown(
    dataset: Dataset, run_pk: int, aspect_pk: int, params: MatrixParams
) -> dict[str, Any] | None:
    """The cell's details (cached like the matrix); None when the run or aspect is unknown."""
    key = "drill:v3:" + params.key(dataset) + f":{run_pk}:{aspect_pk}"  # v3: label statistics
    found: dict[str, Any] | None = cache.get(key)
    if found is None:
        found = _compute(dataset, run_pk, aspect_pk, params)
        if found is not None:
            cache.set(key, found)
    return found


def _compute(
    dataset: Dataset, run_pk: int, aspect_pk: int, params: MatrixParams
) -> dict[str, Any] | None:
    # the cell's run and aspect alone: every output stays, so the groups are the matrix's
    frame = frame_for(dataset, params, only_runs=[run_pk], only_aspects=[aspect_pk])
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
    texts = dict(Output.objects.filter(pk__in=frame.output_ids[top]).values_list("pk", "text"))

    def describe(k: int) -> dict[str, Any]:
        pk = int(frame.output_ids[k])
        return {
            "id": pk,
            "href": output_href(pk),
            "doc": frame.doc_keys[frame.doc_codes[k]],
            "system": frame.system_names[frame.system_codes[k]],
            "metric": float(metric[k]),
            "human": float(human[k]),
            "text": texts.get(pk, "")[:400],
        }

    run_label, aspect_name = frame.runs[i].label, frame.aspects[j].name
    system_level = params.level_enum is Level.SYSTEM
    details: dict[str, Any] = {
        "run": asdict(frame.runs[i]),
        "aspect": asdict(frame.aspects[j]),
        "value": float(result.value) if np.isfinite(result.value) else None,
        "coefficient_label": params.label,
        # a label aspect's MCC (binary) or κ (categorical), F1, TPR/TNR, confusion matrix
        "labels": label_detail(dataset, frame, i, j, params.seed),
        "epsilon": result.options.epsilon if params.tie_calibration else None,
        "level": params.level,
        "n_outputs": result.n_outputs,
        "n_documents": result.n_documents,
        "n_systems": result.n_systems,
        "n_skipped": result.n_skipped,
        "n_shown": int(shown.size),
        "disagreements": [
            {**describe(k), "gap": float(d)} for k, d in zip(top, disagreement[order], strict=True)
        ],
        "scatter": None,
        "system_points": None,
        "histogram": None,
        # the output browser showing this cell's outputs (scored by the run, judged on the aspect)
        "browse": reverse("studies:dataset-outputs", args=[dataset.pk])
        + "?"
        + urlencode({"run": run_pk, "aspect": frame.aspects[j].code, "sort": f"-run:{run_pk}"}),
        "bars": charts.system_bars(
            frame.system_names,
            metric,
            human,
            frame.system_codes,
            metric_title=run_label,
            human_title=f"human {aspect_name}",
        ),
    }
    if system_level:  # the points the system-level correlation is computed from
        ok = np.isfinite(metric) & np.isfinite(human)
        mx, my, present = system_means(metric, human, systems, ok)
        counts = np.bincount(systems.codes[ok], minlength=systems.n_groups)
        rows = [
            {
                "system": frame.system_names[int(systems.keys[g])],
                "x": float(mx[g]),
                "y": float(my[g]),
                "n": int(counts[g]),
            }
            for g in np.flatnonzero(present)
        ]
        details["system_points"] = rows
        details["scatter"] = charts.system_scatter(
            rows,
            x_title=f"mean {run_label}",
            y_title=f"mean human {aspect_name}",
            title=f"{len(rows)} system means",
        )
    else:
        points = [
            {
                "id": int(frame.output_ids[k]),
                "href": output_href(int(frame.output_ids[k])),
                "doc": frame.doc_keys[frame.doc_codes[k]],
                "system": frame.system_names[frame.system_codes[k]],
                "x": float(metric[k]),
                "y": float(human[k]),
            }
            for k in shown
        ]
        details["scatter"] = charts.output_scatter(
            points,
            x_title=run_label,
            y_title=f"human {aspect_name}",
            title=f"{len(points)} outputs",
            rng=np.random.default_rng(params.seed),
        )
    if params.level_enum is Level.SAMPLE and result.per_group is not None:
        details["histogram"] = _histogram(result.per_group)
    return details


def output_href(pk: int) -> str:
    """The output page a drill-down point links to."""
    return reverse("studies:output-detail", args=[pk])


def _histogram(per_doc: np.ndarray) -> dict[str, Any]:
    values = per_doc[np.isfinite(per_doc)]
    return {
        "n": int(values.size),
        "mean": float(values.mean()) if values.size else None,
        "median": float(np.median(values)) if values.size else None,
        "chart": charts.histogram(values, bins=HISTOGRAM_BINS, title="Per-document correlations"),
    }
