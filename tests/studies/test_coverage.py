"""A run that scored part of a dataset is shown with its coverage, never best, and only
compared with others on the outputs both scored (issue 13)."""

from __future__ import annotations

import json
from dataclasses import replace
from urllib.parse import parse_qsl

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from scoring.stats import (
    Alternative,
    Coefficient,
    Groups,
    Level,
    bootstrap_distribution,
    correlate,
    draw_resamples,
    paired_bootstrap_p,
)
from studies.models import Dataset, MetricScore, Output
from studies.services.analysis.dashboards import compute_and_cache, frame_for
from studies.services.analysis.frames import restrict_to_documents
from studies.services.analysis.matrix import compute_matrix
from studies.services.analysis.params import MatrixParams
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db
DATASET = MatrixParams(level="dataset")


def partial_run(label: str, docs: set[int], *, noise: float = 0.0, seed: int = 0) -> int:
    """A run scoring only ``docs`` (indices of doc00…doc11) with the coherence judgment
    plus noise: a near-perfect metric that would be the best of any column it enters."""
    dataset = Dataset.objects.get(name="scored")
    run = MetricRunFactory(dataset=dataset, label=label, metric="imported", kind="imported")
    rng = np.random.default_rng(seed)
    scores = []
    for output in Output.objects.filter(document__dataset=dataset).order_by("pk"):
        if int(output.document.doc_key[3:]) in docs:
            human = output.judgments.get(aspect__code="COH").value
            scores.append(MetricScore(run=run, output=output, value=human + rng.normal(0, noise)))
    MetricScore.objects.bulk_create(scores)
    dataset.bump_data_version()
    return int(run.pk)


def column(result, code="COH"):  # type: ignore[no-untyped-def]
    cells = next(c for c in result["columns"] if c["aspect"]["code"] == code)["cells"]
    return {run["label"]: cell for run, cell in zip(result["runs"], cells, strict=True)}


def test_a_partial_run_is_never_best_and_leaves_the_full_runs_tests_alone(scored):  # noqa: F811
    dataset = Dataset.objects.get(name="scored")
    before = column(compute_and_cache(dataset, DATASET))
    partial_run("one-document", {0}, noise=0.01)
    dataset.refresh_from_db()
    result = compute_and_cache(dataset, DATASET)
    after, fluency = column(result), column(result, "FLU")
    oracle, good = after["one-document"], after["good"]
    assert oracle["value"] > good["value"]  # it would be the best on its value alone
    assert oracle["partial"] and not oracle["best"] and oracle["rank"] is None
    assert good["best"] and good["n_shared_with_best"] == 60
    assert (oracle["coverage_outputs"], oracle["judged_outputs"]) == (5, 60)
    assert (oracle["coverage_documents"], oracle["judged_documents"]) == (1, 12)
    assert oracle["coverage"] == pytest.approx(5 / 60)
    assert oracle["n_shared_with_best"] == 5 and oracle["p_vs_best"] is not None
    # doc00's first output has no fluency judgment
    assert fluency["one-document"]["coverage_outputs"] == 4
    assert fluency["good"]["judged_outputs"] == 59
    for label in ("good", "noise"):  # the full runs' tests are what they were
        for key in ("value", "low", "high", "best", "p_vs_best", "below_best", "rank"):
            assert after[label][key] == before[label][key], (label, key)
        assert not after[label]["partial"] and after[label]["coverage"] == 1.0


def test_below_the_threshold_a_partial_run_may_be_best_compared_on_shared_outputs(scored):  # noqa: F811
    partial_run("one-document", {0}, noise=0.01)
    dataset = Dataset.objects.get(name="scored")
    cells = column(compute_and_cache(dataset, replace(DATASET, min_coverage=0.05)))
    assert cells["one-document"]["best"] and not cells["one-document"]["partial"]
    assert cells["good"]["n_shared_with_best"] == 5  # the good run's 60 outputs, 5 shared


def test_restricted_to_its_documents_a_partial_run_is_full(scored):  # noqa: F811
    partial_run("two-documents", {0, 1}, noise=0.01)
    dataset = Dataset.objects.get(name="scored")
    frame = restrict_to_documents(frame_for(dataset, DATASET), ["doc00", "doc01"])  # as testof=
    cells = column(compute_matrix(frame, DATASET))
    assert not cells["two-documents"]["partial"] and cells["two-documents"]["best"]
    assert (cells["good"]["coverage_outputs"], cells["good"]["judged_outputs"]) == (10, 10)


def test_two_partial_runs_are_compared_on_the_outputs_both_scored(scored):  # noqa: F811
    first = partial_run("first", set(range(6)), noise=0.8, seed=1)
    second = partial_run("second", set(range(3, 10)), noise=1.5, seed=2)
    dataset = Dataset.objects.get(name="scored")
    params = replace(DATASET, min_coverage=0.0)
    frame = frame_for(dataset, params, only_runs=[first, second])
    cells = column(compute_matrix(frame, params))
    best, other = ("first", "second") if cells["first"]["best"] else ("second", "first")
    assert cells[other]["n_shared_with_best"] == 15  # documents 3, 4 and 5
    # the pure function on the shared outputs (documents 3-5) gives the same p
    j = frame.aspect_index(next(a.pk for a in frame.aspects if a.code == "COH"))
    human = frame.human[:, j]
    shared = np.isfinite(frame.metrics).all(axis=1)
    docs = Groups.from_keys(frame.doc_codes)
    plan = draw_resamples(
        np.random.default_rng(params.seed), docs, frame.system_codes, resamples=params.resamples
    )
    values, draws = {}, {}
    for label, k in (("first", frame.run_index(first)), ("second", frame.run_index(second))):
        metric = np.where(shared, frame.metrics[:, k], np.nan)
        estimate = correlate(
            metric, human, level=Level.DATASET, coefficient=Coefficient.SPEARMAN, docs=docs
        )
        values[label] = estimate.value
        draws[label] = bootstrap_distribution(
            plan,
            metric,
            human,
            level=Level.DATASET,
            coefficient=Coefficient.SPEARMAN,
            estimate=estimate,
        )
    expected = paired_bootstrap_p(
        draws[best], draws[other], values[best], values[other], Alternative.GREATER
    )
    assert cells[other]["p_vs_best"] == pytest.approx(expected)
    assert cells[best]["value"] != pytest.approx(values[best])  # its own cell uses all it scored


def test_the_threshold_comes_from_the_query_and_is_in_the_cache_key(scored):  # noqa: F811
    dataset = Dataset.objects.get(name="scored")
    params = MatrixParams.from_query({"mincov": "5"})
    assert params.min_coverage == pytest.approx(0.05) and "mincov=5" in params.query
    assert MatrixParams.from_query(dict(parse_qsl(params.query))) == params
    assert params.key(dataset) != MatrixParams().key(dataset)
    for bad in ("abc", "150", "-1", "nan"):
        assert MatrixParams.from_query({"mincov": bad}).min_coverage == 0.9
    assert "mincov" not in MatrixParams.from_query({"mincov": "90"}).query


def test_the_page_greys_a_partial_run_and_says_what_it_is_compared_on(client, scored, cast):  # noqa: F811
    partial_run("one-document", {0}, noise=0.01)
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[Dataset.objects.get(name="scored").pk])
    html = client.get(url + "?level=dataset").content.decode()
    assert html.count(' partial"') == 2  # its COH and FLU cells
    assert "below the 90% coverage threshold: not ranked and never best" in html
    assert "compared with the best on the 5 outputs both scored" in html
    assert "5/60 out., 1/12 docs" in html and 'style="' not in html
    low = client.get(url + "?level=dataset&mincov=5").content.decode()
    assert ' partial"' not in low and 'name="mincov"' in low and 'value="5"' in low


def test_exports_api_command_and_paper_view_carry_the_coverage(client, scored, cast, capsys):  # noqa: F811
    partial_run("one-document", {0}, noise=0.01)
    dataset = Dataset.objects.get(name="scored")
    client.force_login(cast["owner"])
    export = reverse("studies:correlations-export", args=[dataset.pk, "csv"]).rsplit(".", 1)[0]
    lines = client.get(export + ".csv?level=dataset").content.decode().splitlines()
    header = lines[0].split(",")
    row = next(line.split(",") for line in lines if line.startswith("one-document"))
    assert row[header.index("COH_coverage_outputs")] == "5"
    assert row[header.index("COH_judged_documents")] == "12"
    assert row[header.index("COH_partial")] == "1"
    as_json = json.loads(client.get(export + ".json?level=dataset").content)
    assert column(as_json)["one-document"]["coverage_documents"] == 1

    api = APIClient()
    api.force_authenticate(cast["owner"])
    answer = column(
        api.get(f"/api/datasets/{dataset.pk}/correlations/?level=dataset&mincov=5").json()
    )
    assert answer["one-document"]["best"] and answer["one-document"]["judged_outputs"] == 60
    assert answer["good"]["n_shared_with_best"] == 5
    assert api.get(f"/api/datasets/{dataset.pk}/correlations/?mincov=150").status_code == 400

    call_command(
        "correlations",
        "--dataset",
        str(dataset.pk),
        "--level",
        "dataset",
        "--ci",
        "--min-coverage",
        "5",
        "--format",
        "json",
    )
    assert column(json.loads(capsys.readouterr().out))["one-document"]["best"]
    call_command("correlations", "--dataset", str(dataset.pk), "--level", "dataset", "--ci")
    assert "~5/60" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--min-coverage"):
        call_command("correlations", "--dataset", str(dataset.pk), "--min-coverage", "101")

    paper = client.get(reverse("studies:correlations-paper", args=[dataset.pk]) + "?level=dataset")
    html = paper.content.decode()
    assert html.count('<tr class="partial">') == 2  # its rows of the ranks and G-Eval tables
    assert html.count(">4/59</span>") == 2  # its least covered aspect (FLU)
    assert html.count(">60/60</span>") == 4
