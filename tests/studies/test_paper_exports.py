"""The paper view's tables export as CSV, JSON and LaTeX (the matrix's writer, formula
escaping included; a legend of the marks; optional CIs); sorting by a column toggles its
direction and is kept in the URL; matrix cells are reachable by keyboard."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from studies.models import Dataset, MetricRun
from studies.services.analysis import tables
from studies.services.analysis.dashboards import matrix_for
from studies.services.analysis.params import MatrixParams

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(scored):  # type: ignore[no-untyped-def]
    """The shared ``scored`` dataset with its noise run labelled as computed (``=noise``)."""
    dataset = Dataset.objects.get(name="scored")
    MetricRun.objects.filter(dataset=dataset, label="noise").update(label="=noise")
    dataset.bump_data_version()
    return scored


def _export(client, file_format: str, **query: str):  # type: ignore[no-untyped-def]
    url = reverse("studies:correlations-paper-export", args=[Dataset.objects.get().pk, file_format])
    return client.get(url, query)


def _rho(records, metric: str) -> float:  # type: ignore[no-untyped-def]
    """Dataset-level Spearman ρ of a metric with coherence, straight from the file."""
    human = np.array([r["human"]["coherence"] for r in records])
    scores = np.array([r["metrics"][metric] for r in records])
    return float(stats.spearmanr(scores, human).statistic)


def test_the_geval_table_exports_as_csv_with_the_files_numbers_and_neutralised_labels(
    scored, owner_client
):
    response = _export(owner_client, "csv", table="geval", level="dataset")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = {r["run"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    assert set(rows) == {"good", "'=noise"}  # a formula-looking label is neutralised
    assert float(rows["good"]["COH rho"]) == pytest.approx(_rho(scored, "good"), abs=1e-6)
    assert float(rows["'=noise"]["COH rho"]) == pytest.approx(_rho(scored, "noise"), abs=1e-6)
    raw = _export(owner_client, "csv", table="geval", level="dataset", raw="1").content.decode()
    assert "\n=noise," in raw


def test_the_ranks_and_gptscore_tables_export_as_csv_and_json(scored, owner_client):
    ranks = list(
        csv.reader(io.StringIO(_export(owner_client, "csv", table="ranks").content.decode()))
    )
    assert ranks[0][:3] == ["run", "COH", "FLU"] and len(ranks) == 3
    body = json.loads(_export(owner_client, "json", table="ranks").content)
    result = matrix_for(Dataset.objects.get(), MatrixParams())
    assert body["table"] == "ranks" and [r["label"] for r in body["rows"]] == [
        r["label"] for r in tables.ranks_table(result)["rows"]
    ]
    gptscore = _export(owner_client, "csv", table="gptscore").content.decode()
    assert gptscore.splitlines()[0] == "aspect"  # no GPTScore runs: aspects only
    assert _export(owner_client, "csv", table="nope").status_code == 400


def test_the_latex_exports_have_a_legend_and_optional_intervals(scored, owner_client):
    plain = _export(owner_client, "tex", table="geval", level="dataset").content.decode()
    assert r"\begin{tabular}" in plain and "% Legend:" in plain and "[" not in plain
    with_ci = _export(owner_client, "tex", table="geval", level="dataset", ci="1").content.decode()
    table = tables.geval_table(Dataset.objects.get(), MatrixParams(level="dataset"))
    good = next(r for r in table["rows"] if r["label"] == "good")
    low, high = good["cis"][0]
    assert f"[{low:.2f}, {high:.2f}]" in with_ci
    assert "% [low, high]: 95\\% bootstrap confidence interval" in with_ci

    url = reverse("studies:correlations-export", args=[Dataset.objects.get().pk, "tex"])
    matrix = owner_client.get(url).content.decode()
    assert "% Legend:" in matrix and r"% \textbf{bold}: the best value of its column" in matrix
    assert "(k): significance cluster" in matrix and "[" not in matrix.split("% Legend:")[0]
    cell = matrix_for(Dataset.objects.get(), MatrixParams())["columns"][0]["cells"][0]
    matrix_ci = owner_client.get(url, {"ci": "1"}).content.decode()
    assert f"[{cell['low']:.2f}, {cell['high']:.2f}]" in matrix_ci
    assert "% [low, high]" in matrix_ci


def test_sorting_by_a_column_toggles_its_direction_and_is_kept_in_the_url(scored, owner_client):
    url = reverse("studies:correlations", args=[Dataset.objects.get().pk])
    unsorted = owner_client.get(url, {"level": "dataset"}).content.decode()
    assert "sort=COH" in unsorted and "sort=-COH" not in unsorted
    best_first = owner_client.get(url, {"level": "dataset", "sort": "COH"}).content.decode()
    assert "sort=-COH" in best_first and "COH ▾" in best_first
    assert 'hx-push-url="true"' in best_first.split('id="matrix-table"')[1].split("</thead>")[0]
    worst_first = owner_client.get(url, {"level": "dataset", "sort": "-COH"}).content.decode()
    assert "COH ▴" in worst_first and re.search(r"sort=COH\"", worst_first)

    def order(body: str) -> list[str]:
        return re.findall(r'<th class="runlabel[^"]*" title="run \d+">([^<]+)<', body)

    ranked = sorted(["good", "=noise"], key=lambda m: _rho(scored, m.lstrip("=")), reverse=True)
    assert order(best_first) == ranked and order(worst_first) == ranked[::-1]

    paper = reverse("studies:correlations-paper", args=[Dataset.objects.get().pk])

    def geval_order(sort: str) -> list[str]:
        body = owner_client.get(paper, {"level": "dataset", "sort": sort}).content.decode()
        section = body.split('id="geval-table"')[1].split("</table>")[0]
        return re.findall(r"<tr(?: class=\"partial\")?><th>([^<]+)<", section)

    assert geval_order("COH") == ranked and geval_order("-COH") == ranked[::-1]
    body = owner_client.get(paper, {"level": "dataset", "sort": "COH"}).content.decode()
    assert "sort=-COH" in body and "table=geval&amp;sort=COH" in body  # exports sort alike


def test_matrix_cells_are_focusable_and_name_their_run_and_aspect(scored, owner_client):
    url = reverse("studies:correlations", args=[Dataset.objects.get().pk])
    body = owner_client.get(url).content.decode()
    cells = re.findall(r'<td class="num cell[^>]*>', body, flags=re.S)
    assert cells and all('tabindex="0"' in c and "data-keyboard-cell" in c for c in cells)
    assert 'aria-label="good × COH: open the details"' in body


def test_paper_exports_follow_the_page_rules(scored, client, cast):
    client.force_login(cast["outsider"])
    assert _export(client, "csv", table="ranks").status_code == 404
    client.force_login(cast["annotator"])
    assert _export(client, "csv", table="ranks").status_code == 403
