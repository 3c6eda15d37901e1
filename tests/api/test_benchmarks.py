"""Loading a benchmark from the API and the page: an import job the worker runs (the
download and the import never in the request), a non-commercial licence refused unless
accepted, the licence and citation shown on the dataset's page; the upload's format field
routes a tool's export through its adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from studies.models import Dataset, ImportJob, Output
from studies.services import queue
from studies.services.imports import run_import_job
from tests.studies.sources import annotation_exports as ann

pytestmark = pytest.mark.django_db

SUMMEVAL_LINE = {
    "id": "dm-test-1",
    "model_id": "M0",
    "decoded": "a summary",
    "references": ["the highlights"],
    "text": "the article",
    "expert_annotations": [
        {"coherence": c, "consistency": 5, "fluency": 4, "relevance": 3} for c in (1, 2, 3)
    ],
    "turker_annotations": [
        {"coherence": 3, "consistency": 3, "fluency": 3, "relevance": 3} for _ in range(5)
    ],
}


def cache_summeval() -> None:
    """The summeval release as a worker would have downloaded it (no network in tests)."""
    folder = Path(settings.DATA_DIR) / "benchmarks" / "url" / "summeval" / "81b59ad"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [SUMMEVAL_LINE, {**SUMMEVAL_LINE, "model_id": "M1", "decoded": "another"}]
    (folder / "model_annotations.aligned.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )


def test_api_lists_benchmarks_and_loads_one_as_a_job_the_worker_runs(
    world, django_capture_on_commit_callbacks
):
    client = world.client("owner")
    listed = client.get("/api/benchmarks/")
    assert listed.status_code == 200
    rows = {row["name"]: row for row in listed.json()}
    assert "MIT" in rows["summeval"]["licence"] and rows["chatbot-arena"]["accept"]
    refused = client.post(
        "/api/benchmarks/", {"name": "chatbot-arena", "dataset": "ca"}, format="json"
    )
    assert refused.status_code == 400 and not ImportJob.objects.filter(dataset_name="ca").exists()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        created = client.post(
            "/api/benchmarks/", {"name": "summeval", "dataset": "se"}, format="json"
        )
    assert created.status_code == 201, created.content
    job = ImportJob.objects.get(pk=created.json()["id"])
    assert job.status == ImportJob.Status.PENDING and callbacks  # enqueued, not run
    assert not Dataset.objects.filter(name="se").exists()
    cache_summeval()
    assert run_import_job(job.pk) == ImportJob.Status.SUCCEEDED
    dataset = Dataset.objects.get(name="se", owner=world.users["owner"])
    assert Output.objects.filter(document__dataset=dataset).count() == 2
    assert dataset.source_info["licence"]["spdx"] == "MIT"
    page = Client()
    page.force_login(world.users["owner"])
    shown = page.get(f"/datasets/{dataset.pk}/").content.decode()
    assert 'id="source-info"' in shown and "MIT" in shown and "fabbri2021summeval" in shown
    assert queue.IMPORT_UPLOAD  # the task the job was sent to


def test_page_lists_licences_and_refuses_a_non_commercial_one_unless_accepted(world):
    page = Client()
    page.force_login(world.users["owner"])
    shown = page.get("/datasets/benchmarks/")
    assert shown.status_code == 200 and "CC-BY-NC-4.0" in shown.content.decode()
    refused = page.post("/datasets/benchmarks/", {"name": "chatbot-arena", "dataset": "ca"})
    assert refused.status_code == 400 and not ImportJob.objects.filter(dataset_name="ca").exists()
    accepted = page.post(
        "/datasets/benchmarks/", {"name": "chatbot-arena", "dataset": "ca", "accept_licence": "on"}
    )
    assert accepted.status_code == 302
    assert ImportJob.objects.get(dataset_name="ca").file_format == "benchmark"


def test_upload_format_field_routes_an_export_through_its_adapter(world):
    content = json.dumps(ann.LS_TASKS).encode()
    response = world.client("owner").post(
        "/api/imports/?wait=10",
        {
            "file": SimpleUploadedFile("export.json", content),
            "dataset": "ls",
            "task": "custom",
            "create_aspects": True,
            "format": "label-studio",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "succeeded"
    assert Output.objects.filter(document__dataset__name="ls").exists()
    broken = json.loads(content)
    broken[0]["annotations"][0].pop("completed_by")
    failed = world.client("owner").post(
        "/api/imports/?wait=10",
        {
            "file": SimpleUploadedFile("export.json", json.dumps(broken).encode()),
            "dataset": "ls2",
            "task": "custom",
            "create_aspects": True,
            "format": "label-studio",
        },
        format="multipart",
    )
    assert failed.status_code == 400
    assert "completed_by" in json.dumps(failed.json()["errors"])
    assert not Dataset.objects.filter(name="ls2").exists()


def test_a_resumable_upload_keeps_the_format_chosen(world):
    started = world.client("owner").post(
        "/api/uploads/",
        {"file_name": "export.json", "size": 10, "dataset": "ls3", "format": "label-studio"},
        format="json",
    )
    assert started.status_code == 201, started.content
    assert started.json()["file_format"] == "label-studio"
