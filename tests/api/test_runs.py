"""Metric runs through the API: start with the run form's checks, status with progress,
cancel, resume, scores paginated and streamed."""

from __future__ import annotations

import json

import pytest

from studies.models import Aspect, MetricRun
from tests.api.conftest import ROLES, errors_body

pytestmark = pytest.mark.django_db
STATUS = {
    "anonymous": 401,
    "annotator": 403,
    "other_annotator": 403,
    "owner": 200,
    "collaborator": 200,
    "other_researcher": 404,
    "admin": 200,
}


@pytest.mark.parametrize("role", ROLES)
def test_run_detail_and_scores_follow_the_page_rules(world, role):
    client = world.client(role)
    assert client.get(f"/api/runs/{world.run.pk}/").status_code == STATUS[role]
    assert client.get(f"/api/runs/{world.run.pk}/scores/").status_code == STATUS[role]
    listed = client.get("/api/runs/")
    assert listed.status_code == (200 if role == "other_researcher" else STATUS[role])
    if listed.status_code == 200:
        datasets = {r["dataset"] for r in listed.json()["results"]}
        assert (world.dataset.pk in datasets) == (role != "other_researcher")


def test_starting_rouge_makes_three_runs_enqueued_on_commit(
    world, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.client("owner").post(
            "/api/runs/",
            {"dataset": world.dataset.pk, "metric": "rouge", "limit_docs": 2},
            format="json",
        )
    assert response.status_code == 201, response.content
    runs = response.json()
    assert [r["metric"] for r in runs] == ["rouge1", "rouge2", "rougeL"]
    assert all(r["status"] == "pending" and r["total"] == 6 and r["done"] == 0 for r in runs)
    assert len(callbacks) == 3


def test_gptscore_starts_one_run_per_aspect(world):
    aspects = list(Aspect.objects.filter(code__in=["COH", "FLU"]).values_list("pk", flat=True))
    response = world.client("owner").post(
        "/api/runs/",
        {
            "dataset": world.dataset.pk,
            "metric": "gptscore",
            "aspects": aspects,
            "setting": "IST",
            "dimension": "src_hypo",
            "limit_docs": 1,
            "precision": "fast",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert sorted(r["aspect"] for r in response.json()) == ["COH", "FLU"]
    runs = MetricRun.objects.filter(pk__in=[r["id"] for r in response.json()])
    assert {r.config["precision"] for r in runs} == {"fast"}  # frozen with each run


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"metric": "gptscore"}, "aspects"),
        ({"metric": "nonsense"}, "metric"),
        ({"metric": "rouge", "limit_docs": 0}, "limit_docs"),
        ({"metric": "gptscore", "aspects": [999999]}, "aspects"),
        ({"metric": "gptscore", "aspects": "COH"}, "aspects"),
        ({"metric": "rouge", "k": 99}, "k"),
        ({"metric": "gptscore", "aspects": [1], "precision": "half"}, "precision"),
        ({"metric": "bertscore", "model": "/no/such/model"}, "non_field_errors"),
        ({}, "dataset"),
    ],
)
def test_bad_run_requests_are_a_400_naming_the_field_and_start_nothing(world, body, field):
    before = MetricRun.objects.count()
    if body:
        body = {"dataset": world.dataset.pk, **body}
    response = world.client("owner").post("/api/runs/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in errors_body(response)["errors"]
    assert MetricRun.objects.count() == before


@pytest.mark.parametrize("role", ROLES)
def test_starting_a_run_on_someone_elses_dataset_is_refused(world, role):
    response = world.client(role).post(
        "/api/runs/", {"dataset": world.dataset.pk, "metric": "bleu"}, format="json"
    )
    # collaborators run metrics on the datasets they research
    assert response.status_code == {**STATUS, "owner": 201, "collaborator": 201, "admin": 201}[role]


def test_status_shows_progress_rate_and_eta(world):
    run = MetricRun.objects.create(
        dataset=world.dataset,
        metric="rouge1",
        label="r1",
        status="running",
        done=4,
        total=12,
        timings={"outputs_per_s": 2.0},
    )
    body = world.client("owner").get(f"/api/runs/{run.pk}/").json()
    assert (body["done"], body["total"], body["outputs_per_s"], body["eta_seconds"]) == (
        4,
        12,
        2.0,
        4.0,
    )


def test_cancel_then_resume_and_the_state_refusals(world, django_capture_on_commit_callbacks):
    run = MetricRun.objects.create(dataset=world.dataset, metric="rouge1", label="r1", total=12)
    client = world.client("owner")
    assert client.post(f"/api/runs/{run.pk}/cancel/").json()["status"] == "cancelled"
    again = client.post(f"/api/runs/{run.pk}/cancel/")
    assert again.status_code == 409 and "cancelled" in errors_body(again)["detail"]
    with django_capture_on_commit_callbacks() as callbacks:
        resumed = client.post(f"/api/runs/{run.pk}/resume/")
    assert (
        resumed.status_code == 200 and resumed.json()["status"] == "pending" and len(callbacks) == 1
    )
    finished = client.post(f"/api/runs/{world.run.pk}/resume/")  # an imported, finished run
    assert finished.status_code == 409
    assert world.client("other_researcher").post(f"/api/runs/{run.pk}/cancel/").status_code == 404
    assert world.client("annotator").post(f"/api/runs/{run.pk}/cancel/").status_code == 403


def test_scores_paginated_and_streamed_agree(world):
    client = world.client("owner")
    page = client.get(f"/api/runs/{world.run.pk}/scores/?page_size=5").json()
    assert page["count"] == 12 and len(page["results"]) == 5
    rest = client.get(page["next"]).json()
    streamed = client.get(f"/api/runs/{world.run.pk}/scores/export/?file_format=jsonl")
    lines = [json.loads(x) for x in b"".join(streamed.streaming_content).decode().splitlines()]
    assert [r["value"] for r in lines[:10]] == [
        r["value"] for r in page["results"] + rest["results"]
    ]
    csv_lines = (
        b"".join(
            client.get(f"/api/runs/{world.run.pk}/scores/export/?file_format=csv").streaming_content
        )
        .decode()
        .splitlines()
    )
    assert csv_lines[0] == "output,doc_key,system_id,value,error" and len(csv_lines) == 13
    assert client.get(f"/api/runs/{world.run.pk}/scores/?page=99").status_code == 404
    bad = client.get(f"/api/runs/{world.run.pk}/scores/export/?file_format=xls")
    assert bad.status_code == 400 and "file_format" in errors_body(bad)["errors"]
