"""Correlation dashboards and the correlations command agree with scipy on the file."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from scoring.stats.cost import MatrixSize
from studies.models import Aspect, Dataset, MetricScore, Output, TaskKind
from studies.services.analysis.dashboards import cached_matrix, compute_and_cache, request_matrix
from studies.services.analysis.matrix_cost import estimated_seconds, matrix_size
from studies.services.analysis.params import MatrixParams
from studies.tasks import compute_correlations
from tests.factories import MetricRunFactory, dataset_pk, import_jsonl, synthetic_records

pytestmark = pytest.mark.django_db


def scipy_expected(records, metric, aspect, level, coefficient):  # type: ignore[no-untyped-def]
    """The correlation computed directly from the file, the textbook way."""
    fn = {
        "spearman": stats.spearmanr,
        "pearson": stats.pearsonr,
        "kendall": lambda a, b: stats.kendalltau(a, b, variant="b"),
    }[coefficient]
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
    call_command(
        "correlations",
        "--dataset",
        "scored",
        "--level",
        level,
        "--coef",
        coefficient,
        "--format",
        "json",
    )
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


def test_cached_page_is_read_from_the_cache_until_the_data_changes(
    client, scored, cast, django_assert_max_num_queries
):
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
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}
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


def test_the_route_follows_the_estimated_cost_not_the_size(client, scored, cast, settings):
    # One dataset (60 outputs, 2 runs, 2 aspects): a cheap sample-level Pearson matrix is
    # computed in the request; a dataset-level Kendall matrix with 1,000 resamples is
    # estimated above a budget that the Pearson one is well under, and goes to a worker.
    # (Measured at this size: 0.3 ms a Pearson cell, 2 ms a Kendall τ-c cell.)
    dataset = Dataset.objects.get(name="scored")
    size = matrix_size(dataset)
    assert size == MatrixSize(outputs=60, documents=12, systems=5, runs=2, aspects=2)
    cheap = MatrixParams(level="sample", coefficient="pearson")
    costly = MatrixParams(level="dataset", coefficient="kendall_c")
    assert estimated_seconds(size, costly) > 4 * estimated_seconds(size, cheap)
    budget = estimated_seconds(size, costly) / 2
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": budget}
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[dataset_pk("scored")])
    assert b'id="matrix-table"' in client.get(url + "?level=sample&coef=pearson").content
    assert cached_matrix(dataset, cheap) is not None
    waiting = client.get(url + "?level=dataset&coef=kendall_c")
    assert b"Computing the matrix" in waiting.content
    assert cached_matrix(dataset, costly) is None
    assert not request_matrix(dataset, costly)  # the page already asked a worker


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
    assert 'id="cell-scatter-spec"' in body and "Per-document correlations (12 documents" in body
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
    ist = MetricRunFactory(
        dataset=dataset,
        label="gptscore-ist",
        config={"model": "tiny", "setting": "IST", "aspect": "COH"},
    )
    # an IST run prompted for another aspect must not stand in the COH row
    MetricRunFactory(
        dataset=dataset,
        label="gptscore-a-ist-flu",
        config={"model": "tiny", "setting": "IST", "aspect": "FLU"},
    )
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


# --- WMT's statistics, ranks and options ------------------------------------------------


def file_arrays(records, metric, aspect):  # type: ignore[no-untyped-def]
    """The file's outputs as aligned arrays (NaN where the aspect was not judged)."""
    human = np.array([r["human"].get(aspect, np.nan) for r in records], dtype=float)
    scores = np.array([r["metrics"][metric] for r in records], dtype=float)
    docs = np.array([r["doc_id"] for r in records])
    systems = np.array([r["system_id"] for r in records])
    return scores, human, docs, systems


def command_json(*args):  # type: ignore[no-untyped-def]
    from io import StringIO

    out = StringIO()
    call_command("correlations", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize(
    ("args", "coefficient", "level", "kwargs"),
    [
        (["--coef", "acc23", "--tie-calibration"], "ACC23", "SAMPLE", {"calibrate": True}),
        (
            ["--coef", "kendall_23", "--level", "dataset", "--tie-calibration"],
            "KENDALL_23",
            "DATASET",
            {"calibrate": True},
        ),
        (["--coef", "kendall_like"], "KENDALL_LIKE", "SAMPLE", {"threshold": 1.0}),
        (["--coef", "pdp"], "PDP", "SAMPLE", {}),
        (["--coef", "spearman", "--average", "micro"], "SPEARMAN", "SAMPLE", {"micro": True}),
        (["--coef", "spa", "--level", "system"], "SPA", "SYSTEM", {}),
    ],
)
def test_command_gives_the_engines_value_for_each_new_statistic(
    scored, args, coefficient, level, kwargs
):
    from scoring.stats import Average, Coefficient, Level, Options, calibrate_ties, correlate

    result = command_json("--dataset", "scored", *args)
    coef, lvl = Coefficient[coefficient], Level[level]
    average = Average.MICRO if kwargs.get("micro") else Average.MACRO
    for column in result["columns"]:
        aspect = column["aspect"]["name"].lower()
        assert (column["aspect"]["scale_min"], column["aspect"]["scale_max"]) == (1.0, 5.0)
        for run, cell in zip(result["runs"], column["cells"], strict=True):
            x, y, docs, systems = file_arrays(scored, run["label"], aspect)
            options = Options(threshold=kwargs.get("threshold", 1.0))  # a quarter of 1..5
            if kwargs.get("calibrate"):
                calibration = calibrate_ties(x, y, level=lvl, coefficient=coef, docs=docs)
                options = Options(epsilon=calibration.epsilon)
                assert cell["epsilon"] == calibration.epsilon
            else:
                assert cell["epsilon"] is None
            expected = correlate(
                x,
                y,
                level=lvl,
                coefficient=coef,
                docs=docs,
                systems=systems,
                average=average,
                options=options,
            ).value
            assert cell["value"] == pytest.approx(expected, abs=1e-12), (run["label"], aspect)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--coef", "spa"], "--coef: spa (soft pairwise accuracy) compares every pair of systems"),
        (["--coef", "acc23", "--level", "system"], "--coef: acc23 compares pairs of outputs"),
        (["--coef", "spearman", "--tie-calibration"], "--tie-calibration: tie calibration applies"),
        (
            ["--level", "dataset", "--average", "micro"],
            "--average: micro averaging weighs documents",
        ),
        (["--coef", "pdp", "--average", "micro"], "--average: pdp pools the pairs"),
    ],
)
def test_command_refuses_a_statistic_where_it_does_not_exist_naming_the_flag(scored, args, flag):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=flag.replace("(", r"\(").replace(")", r"\)")):
        call_command("correlations", "--dataset", "scored", *args)
    assert (
        cached_matrix(Dataset.objects.get(name="scored"), MatrixParams()) is None
    )  # nothing computed


def test_matrix_ranks_runs_in_significance_clusters_with_one_paired_bootstrap_function(scored):
    from scoring.stats import (
        Alternative,
        Coefficient,
        Groups,
        Level,
        Unit,
        bootstrap_distribution,
        draw_resamples,
        paired_bootstrap_p,
    )

    params = MatrixParams(level="dataset", coefficient="pearson")
    result = compute_and_cache(Dataset.objects.get(name="scored"), params)
    labels = [r["label"] for r in result["runs"]]
    for column in result["columns"]:
        by_label = dict(zip(labels, column["cells"], strict=True))
        if column["aspect"]["code"] == "COH":  # fluency is noise to both runs
            assert by_label["good"]["rank"] == 1 and by_label["noise"]["rank"] == 2
        aspect = column["aspect"]["name"].lower()
        # p vs best is the paired bootstrap p on the matrix's own resamples.
        arrays = {label: file_arrays(scored, label, aspect) for label in labels}
        docs, systems = arrays["good"][2], arrays["good"][3]
        plan = draw_resamples(
            np.random.default_rng(0),
            Groups.from_keys(docs),
            Groups.from_keys(systems),
            unit=Unit.DOCUMENTS,
            resamples=1000,
        )
        draws = {
            label: bootstrap_distribution(
                plan,
                arrays[label][0],
                arrays[label][1],
                level=Level.DATASET,
                coefficient=Coefficient.PEARSON,
            )
            for label in labels
        }
        best, other = sorted(labels, key=lambda label: -by_label[label]["value"])
        assert by_label[best]["best"] and by_label[best]["p_vs_best"] is None
        expected = paired_bootstrap_p(
            draws[best],
            draws[other],
            by_label[best]["value"],
            by_label[other]["value"],
            Alternative.GREATER,
        )
        assert by_label[other]["p_vs_best"] == pytest.approx(expected)
    ranks = dict(zip(labels, result["average_rank"], strict=True))
    cluster_ranks = [
        dict(zip(labels, [c["rank"] for c in col["cells"]], strict=True))
        for col in result["columns"]
    ]
    assert ranks == {label: np.mean([r[label] for r in cluster_ranks]) for label in labels}
    assert ranks["good"] == 1.0 and ranks["noise"] > 1.0
    unranked = compute_and_cache(Dataset.objects.get(name="scored"), replace(params, ci=False))
    assert unranked["average_rank"] == [None, None]
    assert all(c["rank"] is None for col in unranked["columns"] for c in col["cells"])


def test_page_offers_each_statistic_where_it_exists_and_explains_a_combination_that_is_not(
    client, scored, cast
):
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[dataset_pk("scored")])
    page = client.get(url + "?coef=spa&level=sample")
    body = page.content.decode()
    assert page.status_code == 200 and 'id="matrix-problem"' in body
    assert "system-level statistic" in body and 'id="matrix-table"' not in body
    assert 'value="spa" data-levels="system"' in body
    assert 'value="acc23" data-levels="sample dataset"' in body
    assert 'data-coefs="acc23 kendall_23"' in body
    assert cached_matrix(Dataset.objects.get(name="scored"), page.context["params"]) is None
    calibrated = client.get(
        url + "?coef=acc23&ties=calibrate", headers={"HX-Request": "true", "HX-Target": "matrix"}
    )
    assert b'class="epsilon"' in calibrated.content and b"tie-calibrated" in calibrated.content
    # An option the statistic ignores is dropped, not an error: one cached matrix.
    plain = client.get(url + "?coef=spearman&ties=calibrate&average=macro")
    assert plain.context["params"] == MatrixParams(coefficient="spearman")
    assert b"Avg. rank" in plain.content


def test_drilldown_and_exports_carry_the_cells_epsilon_and_rank(client, scored, cast):
    client.force_login(cast["owner"])
    dataset = Dataset.objects.get(name="scored")
    query = "?coef=acc23&ties=calibrate&level=sample"
    result = compute_and_cache(
        dataset, MatrixParams.from_query({"coef": "acc23", "ties": "calibrate", "level": "sample"})
    )
    run = dataset.runs.get(label="good")
    aspect = Aspect.objects.get(code="COH")
    column = next(c for c in result["columns"] if c["aspect"]["code"] == "COH")
    cell = next(c for c in column["cells"] if c["run"] == run.pk)
    details = client.get(
        reverse("studies:correlations-cell", args=[dataset.pk, run.pk, aspect.pk]) + query,
        headers={"HX-Request": "true"},
    ).context["d"]
    assert (details["value"], details["epsilon"]) == (cell["value"], cell["epsilon"])
    base = reverse("studies:correlations-export", args=[dataset.pk, "csv"]).rsplit(".", 1)[0]
    csv_text = client.get(base + ".csv" + query).content.decode()
    header = csv_text.splitlines()[0].split(",")
    assert "average_rank" in header and "COH_rank" in header and "COH_epsilon" in header
    latex = client.get(base + ".tex" + query).content.decode()
    assert "Avg. rank" in latex and "(1)" in latex
    bad = client.get(base + ".csv?coef=spa&level=dataset")
    assert bad.status_code == 400 and b"system-level statistic" in bad.content


def test_paper_view_shows_the_ranks_table(client, scored, cast):
    client.force_login(cast["owner"])
    url = reverse("studies:correlations-paper", args=[dataset_pk("scored")])
    body = client.get(url + "?level=dataset").content.decode()
    table = body.split('id="ranks-table"')[1].split("</table>")[0]
    assert table.index("good") < table.index("noise")  # best average rank first
    problem = client.get(url + "?coef=spa&level=sample").content.decode()
    assert 'id="paper-problem"' in problem and 'id="ranks-table"' not in problem


def test_command_averages_ranks_over_aspects_and_datasets(scored, write_jsonl, cast):
    records = synthetic_records(n_docs=10, seed=5)
    path = write_jsonl(records, name="scored2.jsonl")
    import_jsonl(path, "scored2", cast["owner"])
    both = command_json(
        "--dataset",
        "scored",
        "--dataset",
        "scored2",
        "--level",
        "dataset",
        "--ci",
        "--resamples",
        "300",
    )
    assert [d["n_documents"] for d in both["datasets"]] == [12, 10]
    assert list(both["average_rank"]) == ["good", "noise"]
    assert both["average_rank"]["good"] == 1.0
    from io import StringIO

    out = StringIO()
    call_command(
        "correlations",
        "--dataset",
        "scored",
        "--dataset",
        "scored2",
        "--ci",
        "--resamples",
        "300",
        stdout=out,
    )
    text = out.getvalue()
    assert "== scored2" in text and "Average rank across aspects and datasets" in text
