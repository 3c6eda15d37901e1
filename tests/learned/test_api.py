"""Trained metrics through the API: start (the training page's fields and checks, 400
naming the field, nothing created), list and filter, detail, cancel, resume, the page's
access rules; and a finished one scored through POST /api/runs/."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from learned.models import TrainedMetric
from learned.services.jobs import TrainingRequest, create_job
from learned.services.training import execute_job
from studies.models import Aspect, MetricRun
from studies.services.runs import execute_run
from studies.services.tokens import token_for
from tests.api.conftest import errors_body

pytestmark = pytest.mark.django_db
URL = "/api/learned/"


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user).key}")
    return client


def body(judged, model: str, **changes: object) -> dict[str, object]:  # type: ignore[no-untyped-def]
    return {
        "dataset": judged.pk,
        "aspect": Aspect.objects.get(code="COH").pk,
        "backbone": model,
        **changes,
    }


@pytest.fixture
def trained(judged, tiny_backbone):  # type: ignore[no-untyped-def]
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, epochs=2),
        enqueue=False,
        local_paths=True,
    )
    assert execute_job(job.pk) == "succeeded"
    job.refresh_from_db()
    return job


def test_creating_a_job_answers_201_and_enqueues_it_on_commit(
    cast, judged, installed_tiny, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api(cast["owner"]).post(
            URL, body(judged, installed_tiny, setup="multi", seed=4, max_minutes=1), format="json"
        )
    assert response.status_code == 201, response.content
    created = response.json()
    job = TrainedMetric.objects.get()
    assert (
        created["id"] == job.pk
        and created["status"] == "pending"
        and created["aspect_code"] == "COH"
    )
    assert sent == [("learned.tasks.train_metric_cpu", [job.pk], "cpu")]
    assert job.created_by == cast["owner"] and job.setup == "multi" and job.config["seed"] == 4
    assert created["split_sizes"] == {"judged": {"train": 10, "validation": 1, "test": 1}}
    assert created["pairs"]["train"] == 120 and created["checkpoint_sha256"] == ""


def test_the_default_backbone_through_the_api_uses_12_blocks(cast, judged, sent):
    response = api(cast["owner"]).post(
        URL, {"dataset": judged.pk, "aspect": Aspect.objects.get(code="FLU").pk}
    )
    assert response.status_code == 201, response.content
    backbone = response.json()["config"]["backbone"]
    assert (backbone["label"], backbone["layer"]) == ("SmolLM2-135M-Instruct", 12)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"margin": 5}, "non_field_errors", "Too few preference pairs: 0 train pairs"),
        ({"backbone": "/etc"}, "backbone", "Unknown backbone /etc"),
        ({"layer": 3}, "layer", "layer must be between 1 and 2, not 3"),
        ({"aspect": "REL"}, "aspect", "Select a valid choice"),
        ({"setup": "single", "datasets": ["self"]}, "datasets", "multi and cross setups only"),
        ({"mode": "both"}, "mode", "is not a valid choice"),
        ({"dataset": 2**70}, "dataset", "Select a valid choice"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_creates_nothing(  # type: ignore[no-untyped-def]
    cast, judged, installed_tiny, sent, changes, field, message
):
    if changes.get("aspect") == "REL":  # no judgments on the dataset
        changes = {"aspect": Aspect.objects.get(code="REL").pk}
    if changes.get("datasets") == ["self"]:
        changes = {**changes, "datasets": [judged.pk]}
    response = api(cast["owner"]).post(URL, body(judged, installed_tiny, **changes), format="json")
    assert response.status_code == 400, response.content
    errors = errors_body(response)
    assert message in " ".join(errors["errors"][field]) and message in errors["detail"], errors
    assert not TrainedMetric.objects.exists() and not sent


def test_an_outsider_cannot_train_on_a_dataset_they_cannot_see(cast, judged, installed_tiny, sent):
    response = api(cast["outsider"]).post(URL, body(judged, installed_tiny), format="json")
    assert response.status_code == 400 and "dataset" in errors_body(response)["errors"]
    assert not TrainedMetric.objects.exists() and not sent


@pytest.mark.parametrize(
    ("role", "status"),
    [("owner", 200), ("admin", 200), ("outsider", 404), ("annotator", 403), (None, 401)],
)
def test_list_and_detail_follow_the_page_rules(cast, trained, role, status):  # type: ignore[no-untyped-def]
    client = api(cast[role] if role else None)
    assert client.get(f"{URL}{trained.pk}/").status_code == status
    listed = client.get(URL)
    assert listed.status_code == (200 if role == "outsider" else status)
    if listed.status_code == 200:
        ids = [j["id"] for j in listed.json()["results"]]
        assert ids == ([] if role == "outsider" else [trained.pk])
    assert client.post(URL, {}).status_code == (400 if status in (200, 404) else status)


def test_the_detail_has_progress_pairs_results_split_sizes_checksum_and_test_documents(
    cast, trained
):
    detail = api(cast["owner"]).get(f"{URL}{trained.pk}/").json()
    assert detail["status"] == "succeeded" and detail["progress"]["phase"] == "done"
    assert detail["pairs"]["train"] == 60 and detail["pairs"]["test"] == 6
    assert set(detail["results"]) >= {"base", "trained", "best_epoch"}
    assert 0 <= detail["results"]["trained"]["pairwise_accuracy"] <= 1
    assert detail["split_sizes"] == {"judged": {"train": 10, "validation": 1, "test": 1}}
    assert detail["test_documents"] == trained.test_docs() and len(detail["test_documents"]) == 1
    assert detail["checkpoint_sha256"] == trained.checkpoint_sha256 and len(detail["curves"]) == 2
    assert detail["config"]["backbone"]["pooling"] == "last+answer" and not detail["can_resume"]


def test_the_list_filters_by_dataset_and_status(cast, trained, judged, write_jsonl, tiny_backbone):
    from studies.services.imports import ImportOptions, import_file
    from tests.learned.conftest import records

    path = write_jsonl(records(), name="second.jsonl")
    import_file(
        path,
        ImportOptions(
            dataset="second",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=cast["owner"],
        ),
    )
    pending = create_job(
        TrainingRequest(dataset="owner/second", aspect="COH", backbone=tiny_backbone),
        enqueue=False,
        local_paths=True,
    )
    client = api(cast["owner"])

    def ids(**query: object) -> list[int]:
        return [j["id"] for j in client.get(URL, query).json()["results"]]

    assert ids() == [pending.pk, trained.pk]
    assert ids(dataset=judged.pk) == [trained.pk] and ids(dataset=pending.dataset_id) == [
        pending.pk
    ]
    assert ids(status="pending") == [pending.pk] and ids(status="succeeded") == [trained.pk]
    assert ids(status="succeeded", dataset=pending.dataset_id) == []
    assert client.get(URL, {"status": "sideways"}).status_code == 400


def test_cancel_then_resume_and_the_state_refusals(
    cast, judged, tiny_backbone, trained, sent, django_capture_on_commit_callbacks
):
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone),
        enqueue=False,
        local_paths=True,
    )
    client = api(cast["owner"])
    cancelled = client.post(f"{URL}{job.pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = client.post(f"{URL}{job.pk}/cancel/")
    assert (
        again.status_code == 409 and "only a pending or running job" in errors_body(again)["detail"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        resumed = client.post(f"{URL}{job.pk}/resume/")
    assert resumed.status_code == 200 and resumed.json()["status"] == "pending"
    assert sent == [("learned.tasks.train_metric_cpu", [job.pk], "cpu")]
    refused = client.post(f"{URL}{trained.pk}/resume/")
    assert refused.status_code == 409 and "cannot be resumed" in errors_body(refused)["detail"]
    assert api(cast["outsider"]).post(f"{URL}{job.pk}/cancel/").status_code == 404
    assert api(cast["annotator"]).post(f"{URL}{job.pk}/resume/").status_code == 403
    assert TrainedMetric.objects.get(pk=job.pk).status == "pending"


def test_a_trained_metric_scores_a_dataset_through_the_runs_api(cast, judged, trained, sent):
    client = api(cast["owner"])
    response = client.post(
        "/api/runs/",
        {"dataset": judged.pk, "metric": "learned", "model": str(trained.pk)},
        format="json",
    )
    assert response.status_code == 201, response.content
    (run,) = response.json()
    assert run["metric"] == "learned" and run["label"].startswith(f"learned#{trained.pk}")
    assert run["config"]["checkpoint_sha256"] == trained.checkpoint_sha256 and run["total"] == 48
    assert execute_run(run["id"]) == "succeeded"
    assert client.get(f"/api/runs/{run['id']}/").json()["done"] == 48
    TrainedMetric.objects.filter(pk=trained.pk).update(status="running")
    refused = client.post(
        "/api/runs/",
        {"dataset": judged.pk, "metric": "learned", "model": str(trained.pk)},
        format="json",
    )
    assert refused.status_code == 400
    assert "No finished trained metric" in errors_body(refused)["detail"]
    assert MetricRun.objects.filter(metric="learned").count() == 1
