"""Correlation dashboards and the correlations command agree with scipy on the file."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from studies.models import Aspect, Dataset, MetricScore, Output, TaskKind
from studies.services.dashboards import (
    MatrixParams,
    cached_matrix,
    compute_and_cache,
    request_matrix,
)
from studies.services.datasets import ImportOptions, import_file
from studies.tasks import compute_correlations
from tests.factories import MetricRunFactory, dataset_pk

pytestmark = pytest.mark.django_db


def synthetic_records(
    n_docs: int = 12, n_systems: int = 5, seed: int = 3
) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    records = []
    for d in range(n_docs):
        for s in range(n_systems):
            coherence = float(rng.integers(1, 6))
            fluency = (
                float(rng.integers(1, 6)) if (d, s) != (0, 0) else None
            )  # one missing judgment
            records.append({
                "doc_id": f"doc{d:02d}", "system_id": f"sys{s}", "source": f"Source {d}.",
                "references": [f"Ref {d}."], "output": f"Output {d}-{s}.",
                "human": {"coherence": coherence, **({"fluency": fluency} if fluency else {})},
                "metrics": {"good": round(coherence + float(rng.normal(0, 0.8)), 4),
                            "noise": round(float(rng.normal()), 4)},
            })  # fmt: skip
    return records


@pytest.fixture
def scored(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = synthetic_records()
    path = write_jsonl(records, name="scored.jsonl")
    import_file(path, ImportOptions(dataset="scored", task="summarization", file_format="jsonl",
                                    file_name=path.name, owner=cast["owner"]))  # fmt: skip
    return records


def scipy_expected(records, metric, aspect, level, coefficient):  # type: ignore[no-untyped-def]
    """The correlation computed directly from the file, the textbook way."""
    fn = {"spearman": stats.spearmanr, "pearson": stats.pearsonr,
          "kendall": lambda a, b: stats.kendalltau(a, b, variant="b")}[coefficient]  # fmt: skip
    pairs = [
        (r["doc_id"], r["system_id"], r["metrics"][metric], r["human"].get(aspect)) for r in records
    ]
    pairs = [p for p in pairs if p[3] is not None]
    if level == "dataset":
        return fn([p[2] for p in pairs], [p[3] for p in pairs])[0]
    if level == "system":
        by_system = defaultdict(list)
        for _d, s, m, h in pairs:
            by_system[s].append((m, h))
        means = [np.mean(v, axis=0) for _s, v in sorted(by_system.items())]
        return fn([m for m, _h in means], [h for _m, h in means])[0]
    by_doc = defaultdict(list)
    for d, _s, m, h in pairs:
        by_doc[d].append((m, h))
    values = []
    for rows in by_doc.values():
        ms, hs = zip(*rows, strict=True)
        if len(rows) >= 2 and len(set(ms)) > 1 and len(set(hs)) > 1:
            values.append(fn(ms, hs)[0])
    return float(np.mean(values))


@pytest.mark.parametrize("level", ["sample", "dataset", "system"])
@pytest.mark.parametrize("coefficient", ["spearman", "pearson", "kendall"])
def test_correlations_command_matches_scipy_on_the_file(scored, capsys, level, coefficient):
    call_command("correlations", "--dataset", "scored", "--level", level, "--coef", coefficient,
                 "--format", "json")  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    runs = [r["label"] for r in result["runs"]]
    for column in result["columns"]:
        aspect = column["aspect"]["name"].lower()
        for label, cell in zip(runs, column["cells"], strict=True):
            expected = scipy_expected(scored, label, aspect, level, coefficient)
            assert cell["value"] == pytest.approx(expected, abs=1e-9), (label, aspect)


def test_dashboard_cells_show_the_scipy_numbers_and_the_aspect_intercorrelation(
    client, scored, cast
):
    import re

    client.force_login(cast["owner"])
    body = client.get(
        reverse("studies:correlations", args=[dataset_pk("scored")]) + "?level=sample&coef=kendall"
    ).content
    values = [float(v) for v in re.findall(rb'data-value="([-0-9.e]+)"', body)]
    runs, aspects = ["good", "noise"], ["coherence", "fluency"]  # rows by label, columns by code
    expected = [scipy_expected(scored, r, a, "sample", "kendall") for r in runs for a in aspects]
    assert values == pytest.approx(expected, abs=1e-9)
    result = cached_matrix(Dataset.objects.get(name="scored"), MatrixParams(coefficient="kendall"))
    assert result["intercorrelation"][0][0] == pytest.approx(1.0)
    assert result["intercorrelation"][0][1] == result["intercorrelation"][1][0]
    assert b'id="intercorrelation"' in body


def test_matrix_marks_the_best_and_significantly_worse_runs(scored):
    result = compute_and_cache(Dataset.objects.get(name="scored"), MatrixParams(level="dataset"))
    coherence = next(c for c in result["columns"] if c["aspect"]["code"] == "COH")
    by_label = {
        r["label"]: cell for r, cell in zip(result["runs"], coherence["cells"], strict=True)
    }
    assert by_label["good"]["best"] and not by_label["noise"]["best"]
    assert by_label["noise"]["below_best"] and by_label["noise"]["p_vs_best"] < 0.05
    assert by_label["good"]["low"] < by_label["good"]["value"] < by_label["good"]["high"]
    assert by_label["good"]["n_outputs"] == 60


def test_correlations_page_works_for_owner_is_forbidden_and_not_found(client, scored, cast):
    url = reverse("studies:correlations", args=[dataset_pk("scored")])
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403
    client.force_login(cast["outsider"])
    assert client.get(url).status_code == 404
    client.force_login(cast["owner"])
    page = client.get(url)
    assert page.status_code == 200 and b'id="matrix-table"' in page.content
    partial = client.get(
        url + "?level=dataset&coef=pearson", headers={"HX-Request": "true", "HX-Target": "matrix"}
    )
    assert partial.status_code == 200 and b"<html" not in partial.content
    assert b"Pearson r, dataset-level" in partial.content and "HX-Request" in partial["Vary"]


def test_cached_page_is_read_from_the_cache_until_the_data_changes(client, scored, cast,
                                                                   django_assert_max_num_queries):  # fmt: skip
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[dataset_pk("scored")])
    client.get(url)
    dataset = Dataset.objects.get(name="scored")
    assert cached_matrix(dataset, MatrixParams()) is not None
    with django_assert_max_num_queries(8):
        assert client.get(url).status_code == 200
    score = MetricScore.objects.filter(run__label="noise").first()
    score.value = 99.0
    score.save()  # a changed score gives a new key: the old result is not served
    dataset.refresh_from_db()
    assert cached_matrix(dataset, MatrixParams()) is None


def test_large_dataset_is_computed_by_the_task_while_the_page_polls(client, scored, cast, settings):
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_LIMIT": 10}
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[dataset_pk("scored")])
    waiting = client.get(url)
    assert (
        b'hx-trigger="every 1s"' in waiting.content and b"Computing the matrix" in waiting.content
    )
    dataset = Dataset.objects.get(name="scored")
    assert not request_matrix(dataset, MatrixParams())  # already requested: not enqueued twice
    compute_correlations(dataset.pk, MatrixParams().__dict__)
    done = client.get(url + "?poll=1", headers={"HX-Request": "true", "HX-Target": "matrix"})
    assert done.status_code == 286 and b'id="matrix-table"' in done.content


def test_exports_in_csv_json_and_latex(client, scored, cast):
    client.force_login(cast["owner"])
    base = reverse("studies:correlations-export", args=[dataset_pk("scored"), "csv"]).rsplit(
        ".", 1
    )[0]
    csv_text = client.get(base + ".csv?level=sample").content.decode()
    assert csv_text.splitlines()[0].startswith(
        "run,metric,model,setting,dimension,COH,COH_low,COH_high"
    )
    assert json.loads(client.get(base + ".json").content)["params"]["level"] == "sample"
    latex = client.get(base + ".tex")
    assert latex["Content-Disposition"].endswith('.tex"')
    body = latex.content.decode()
    assert r"\toprule" in body and r"\bottomrule" in body and r"\textbf{" in body


def test_drilldown_shows_scatter_histogram_and_disagreements(client, scored, cast):
    client.force_login(cast["owner"])
    dataset = Dataset.objects.get(name="scored")
    run = dataset.runs.get(label="good")
    aspect = Aspect.objects.get(code="COH")
    url = reverse("studies:correlations-cell", args=[dataset_pk("scored"), run.pk, aspect.pk])
    page = client.get(url, headers={"HX-Request": "true"})
    body = page.content.decode()
    assert page.status_code == 200 and "<html" not in body
    assert body.count("<circle") == 60 and "Per-document correlations (12 documents" in body
    assert "Largest rank disagreements" in body and "doc00" in body
    assert (
        client.get(
            reverse("studies:correlations-cell", args=[dataset_pk("scored"), 999999, aspect.pk])
        ).status_code
        == 404
    )


def test_paper_view_marks_ist_significantly_better_than_val(client, cast):
    rng = np.random.default_rng(0)
    dataset = Dataset.objects.create(
        name="paper", task=TaskKind.objects.get(code="summarization"), owner=cast["owner"]
    )
    from tests.factories import OutputFactory

    coh = Aspect.objects.get(code="COH")
    val = MetricRunFactory(
        dataset=dataset, label="gptscore-val", config={"model": "tiny", "setting": "VAL"}
    )
    ist = MetricRunFactory(dataset=dataset, label="gptscore-ist",
                           config={"model": "tiny", "setting": "IST", "aspect": "COH"})  # fmt: skip
    # an IST run prompted for another aspect must not stand in the COH row
    MetricRunFactory(dataset=dataset, label="gptscore-a-ist-flu",
                     config={"model": "tiny", "setting": "IST", "aspect": "FLU"})  # fmt: skip
    for d in range(30):
        document = OutputFactory(document__dataset=dataset, document__doc_key=f"d{d}").document
        document.outputs.all().delete()
        for s in range(6):
            output = Output.objects.create(document=document, system_id=f"s{s}", text="x")
            human = float(rng.integers(1, 6))
            output.judgments.create(aspect=coh, value=human, import_file="h.jsonl")
            MetricScore.objects.create(run=ist, output=output, value=human + rng.normal(0, 0.3))
            MetricScore.objects.create(run=val, output=output, value=rng.normal())
    client.force_login(cast["owner"])
    body = client.get(
        reverse("studies:correlations-paper", args=[dataset_pk("paper")])
    ).content.decode()
    assert (
        'id="gptscore-table"' in body
        and "†" in body.split('id="gptscore-table"')[1].split("</table>")[0]
    )
    assert 'id="geval-table"' in body
