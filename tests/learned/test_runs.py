"""A trained metric used as a metric: a run through the normal run machinery, the
correlations page restricted to its test documents, and the report page."""

from __future__ import annotations

import math

import pytest
from django.core.management import call_command
from django.urls import reverse

from learned.models import TrainedMetric
from learned.services.jobs import TrainingRequest, create_job
from learned.services.scoring import load_trained
from learned.services.training import execute_job
from studies.models import MetricRun, MetricScore, Output
from studies.services.analysis.dashboards import compute_matrix, frame_for
from studies.services.analysis.params import MatrixParams
from studies.services.runs import RunError, RunRequest, execute_run, start_run
from studies.services.runs.core import item_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def trained(judged, tiny_backbone):  # type: ignore[no-untyped-def]
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, epochs=3),
        enqueue=False,
        local_paths=True,
    )
    assert execute_job(job.pk) == "succeeded"
    job.refresh_from_db()
    return job


def test_a_learned_runs_page_says_what_it_read(trained, judged, client, cast):
    run = start_run(judged, RunRequest(metric="learned", model=str(trained.pk)), enqueue=False)
    client.force_login(cast["owner"])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    about = page[page.index('id="learned-about"') :].split("</p>")[0]
    assert f"Learned metric #{trained.pk}" in about and "reading the aspect" in about
    decoder = trained.config["backbone"]["decoder"]
    assert ("decoder" if decoder else "encoder") in about
    assert "against the document's references" not in page


def test_a_trained_metric_scores_a_dataset_through_the_normal_run_path(trained, judged):
    run = start_run(judged, RunRequest(metric="learned", model=str(trained.pk)), enqueue=False)
    assert run.config["checkpoint_sha256"] == trained.checkpoint_sha256
    assert run.config["trained_on"]["judged"] and run.total == 48
    assert execute_run(run.pk, chunk_outputs=8) == "succeeded"
    run.refresh_from_db()
    scores = dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert run.status == "succeeded" and run.done == len(scores) == 48
    assert all(v is not None and math.isfinite(v) for v in scores.values())
    scorer = load_trained(trained.checkpoint, trained.checkpoint_sha256)
    outputs = list(Output.objects.filter(document__dataset=judged).select_related("document")[:5])
    again = scorer.score(run.config["instruction"], [item_of(o) for o in outputs])
    assert again == pytest.approx([scores[o.pk] for o in outputs], abs=1e-5)
    assert execute_run(run.pk) == "not pending"  # a second delivery writes nothing
    assert MetricScore.objects.filter(run=run).count() == 48


def test_run_metric_takes_a_trained_metric_id(trained, judged, capsys):
    call_command(
        "run_metric", "--dataset", "judged", "--metric", "learned", "--model", str(trained.pk)
    )
    run = MetricRun.objects.get(metric="learned")
    assert (
        run.status == "succeeded"
        and run.done == 48
        and run.label.startswith(f"learned#{trained.pk}")
    )


def test_an_unfinished_or_unknown_trained_metric_cannot_be_run(judged, trained):
    TrainedMetric.objects.filter(pk=trained.pk).update(status="running")
    with pytest.raises(RunError, match="No finished trained metric"):
        start_run(judged, RunRequest(metric="learned", model=str(trained.pk)), enqueue=False)
    with pytest.raises(RunError, match="by its id"):
        start_run(judged, RunRequest(metric="learned", model="default"), enqueue=False)


def test_the_dashboards_can_keep_only_the_test_documents_of_a_trained_metric(trained, judged):
    params = MatrixParams.from_query({"testof": str(trained.pk)})
    assert params.test_of == trained.pk and "testof" in params.query
    assert params.key(judged) != MatrixParams().key(judged)
    frame = frame_for(judged, params)
    assert frame.doc_keys == trained.test_docs() and frame.n_outputs == 4
    assert frame_for(judged, MatrixParams()).n_outputs == 48


def test_the_correlations_page_flags_what_a_learned_metric_was_trained_on(
    client, cast, trained, judged
):
    run = start_run(judged, RunRequest(metric="learned", model=str(trained.pk)), enqueue=False)
    execute_run(run.pk)
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[judged.pk])
    page = client.get(url).content.decode()
    assert "trained on 11 documents" in page and f'value="{trained.pk}"' in page
    only_test = client.get(url, {"testof": trained.pk}).content.decode()
    assert "1 documents (the test documents of learned metric" in only_test


def test_a_learned_metric_is_in_sample_on_its_training_documents_never_best(
    client, cast, trained, judged
):
    """Issue: the learned metric ranked first in every column although it was trained
    on 90 of the 100 documents."""
    run = start_run(judged, RunRequest(metric="learned", model=str(trained.pk)), enqueue=False)
    execute_run(run.pk)
    call_command("run_metric", "--dataset", "judged", "--metric", "rouge2")
    params = MatrixParams(resamples=200)
    result = compute_matrix(frame_for(judged, params), params)
    at = [r["pk"] for r in result["runs"]].index(run.pk)
    for column in result["columns"]:
        cell = column["cells"][at]
        assert cell["in_sample"] and not cell["best"] and cell["rank"] is None
        assert not any(c["in_sample"] for k, c in enumerate(column["cells"]) if k != at)
    only_test = MatrixParams(resamples=200, test_of=trained.pk)
    result = compute_matrix(frame_for(judged, only_test), only_test)
    assert not any(column["cells"][at]["in_sample"] for column in result["columns"])
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:correlations", args=[judged.pk])).content.decode()
    assert 'class="in-sample"' in page


def test_score_with_this_metric_opens_the_run_form_filled_in(client, cast, trained, judged):
    client.force_login(cast["owner"])
    page = client.get(reverse("learned:detail", args=[trained.pk])).content.decode()
    link = f"/datasets/{judged.pk}/runs/new/?metric=learned&amp;model={trained.pk}"
    assert f'id="score-with" href="{link}"' in page
    form = client.get(link.replace("&amp;", "&")).content.decode()
    assert '<option value="learned" selected>' in form
    assert f'name="model" value="{trained.pk}"' in form


def test_the_report_compares_base_trained_and_every_run_on_the_test_documents(
    client, cast, trained, judged
):
    call_command("run_metric", "--dataset", "judged", "--metric", "rouge2")
    client.force_login(cast["owner"])
    page = client.get(reverse("learned:report", args=[trained.pk])).content.decode()
    assert 'id="table2"' in page and "Base (" in page and "rouge2" in page
    assert f"{trained.results['trained']['pairwise_accuracy']:.3f}" in page
    assert 'data-chart="curve-spec"' in page and 'id="curve-spec" type="application/json"' in page


def test_the_job_page_polls_until_the_job_ends(client, cast, trained):
    client.force_login(cast["owner"])
    url = reverse("learned:detail", args=[trained.pk])
    assert client.get(url).status_code == 200
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 286 and b'id="job-progress"' in fragment.content
    assert b"hx-trigger" not in fragment.content
    TrainedMetric.objects.filter(pk=trained.pk).update(
        status="running", progress={"phase": "training", "epoch": 1, "epochs": 3}
    )
    running = client.get(url, HTTP_HX_REQUEST="true")
    assert (
        running.status_code == 200
        and b"every 1s" in running.content
        and b"epoch 1 / 3" in running.content
    )


def test_outsiders_and_annotators_cannot_see_a_trained_metric(client, cast, trained):
    for who, status in (("outsider", 404), ("annotator", 403)):
        client.force_login(cast[who])
        assert client.get(reverse("learned:detail", args=[trained.pk])).status_code == status
        assert client.get(reverse("learned:report", args=[trained.pk])).status_code == status


def test_a_run_can_score_only_the_test_documents_of_a_trained_metric(trained, judged):
    call_command(
        "run_metric", "--dataset", "judged", "--metric", "rouge2", "--test-docs-of", str(trained.pk)
    )
    run = MetricRun.objects.get(metric="rouge2")
    assert run.config["doc_keys"] == trained.test_docs() and run.total == run.done == 4
    keys = set(
        MetricScore.objects.filter(run=run).values_list("output__document__doc_key", flat=True)
    )
    assert keys == set(trained.test_docs())
