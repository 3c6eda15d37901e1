"""Vega-Lite chart specifications, built from numbers the services computed.

Each function returns a plain dict (a Vega-Lite spec) that a template hands to the page
with ``json_script``; static/js/charts.js draws it with the vendored vega-embed
(static/vendor, see scripts/vendor_charts.sh). Specs carry their data inline, so a test
reads the plotted numbers straight from the dict. No expressions are needed (the page's
content security policy allows Vega only its expression interpreter), so transforms and
conditions stay out of these specs: everything is computed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
WIDTH, HEIGHT = 520, 340
# distinct colours per system: tableau10 up to ten systems, tableau20 (paler pairs) up to 20
SYSTEM_SCHEMES = ((10, "tableau10"), (20, "tableau20"))
JITTER_SHARE = 0.3  # of the smallest gap between two distinct tied values
CONFIDENCE = 0.95


def _base(title: str, description: str, **size: Any) -> dict[str, Any]:
    return {
        "$schema": SCHEMA,
        "title": title,
        "description": description,
        "width": size.get("width", WIDTH),
        "height": size.get("height", HEIGHT),
        "config": {"view": {"stroke": "#dde3ee"}, "font": "system-ui, sans-serif"},
    }


def _clean(value: float | None, digits: int = 6) -> float | None:
    """A JSON-safe number (NaN and infinities become null)."""
    if value is None or not np.isfinite(value):
        return None
    return round(float(value), digits)


def jitter(values: Sequence[float] | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Plotting positions for ``values``: where values tie (Likert ratings, argmax scores),
    each point moves by a uniform offset of at most ``JITTER_SHARE`` of the smallest gap
    between distinct values, so tied points spread out but never reach a neighbouring
    level. Untied values stay where they are. Deterministic for a seeded ``rng``."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return x.copy()
    distinct, counts = np.unique(x, return_counts=True)
    if counts.max() < 2:
        return x.copy()
    gaps = np.diff(distinct)
    width = JITTER_SHARE * (float(gaps.min()) if gaps.size else 1.0)
    tied = counts[np.searchsorted(distinct, x)] > 1
    return np.where(tied, x + rng.uniform(-width, width, size=x.size), x)


def system_colour(systems: Iterable[str]) -> dict[str, Any]:
    """A colour channel over systems with a legend, the same order on every chart."""
    domain = sorted(set(systems))
    scheme = next((name for most, name in SYSTEM_SCHEMES if len(domain) <= most), "category20b")
    return {
        "field": "system",
        "type": "nominal",
        "title": "System",
        "scale": {"scheme": scheme, "domain": domain},
        "legend": {"orient": "right", "symbolLimit": 40},
    }


def output_scatter(
    points: Sequence[Mapping[str, Any]],
    *,
    x_title: str,
    y_title: str,
    title: str,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Outputs as points (x: ``x``, y: ``y``), coloured by system, tied values jittered;
    each point links to its output page and keeps its true values for the tooltip.

    ``points``: dicts with output ``id``, ``system``, ``doc``, ``x``, ``y`` and ``href``."""
    xs = jitter([p["x"] for p in points], rng)
    ys = jitter([p["y"] for p in points], rng)
    values = [
        {
            "id": p["id"],
            "system": p["system"],
            "doc": p["doc"],
            "x": _clean(p["x"]),
            "y": _clean(p["y"]),
            "x_plot": _clean(float(jx)),
            "y_plot": _clean(float(jy)),
            "href": p["href"],
        }
        for p, jx, jy in zip(points, xs, ys, strict=True)
    ]
    spec = _base(title, f"{len(values)} outputs: {y_title} against {x_title}")
    spec["data"] = {"values": values}
    spec["mark"] = {
        "type": "point",
        "filled": True,
        "opacity": 0.6,
        "size": 36,
        "cursor": "pointer",
    }
    spec["encoding"] = {
        "x": {
            "field": "x_plot",
            "type": "quantitative",
            "title": x_title,
            "scale": {"zero": False, "nice": False},
        },
        "y": {
            "field": "y_plot",
            "type": "quantitative",
            "title": y_title,
            "scale": {"zero": False, "nice": False},
        },
        "color": system_colour(p["system"] for p in points),
        "href": {"field": "href", "type": "nominal"},
        "tooltip": [
            {"field": "system", "type": "nominal", "title": "System"},
            {"field": "doc", "type": "nominal", "title": "Document"},
            {"field": "x", "type": "quantitative", "title": x_title, "format": ".4f"},
            {"field": "y", "type": "quantitative", "title": y_title, "format": ".4f"},
            {"field": "id", "type": "nominal", "title": "Output"},
        ],
    }
    return spec


def system_scatter(
    rows: Sequence[Mapping[str, Any]], *, x_title: str, y_title: str, title: str
) -> dict[str, Any]:
    """One point per system (its mean metric ``x`` and mean human ``y``, over ``n``
    outputs), labelled and coloured by system: what a system-level correlation sees."""
    values = [
        {"system": r["system"], "x": _clean(r["x"]), "y": _clean(r["y"]), "n": int(r["n"])}
        for r in rows
    ]
    encoding = {
        "x": {
            "field": "x",
            "type": "quantitative",
            "title": x_title,
            "scale": {"zero": False, "padding": 24},
        },
        "y": {
            "field": "y",
            "type": "quantitative",
            "title": y_title,
            "scale": {"zero": False, "padding": 16},
        },
        "color": system_colour(r["system"] for r in rows),
        "tooltip": [
            {"field": "system", "type": "nominal", "title": "System"},
            {"field": "x", "type": "quantitative", "title": x_title, "format": ".4f"},
            {"field": "y", "type": "quantitative", "title": y_title, "format": ".4f"},
            {"field": "n", "type": "quantitative", "title": "Outputs"},
        ],
    }
    spec = _base(title, f"{len(values)} system means: {y_title} against {x_title}")
    spec["data"] = {"values": values}
    spec["encoding"] = encoding
    spec["layer"] = [
        {"mark": {"type": "point", "filled": True, "size": 90, "opacity": 0.9}},
        {
            "mark": {"type": "text", "align": "left", "dx": 7, "fontSize": 10},
            "encoding": {"text": {"field": "system", "type": "nominal"}},
        },
    ]
    return spec


def mean_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of the finite ``values`` (NaN when fewer
    than one; the interval collapses to the mean for a single value)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(x.mean())
    if x.size < 2:
        return mean, mean, mean
    half = float(
        scipy_stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    )
    return mean, mean - half, mean + half


def system_bars(
    systems: Sequence[str],
    metric: np.ndarray,
    human: np.ndarray,
    codes: np.ndarray,
    *,
    metric_title: str,
    human_title: str,
) -> dict[str, Any]:
    """Per-system bars of the mean metric score and the mean human score side by side,
    each with a 95% CI (Student t over the system's outputs) as an error bar. ``codes``
    gives each output's index into ``systems``; only outputs with both values count."""
    valid = np.isfinite(metric) & np.isfinite(human)
    rows: dict[str, list[dict[str, Any]]] = {"metric": [], "human": []}
    for code, name in enumerate(systems):
        mine = valid & (codes == code)
        if not mine.any():
            continue
        for measure, values in (("metric", metric), ("human", human)):
            mean, low, high = mean_interval(values[mine])
            rows[measure].append(
                {
                    "system": name,
                    "mean": _clean(mean),
                    "low": _clean(low),
                    "high": _clean(high),
                    "n": int(mine.sum()),
                }
            )
    order = sorted(r["system"] for r in rows["metric"])

    def panel(measure: str, title: str) -> dict[str, Any]:
        y = {"field": "system", "type": "nominal", "title": None, "sort": order}
        return {
            "title": title,
            "width": 220,
            "height": {"step": 16},
            "data": {"values": rows[measure]},
            "layer": [
                {
                    "mark": {"type": "bar", "opacity": 0.85},
                    "encoding": {
                        "y": y,
                        "x": {"field": "mean", "type": "quantitative", "title": f"mean {title}"},
                        "color": system_colour(order),
                        "tooltip": [
                            {"field": "system", "type": "nominal", "title": "System"},
                            {"field": "mean", "type": "quantitative", "format": ".4f"},
                            {
                                "field": "low",
                                "type": "quantitative",
                                "title": "95% CI low",
                                "format": ".4f",
                            },
                            {
                                "field": "high",
                                "type": "quantitative",
                                "title": "95% CI high",
                                "format": ".4f",
                            },
                            {"field": "n", "type": "quantitative", "title": "Outputs"},
                        ],
                    },
                },
                {
                    "mark": {"type": "rule", "color": "#1d2433"},
                    "encoding": {
                        "y": y,
                        "x": {"field": "low", "type": "quantitative"},
                        "x2": {"field": "high"},
                    },
                },
            ],
        }

    spec = _base(
        "Per-system means with 95% CIs",
        "Mean metric score and mean human score per system, with 95% confidence intervals",
    )
    del spec["width"], spec["height"], spec["title"]  # each panel has its title
    spec["hconcat"] = [panel("metric", metric_title), panel("human", human_title)]
    spec["resolve"] = {"scale": {"color": "shared"}}
    return spec


def histogram(per_group: np.ndarray, *, bins: int = 20, title: str) -> dict[str, Any]:
    """Counts of per-document correlations in ``bins`` equal bins over [−1, 1]."""
    values = np.asarray(per_group, dtype=np.float64)
    values = values[np.isfinite(values)]
    counts, edges = np.histogram(values, bins=bins, range=(-1.0, 1.0))
    data = [
        {"low": round(float(edges[k]), 4), "high": round(float(edges[k + 1]), 4), "count": int(c)}
        for k, c in enumerate(counts)
    ]
    spec = _base(title, f"histogram of {values.size} per-document correlations", height=200)
    spec["data"] = {"values": data}
    spec["mark"] = {"type": "bar", "color": "#6d8fd8", "binSpacing": 1}
    spec["encoding"] = {
        "x": {
            "field": "low",
            "type": "quantitative",
            "bin": {"binned": True, "step": 2 / bins},
            "title": "per-document correlation",
            "scale": {"domain": [-1, 1]},
        },
        "x2": {"field": "high"},
        "y": {"field": "count", "type": "quantitative", "title": "documents"},
        "tooltip": [
            {"field": "low", "type": "quantitative", "title": "from"},
            {"field": "high", "type": "quantitative", "title": "to"},
            {"field": "count", "type": "quantitative", "title": "documents"},
        ],
    }
    return spec


def lines(
    rows: Sequence[Mapping[str, Any]],
    *,
    x: str,
    x_title: str,
    y_title: str,
    title: str,
    log_x: bool = False,
    mark_x: float | None = None,
    mark_label: str = "",
) -> dict[str, Any]:
    """Line chart of long-form ``rows`` (``x``, ``series``, ``value``), one coloured line
    per series; optionally a dashed rule at ``mark_x`` (e.g. this dataset's size)."""
    values = [{x: r[x], "series": r["series"], "value": _clean(r["value"])} for r in rows]
    x_channel = {"field": x, "type": "quantitative", "title": x_title}
    if log_x:
        x_channel["scale"] = {"type": "log", "base": 2}
    spec = _base(title, f"{y_title} against {x_title}", width=440, height=240)
    layers: list[dict[str, Any]] = [
        {
            "data": {"values": values},
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": x_channel,
                "y": {"field": "value", "type": "quantitative", "title": y_title},
                "color": {
                    "field": "series",
                    "type": "nominal",
                    "title": None,
                    "sort": list(dict.fromkeys(r["series"] for r in rows)),
                },
                "tooltip": [
                    {"field": "series", "type": "nominal"},
                    {"field": x, "type": "quantitative", "title": x_title},
                    {"field": "value", "type": "quantitative", "title": y_title, "format": ".4f"},
                ],
            },
        },
    ]
    if mark_x is not None:
        layers.append(
            {
                "data": {"values": [{x: mark_x, "label": mark_label}]},
                "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#8a94a8"},
                "encoding": {
                    "x": {"field": x, "type": "quantitative"},
                    "tooltip": {"field": "label", "type": "nominal"},
                },
            }
        )
    spec["layer"] = layers
    return spec


def training_curves(curves: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """A learned metric's training loss and validation pairwise accuracy per epoch: two
    lines on independent y axes (loss on its own range, accuracy on 0 to 1)."""
    values = [
        {
            "epoch": c.get("epoch", k + 1),
            "loss": _clean(c.get("loss")),
            "accuracy": _clean(c.get("validation_accuracy")),
        }
        for k, c in enumerate(curves)
    ]
    x = {"field": "epoch", "type": "quantitative", "title": "epoch", "axis": {"tickMinStep": 1}}
    spec = _base(
        "Training",
        "training loss and validation pairwise accuracy per epoch",
        width=360,
        height=160,
    )
    spec["data"] = {"values": values}
    spec["layer"] = [
        {
            "mark": {"type": "line", "point": True, "color": "#c0392b"},
            "encoding": {
                "x": x,
                "y": {
                    "field": "loss",
                    "type": "quantitative",
                    "title": "loss",
                    "scale": {"zero": False},
                    "axis": {"titleColor": "#c0392b"},
                },
                "tooltip": [
                    {"field": "epoch", "type": "quantitative"},
                    {"field": "loss", "type": "quantitative", "format": ".4f"},
                ],
            },
        },
        {
            "mark": {"type": "line", "point": True, "color": "#2471a3"},
            "encoding": {
                "x": x,
                "y": {
                    "field": "accuracy",
                    "type": "quantitative",
                    "title": "validation pairwise accuracy",
                    "scale": {"domain": [0, 1]},
                    "axis": {"orient": "right", "titleColor": "#2471a3"},
                },
                "tooltip": [
                    {"field": "epoch", "type": "quantitative"},
                    {"field": "accuracy", "type": "quantitative", "format": ".3f"},
                ],
            },
        },
    ]
    spec["resolve"] = {"scale": {"y": "independent"}}
    return spec
