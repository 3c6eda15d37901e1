"""Two metric runs of one dataset against each other: a scatter of their scores over the
outputs both scored (coloured by system, each point linking to its output) and how far
they agree (Pearson, Spearman and Kendall over those outputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.core.cache import cache
from scipy import stats

from studies.models import Dataset, MetricRun
from studies.services.analysis import charts
from studies.services.analysis.drilldown import MAX_POINTS, output_href
from studies.services.analysis.frames import load_frame

SEED = 0  # the sample of points shown when there are more than MAX_POINTS, and the jitter


def runs(dataset: Dataset) -> list[MetricRun]:
    """The dataset's runs a comparison may choose from."""
    return list(dataset.runs.order_by("label", "pk").only("pk", "label"))


def parse_run(dataset: Dataset, value: str | None) -> int | None:
    """A run id of this dataset from a query value, or None."""
    try:
        pk = int(value or "")
    except ValueError:
        return None
    return pk if any(r.pk == pk for r in runs(dataset)) else None


def compare(dataset: Dataset, a: int, b: int) -> dict[str, Any]:
    """Run ``a``'s scores against run ``b``'s over the outputs both scored; cached per
    data version (a new or changed score gives a new key)."""
    key = f"compare:v1:{dataset.pk}:{dataset.created_at.isoformat()}:{dataset.data_version}:{a}:{b}"
    found = cache.get(key)
    if isinstance(found, dict):
        return found
    result = _compare(dataset, a, b)
    cache.set(key, result, 24 * 3600)
    return result


def _compare(dataset: Dataset, a: int, b: int) -> dict[str, Any]:
    frame = load_frame(dataset, only_runs=[a, b], only_aspects=[])
    i, j = frame.run_index(a), frame.run_index(b)
    x, y = frame.metrics[:, i], frame.metrics[:, j]
    both = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    rng = np.random.default_rng(SEED)
    shown = np.sort(rng.choice(both, MAX_POINTS, replace=False)) if both.size > MAX_POINTS else both
    label_a, label_b = frame.runs[i].label, frame.runs[j].label
    points = [
        {
            "id": int(frame.output_ids[k]),
            "href": output_href(int(frame.output_ids[k])),
            "system": frame.system_names[frame.system_codes[k]],
            "doc": frame.doc_keys[frame.doc_codes[k]],
            "x": float(x[k]),
            "y": float(y[k]),
        }
        for k in shown
    ]
    agreement: dict[str, float | None] = {"pearson": None, "spearman": None, "kendall": None}
    if both.size >= 3 and np.ptp(x[both]) > 0 and np.ptp(y[both]) > 0:
        agreement = {
            "pearson": float(stats.pearsonr(x[both], y[both])[0]),
            "spearman": float(stats.spearmanr(x[both], y[both])[0]),
            "kendall": float(stats.kendalltau(x[both], y[both], variant="b")[0]),
        }
    return {
        "a": {"pk": a, "label": label_a},
        "b": {"pk": b, "label": label_b},
        "n_outputs": int(both.size),
        "n_shown": int(shown.size),
        **agreement,
        "chart": charts.output_scatter(
            points, x_title=label_a, y_title=label_b, title=f"{label_a} vs {label_b}", rng=rng
        ),
    }
