"""Chart specifications are data: their marks, encodings and values match the numbers
they plot, computed here independently (numpy, scipy, a brute-force loop over the file)."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from learned.services.report import curve_points
from studies.models import Aspect, Dataset
from studies.services.analysis import charts, planner
from studies.services.analysis.compare import compare
from studies.services.analysis.drilldown import drilldown
from studies.services.analysis.params import MatrixParams
from tests.factories import dataset_pk

pytestmark = pytest.mark.django_db


def spec_block(html: str, element_id: str) -> dict:  # type: ignore[type-arg]
    """The spec in the page's <script type="application/json" id=…> block."""
    found = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert found, f"no JSON block #{element_id}"
    return json.loads(found.group(1))  # type: ignore[no-any-return]


# --- pure spec builders ------------------------------------------------------------------


def test_jitter_spreads_ties_within_a_fraction_of_the_gap_and_leaves_untied_values():
    likert = np.array([1, 2, 2, 2, 3, 5, 5, 4.5])
    moved = charts.jitter(likert, np.random.default_rng(1))
    width = charts.JITTER_SHARE * 0.5  # the smallest gap is 4.5 → 5
    tied = np.array([np.sum(likert == v) > 1 for v in likert])
    assert np.all(np.abs(moved - likert) <= width + 1e-12)
    assert np.all(moved[~tied] == likert[~tied]) and np.all(moved[tied] != likert[tied])
    # every point stays nearer its own level than any other level
    levels = np.unique(likert)
    nearest = levels[np.abs(moved[:, None] - levels[None, :]).argmin(axis=1)]
    assert np.array_equal(nearest, likert)
    again = charts.jitter(likert, np.random.default_rng(1))
    assert np.array_equal(moved, again)  # seeded: the same plot every time
    continuous = np.array([0.1, 0.25, 0.3])
    assert np.array_equal(charts.jitter(continuous, np.random.default_rng(1)), continuous)


def test_output_scatter_colours_by_system_links_each_point_and_keeps_true_values():
    points = [
        {
            "id": 10 + k,
            "system": f"s{k % 3}",
            "doc": f"d{k}",
            "x": float(k % 2),
            "y": float(k % 3 + 1),
            "href": f"/outputs/{10 + k}/",
        }
        for k in range(9)
    ]
    spec = charts.output_scatter(
        points, x_title="m", y_title="h", title="t", rng=np.random.default_rng(0)
    )
    assert spec["$schema"].endswith("/vega-lite/v6.json") and spec["mark"]["type"] == "point"
    enc = spec["encoding"]
    assert enc["color"]["field"] == "system" and enc["color"]["scale"]["domain"] == [
        "s0",
        "s1",
        "s2",
    ]
    assert "legend" in enc["color"] and enc["href"]["field"] == "href"
    assert enc["x"]["field"] == "x_plot" and enc["y"]["field"] == "y_plot"
    values = spec["data"]["values"]
    assert [v["id"] for v in values] == [p["id"] for p in points]
    assert [v["href"] for v in values] == [f"/outputs/{p['id']}/" for p in points]
    assert [(v["x"], v["y"]) for v in values] == [(p["x"], p["y"]) for p in points]
    # ties on both axes: plotted positions move, by less than a third of a step
    assert any(v["y_plot"] != v["y"] for v in values)
    assert all(
        abs(v["y_plot"] - v["y"]) < 0.31 and abs(v["x_plot"] - v["x"]) < 0.31 for v in values
    )
    json.dumps(spec, allow_nan=False)  # valid JSON for the page


def test_system_bars_are_the_means_with_student_t_intervals():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, 40)
    metric, human = rng.normal(size=40), rng.integers(1, 6, 40).astype(float)
    metric[0], human[1] = np.nan, np.nan  # left out of both panels
    spec = charts.system_bars(
        ["a", "b", "c"], metric, human, codes, metric_title="run", human_title="human COH"
    )
    metric_panel, human_panel = spec["hconcat"]
    assert [layer["mark"]["type"] for layer in metric_panel["layer"]] == ["bar", "rule"]
    assert metric_panel["layer"][1]["encoding"]["x"]["field"] == "low"
    assert metric_panel["layer"][1]["encoding"]["x2"]["field"] == "high"
    ok = np.isfinite(metric) & np.isfinite(human)
    for panel, values in ((metric_panel, metric), (human_panel, human)):
        rows = {r["system"]: r for r in panel["data"]["values"]}
        assert set(rows) == {"a", "b", "c"}
        for code, name in enumerate("abc"):
            mine = values[ok & (codes == code)]
            low, high = stats.t.interval(
                0.95, mine.size - 1, loc=mine.mean(), scale=stats.sem(mine)
            )
            assert rows[name]["mean"] == pytest.approx(mine.mean(), abs=1e-6)
            assert (rows[name]["low"], rows[name]["high"]) == (
                pytest.approx(low, abs=1e-6),
                pytest.approx(high, abs=1e-6),
            )
            assert rows[name]["n"] == mine.size


def test_histogram_counts_every_finite_value_once():
    values = np.array([-1.0, -0.95, 0.0, 0.02, 0.5, 1.0, np.nan])
    spec = charts.histogram(values, bins=4, title="h")
    counts = [b["count"] for b in spec["data"]["values"]]
    assert counts == list(np.histogram(values[np.isfinite(values)], bins=4, range=(-1, 1))[0])
    assert sum(counts) == 6 and spec["mark"]["type"] == "bar"


def test_learned_curves_chart_plots_loss_and_accuracy_per_epoch():
    curves = [
        {"epoch": 1, "loss": 0.9, "validation_accuracy": 0.55},
        {"epoch": 2, "loss": 0.7, "validation_accuracy": float("nan")},
        {"epoch": 3, "loss": 0.6, "validation_accuracy": 0.7},
    ]
    curve = curve_points(curves)
    assert curve["epochs"] == 3 and curve["loss_range"] == (0.6, 0.9)
    spec = curve["chart"]
    assert [v["loss"] for v in spec["data"]["values"]] == [0.9, 0.7, 0.6]
    assert [v["accuracy"] for v in spec["data"]["values"]] == [0.55, None, 0.7]
    assert [layer["encoding"]["y"]["field"] for layer in spec["layer"]] == ["loss", "accuracy"]
    json.dumps(spec, allow_nan=False)
    assert curve_points([]) == {"epochs": 0, "chart": None}


def test_planner_chart_has_one_line_per_series_with_the_plans_numbers():
    sizes, here = [4, 8, 16], 12
    series = {
        "half_width_a": [0.3, 0.2, 0.1],
        "half_width_b": [0.4, 0.3, 0.2],
        "half_width_diff": [0.5, 0.35, 0.25],
        "power": [0.1, 0.5, 0.9],
    }
    spec = planner.chart(sizes, series, here)
    line, rule = spec["layer"]
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    by_series = defaultdict(list)
    for v in line["data"]["values"]:
        by_series[v["series"]].append((v["n"], v["value"]))
    assert by_series == {
        "a": list(zip(sizes, series["half_width_a"], strict=True)),
        "b": list(zip(sizes, series["half_width_b"], strict=True)),
        "a − b": list(zip(sizes, series["half_width_diff"], strict=True)),
    }
    assert rule["mark"]["type"] == "rule" and rule["data"]["values"][0]["n"] == here


# --- the drill-down and the comparison from a dataset -------------------------------------


def _cell(level: str) -> dict:  # type: ignore[type-arg]
    dataset = Dataset.objects.get(name="scored")
    run, aspect = dataset.runs.get(label="good"), Aspect.objects.get(code="COH")
    params = MatrixParams.from_query({"level": level, "coef": "pearson"})
    details = drilldown(dataset, run.pk, aspect.pk, params)
    assert details is not None
    return details


def test_system_level_drilldown_plots_the_system_means_it_correlates(scored):  # noqa: F811
    details = _cell("system")
    by_system = defaultdict(list)
    for r in scored:
        if r["human"].get("coherence") is not None:
            by_system[r["system_id"]].append((r["metrics"]["good"], r["human"]["coherence"]))
    expected = {s: np.mean(v, axis=0) for s, v in by_system.items()}
    values = {v["system"]: v for v in details["scatter"]["data"]["values"]}
    assert set(values) == set(expected) and details["n_systems"] == 5
    for system, (m, h) in expected.items():
        assert values[system]["x"] == pytest.approx(m, abs=1e-6)
        assert values[system]["y"] == pytest.approx(h, abs=1e-6)
        assert values[system]["n"] == len(by_system[system])
    ms = [expected[s][0] for s in sorted(expected)]
    hs = [expected[s][1] for s in sorted(expected)]
    assert details["value"] == pytest.approx(stats.pearsonr(ms, hs)[0], abs=1e-9)
    assert details["scatter"]["encoding"]["color"]["field"] == "system"


def test_dataset_level_drilldown_plots_every_output_with_its_link(scored):  # noqa: F811
    details = _cell("dataset")
    values = details["scatter"]["data"]["values"]
    judged = [r for r in scored if r["human"].get("coherence") is not None]
    assert len(values) == len(judged) == 60
    assert sorted((round(v["x"], 4), v["y"]) for v in values) == sorted(
        (r["metrics"]["good"], r["human"]["coherence"]) for r in judged
    )
    assert all(v["href"] == f"/outputs/{v['id']}/" for v in values)
    assert {v["system"] for v in values} == {f"sys{s}" for s in range(5)}
    human_panel = details["bars"]["hconcat"][1]
    for row in human_panel["data"]["values"]:
        mine = [r["human"]["coherence"] for r in judged if r["system_id"] == row["system"]]
        assert row["mean"] == pytest.approx(np.mean(mine), abs=1e-6)


def test_cell_page_carries_the_specs_as_json_blocks(client, scored, cast):  # noqa: F811
    client.force_login(cast["owner"])
    dataset = Dataset.objects.get(name="scored")
    run, aspect = dataset.runs.get(label="good"), Aspect.objects.get(code="COH")
    url = reverse("studies:correlations-cell", args=[dataset.pk, run.pk, aspect.pk])
    body = client.get(url + "?level=system&coef=pearson").content.decode()
    scatter = spec_block(body, "cell-scatter-spec")
    assert len(scatter["data"]["values"]) == 5 and 'id="cell-n">5 systems' in body
    assert 'data-chart="cell-scatter-spec"' in body and 'data-chart="cell-bars-spec"' in body
    assert len(spec_block(body, "cell-bars-spec")["hconcat"]) == 2
    assert 'id="cell-compare"' in body and "js/charts.js" in body
    sample = client.get(url + "?level=sample").content.decode()
    assert len(spec_block(sample, "cell-scatter-spec")["data"]["values"]) == 60
    assert (
        sum(b["count"] for b in spec_block(sample, "cell-histogram-spec")["data"]["values"]) == 12
    )
    assert "style=" not in sample.split("<main")[1]  # CSP: no inline styles


def test_metric_vs_metric_compares_two_runs_and_agrees_with_scipy(client, scored, cast):  # noqa: F811
    dataset = Dataset.objects.get(name="scored")
    good, noise = dataset.runs.get(label="good"), dataset.runs.get(label="noise")
    result = compare(dataset, good.pk, noise.pk)
    xs = [r["metrics"]["good"] for r in scored]
    ys = [r["metrics"]["noise"] for r in scored]
    assert result["n_outputs"] == 60
    assert result["pearson"] == pytest.approx(stats.pearsonr(xs, ys)[0], abs=1e-9)
    assert result["spearman"] == pytest.approx(stats.spearmanr(xs, ys)[0], abs=1e-9)
    assert result["kendall"] == pytest.approx(stats.kendalltau(xs, ys)[0], abs=1e-9)
    values = result["chart"]["data"]["values"]
    assert sorted((round(v["x"], 4), round(v["y"], 4)) for v in values) == sorted(
        zip(xs, ys, strict=True)
    )
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-compare", args=[dataset_pk("scored")])
    page = client.get(f"{url}?a={good.pk}&b={noise.pk}").content.decode()
    assert len(spec_block(page, "compare-scatter-spec")["data"]["values"]) == 60
    assert 'id="compare-pearson"' in page
    assert 'id="compare-choose"' in client.get(f"{url}?a={good.pk}&b=999999").content.decode()
    client.force_login(cast["outsider"])  # another researcher's dataset: not found
    assert client.get(f"{url}?a={good.pk}&b={noise.pk}").status_code == 404
    # cached until a score changes
    from unittest import mock

    from studies.services.analysis import compare as service

    with mock.patch.object(service, "_compare", side_effect=AssertionError("recomputed")):
        assert compare(dataset, good.pk, noise.pk) == result
    score = good.scores.first()
    score.value = 99.0
    score.save()
    dataset.bump_data_version()
    dataset.refresh_from_db()
    assert compare(dataset, good.pk, noise.pk)["pearson"] != result["pearson"]


def test_the_api_gives_the_comparison_the_page_shows(client, scored, cast):  # noqa: F811
    from rest_framework.test import APIClient

    dataset = Dataset.objects.get(name="scored")
    good, noise = dataset.runs.get(label="good"), dataset.runs.get(label="noise")
    api = APIClient()
    api.force_authenticate(cast["owner"])
    found = api.get(f"/api/datasets/{dataset.pk}/compare/?a={good.pk}&b={noise.pk}")
    assert found.status_code == 200
    assert found.json() == json.loads(json.dumps(compare(dataset, good.pk, noise.pk)))
    assert api.get(f"/api/datasets/{dataset.pk}/compare/?a={good.pk}&b=999999").status_code == 404
    assert api.get(f"/api/datasets/{dataset.pk}/compare/?a={good.pk}").status_code == 400
    api.force_authenticate(cast["outsider"])
    assert (
        api.get(f"/api/datasets/{dataset.pk}/compare/?a={good.pk}&b={noise.pk}").status_code == 404
    )


def test_vendored_chart_libraries_match_their_manifest_and_reference_no_missing_map():
    """static/vendor holds what scripts/vendor_charts.sh recorded; a bundle pointing at a
    source map that is not shipped would break collectstatic's manifest storage."""
    import hashlib
    from pathlib import Path

    from django.conf import settings

    vendor = Path(settings.BASE_DIR) / "static" / "vendor"
    manifest = json.loads((vendor / "charts-manifest.json").read_text())
    packages = manifest["packages"]
    assert set(packages) == {"vega", "vega-lite", "vega-embed", "vega-interpreter"}
    for name, entry in packages.items():
        body = (vendor / entry["file"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"], name
        assert b"sourceMappingURL" not in body and 1_000 < len(body) < 1_000_000, name
        assert (vendor / f"{name}.LICENSE").read_text().strip(), name
    assert packages["vega"]["version"].split(".")[0] == "6"  # vega-lite 6 and vega-embed 7 need it
