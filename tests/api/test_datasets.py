"""Datasets, uploads (import jobs), exports and deletion through the API, for the six roles."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from studies.models import Dataset, ImportJob, MetricRun, Output, Study
from studies.services.imports import export_dataset
from tests.api.conftest import ROLES, errors_body
from tests.conftest import record, row_counts

pytestmark = pytest.mark.django_db

LIST_STATUS = {
    "anonymous": 401,
    "annotator": 403,
    "other_annotator": 403,
    "owner": 200,
    "collaborator": 200,
    "other_researcher": 200,
    "admin": 200,
}
DETAIL_STATUS = {**LIST_STATUS, "other_researcher": 404}


def jsonl(*records: dict[str, object]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.mark.parametrize("role", ROLES)
def test_dataset_list_and_detail_follow_the_page_rules(world, role):
    client = world.client(role)
    listed = client.get("/api/datasets/")
    assert listed.status_code == LIST_STATUS[role]
    detail = client.get(f"/api/datasets/{world.dataset.pk}/")
    assert detail.status_code == DETAIL_STATUS[role]
    if listed.status_code == 200:
        names = {d["name"] for d in listed.json()["results"]}
        expected = {
            "owner": {"scored"},
            "collaborator": {"scored"},
            "other_researcher": {"theirs"},
            "admin": {"scored", "theirs"},
        }
        assert names == expected[role]
    else:
        errors_body(listed)
    assert world.client(role).get("/api/datasets/999999/").status_code == (
        LIST_STATUS[role] if LIST_STATUS[role] != 200 else 404
    )


def test_owner_creates_a_dataset_and_bad_input_is_a_400_naming_the_field(world):
    client = world.client("owner")
    created = client.post("/api/datasets/", {"name": "fresh", "task": "dialogue"}, format="json")
    assert created.status_code == 201 and created.json()["owner"] == "owner"
    assert Dataset.objects.get(name="fresh").owner == world.users["owner"]
    bad = client.post("/api/datasets/", {"name": "has space", "task": "nope"}, format="json")
    assert bad.status_code == 400
    assert set(errors_body(bad)["errors"]) == {"name", "task"}
    assert (
        world.client("annotator")
        .post("/api/datasets/", {"name": "x", "task": "dialogue"}, format="json")
        .status_code
        == 403
    )


def test_upload_with_wait_imports_small_files_in_the_request(world):
    before = Output.objects.count()
    content = jsonl(record("n1", "s1"), record("n1", "s2"))
    response = world.client("owner").post(
        "/api/imports/?wait=10",
        {
            "file": SimpleUploadedFile("new.jsonl", content),
            "dataset": "uploaded",
            "task": "summarization",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    job = response.json()
    assert job["status"] == "succeeded" and job["summary"]["outputs"]["created"] == 2
    assert Output.objects.count() == before + 2
    assert world.client("owner").get(f"/api/imports/{job['id']}/").json()["status"] == "succeeded"
    assert world.client("other_researcher").get(f"/api/imports/{job['id']}/").status_code == 404


def test_upload_without_wait_returns_the_pending_job_and_enqueues_it(
    world, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.client("owner").post(
            f"/api/datasets/{world.dataset.pk}/upload/",
            {"file": SimpleUploadedFile("more.jsonl", jsonl(record("d9", "s0")))},
            format="multipart",
        )
    assert response.status_code == 201 and response.json()["status"] == "pending"
    assert response.json()["dataset_name"] == "scored" and len(callbacks) == 1


def test_a_bad_line_imports_nothing_and_the_error_names_line_and_field(world):
    before = row_counts()
    bad = jsonl(record("n1"), record("n2", human={"coherence": "high"}))
    response = world.client("owner").post(
        f"/api/datasets/{world.dataset.pk}/upload/?wait=10",
        {"file": SimpleUploadedFile("bad.jsonl", bad)},
        format="multipart",
    )
    body = errors_body(response)
    assert response.status_code == 400
    assert any("line 2" in m and "human.coherence" in m for m in body["errors"]["file"]), body
    assert body["job"]["status"] == "failed"
    assert row_counts() == before


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"dataset": "x", "task": "summarization"}, "file"),
        ({"file": ("x.txt", b"hello"), "dataset": "x"}, "file"),
        ({"file": ("x.jsonl", b""), "dataset": "x"}, "file"),
        ({"file": ("x.jsonl", b"{}\n"), "dataset": "bad name!"}, "dataset"),
        ({"file": ("x.jsonl", b"{}\n"), "dataset": "x", "task": "nope"}, "task"),
        ({"file": ("x.jsonl", b"{}\n"), "dataset": "x"}, None),
    ],
)
def test_upload_bad_input_is_a_400_naming_the_field_and_writes_nothing(world, data, field):
    data = dict(data)
    if "file" in data:
        name, content = data["file"]
        data["file"] = SimpleUploadedFile(name, content)
    response = world.client("owner").post(
        "/api/imports/?wait=x" if field is None else "/api/imports/", data, format="multipart"
    )
    assert response.status_code == 400
    assert (field or "wait") in errors_body(response)["errors"]
    assert not ImportJob.objects.exclude(pk=world.job.pk).exists()


@pytest.mark.parametrize("role", ROLES)
def test_upload_into_a_dataset_by_id_follows_the_rules(world, role):
    response = world.client(role).post(
        f"/api/datasets/{world.dataset.pk}/upload/",
        {"file": SimpleUploadedFile("u.jsonl", jsonl(record("z1")))},
        format="multipart",
    )
    # a collaborator reads the dataset but only its owner writes into it
    expected = {**DETAIL_STATUS, "owner": 201, "collaborator": 403, "admin": 201}
    assert response.status_code == expected[role]


@pytest.mark.parametrize("file_format", ["jsonl", "csv"])
def test_export_streams_what_the_export_service_writes(world, file_format):
    response = world.client("owner").get(
        f"/api/datasets/{world.dataset.pk}/export/?file_format={file_format}"
    )
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content).decode() == "".join(
        export_dataset(world.dataset, file_format)
    )
    bad = world.client("owner").get(f"/api/datasets/{world.dataset.pk}/export/?file_format=xml")
    assert bad.status_code == 400 and "file_format" in errors_body(bad)["errors"]
    assert (
        world.client("other_researcher")
        .get(f"/api/datasets/{world.dataset.pk}/export/")
        .status_code
        == 404
    )


def test_delete_is_for_the_owner_and_refused_while_runs_are_active(world):
    dataset = world.other_dataset  # the other researcher's, with a study
    member = world.users["owner"]
    study = Study.objects.get(dataset=dataset)
    study.memberships.create(user=member, role="researcher")  # the owner researches in it
    url = f"/api/datasets/{dataset.pk}/"
    assert world.client("owner").delete(url).status_code == 403  # sees it, is not its owner
    assert world.client("annotator").delete(url).status_code == 403
    refused = world.client("other_researcher").delete(url)
    assert refused.status_code == 409 and "studies" in errors_body(refused)["detail"]
    study.delete()
    MetricRun.objects.create(dataset=dataset, metric="rouge1", label="r", status="running")
    refused = world.client("other_researcher").delete(url)
    assert refused.status_code == 409 and "running" in errors_body(refused)["detail"]
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    MetricRun.objects.filter(dataset=dataset, status="running").update(status="cancelled")
    assert world.client("other_researcher").delete(url).status_code == 204
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert world.client("other_researcher").delete(url).status_code == 404


def test_a_dataset_name_is_unique_per_owner_only(world):
    body = {"name": "twin", "task": "summarization"}
    assert world.client("owner").post("/api/datasets/", body).status_code == 201
    again = world.client("owner").post("/api/datasets/", body)
    assert again.status_code == 400 and "name" in again.json()["errors"]
    assert world.client("other_researcher").post("/api/datasets/", body).status_code == 201
