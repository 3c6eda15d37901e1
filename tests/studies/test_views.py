"""Pages: works / forbidden / not found, the upload page, htmx polling, exports."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.models import Dataset, ImportJob, Output
from studies.services.imports import run_import_job
from tests.factories import DatasetFactory, OutputFactory, dataset_pk

pytestmark = pytest.mark.django_db

GOOD = (
    b'{"doc_id": "d1", "system_id": "s1", "source": "src", "references": ["ref"], '
    b'"output": "out", "human": {"coherence": 4}}\n'
)


def login(client, user):  # type: ignore[no-untyped-def]
    client.force_login(user)
    return client


def upload(client, content: bytes = GOOD, name: str = "up.jsonl", dataset: str = "uploaded"):  # type: ignore[no-untyped-def]
    return client.post(
        reverse("studies:upload"),
        {"file": SimpleUploadedFile(name, content), "dataset": dataset, "task": "summarization"},
    )


def test_pages_need_login(client):
    response = client.get(reverse("studies:dataset-list"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_login_page_logs_a_researcher_in(client, cast):
    response = client.post(reverse("login"), {"username": "owner", "password": "pw"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("studies:home")
    assert b"Your studies" in response.content
    nav = response.content.decode().split("<nav>")[1].split("</nav>")[0]
    assert "Datasets</a>" in nav and "Campaigns</a>" in nav


def test_annotator_cannot_open_researcher_pages(client, cast):
    login(client, cast["annotator"])
    assert client.get(reverse("studies:dataset-list")).status_code == 403
    assert upload(client).status_code == 403
    assert ImportJob.objects.count() == 0
    home = client.get(reverse("studies:home"), follow=True)
    assert home.redirect_chain[-1][0] == reverse("annotation:home")
    assert b"Your annotation work" in home.content
    nav = home.content.decode().split("<nav>")[1].split("</nav>")[0]
    assert "Annotate</a>" in nav and "Datasets</a>" not in nav and "Upload</a>" not in nav


def test_upload_saves_a_job_enqueues_on_commit_and_the_task_imports(
    client, cast, django_capture_on_commit_callbacks
):
    login(client, cast["owner"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = upload(client)
    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("studies:import-detail", args=[job.pk])
    assert len(callbacks) == 1 and job.status == "pending"
    assert run_import_job(job.pk) == "succeeded"
    assert run_import_job(job.pk) == "not pending"  # a second delivery writes nothing
    job.refresh_from_db()
    assert job.summary["outputs"]["created"] == 1
    assert Dataset.objects.get(name="uploaded").owner == cast["owner"]
    page = client.get(reverse("studies:import-detail", args=[job.pk]))
    assert b"1 records imported" in page.content


def test_upload_with_a_bad_line_fails_the_job_with_located_errors(client, cast):
    login(client, cast["owner"])
    upload(client, GOOD + b'{"doc_id": "d2"}\n')
    job = ImportJob.objects.get()
    run_import_job(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert "line 2, field 'system_id': missing required field" in job.errors
    assert Output.objects.count() == 0 and not Dataset.objects.filter(name="uploaded").exists()
    page = client.get(reverse("studies:import-detail", args=[job.pk]))
    assert b"Nothing was imported" in page.content and b"line 2" in page.content


def test_upload_of_the_wrong_file_type_is_refused_on_the_form(client, cast):
    login(client, cast["owner"])
    response = upload(client, b"hello", name="notes.txt")
    assert response.status_code == 400
    assert b"use a .jsonl or .csv file" in response.content
    assert ImportJob.objects.count() == 0


def test_upload_naming_someone_elses_dataset_neither_reveals_nor_touches_it(client, cast):
    theirs = OutputFactory(
        document__dataset__name="private", document__dataset__owner=cast["outsider"]
    )
    login(client, cast["owner"])
    response = upload(client, dataset="private")
    assert response.status_code == 302  # no 400 saying that the name is taken
    run_import_job(ImportJob.objects.get().pk)
    mine = Dataset.objects.get(name="private", owner=cast["owner"])
    assert Output.objects.filter(document__dataset=mine).count() == 1
    assert list(Output.objects.filter(document__dataset=theirs.document.dataset)) == [theirs]


def test_import_status_partial_polls_until_finished(client, cast):
    login(client, cast["owner"])
    upload(client)
    job = ImportJob.objects.get()
    url = reverse("studies:import-detail", args=[job.pk])
    pending = client.get(url, headers={"HX-Request": "true"})
    assert pending.status_code == 200 and b'hx-trigger="every 1s"' in pending.content
    assert b"<html" not in pending.content and "HX-Request" in pending["Vary"]
    run_import_job(job.pk)
    done = client.get(url, headers={"HX-Request": "true"})
    assert done.status_code == 286 and b"hx-trigger" not in done.content


def test_import_job_of_another_user_is_not_found(client, cast):
    login(client, cast["owner"])
    upload(client)
    job = ImportJob.objects.get()
    login(client, cast["outsider"])
    assert client.get(reverse("studies:import-detail", args=[job.pk])).status_code == 404


def test_dataset_pages_show_own_datasets_only(client, cast):
    mine = OutputFactory(document__dataset__owner=cast["owner"]).document.dataset
    theirs = DatasetFactory(owner=cast["outsider"])
    login(client, cast["owner"])
    listing = client.get(reverse("studies:dataset-list")).content.decode()
    assert mine.name in listing and theirs.name not in listing
    detail = client.get(reverse("studies:dataset-detail", args=[mine.pk]))
    assert detail.status_code == 200 and b'id="n-outputs">1<' in detail.content
    assert client.get(reverse("studies:dataset-detail", args=[theirs.pk])).status_code == 404
    assert client.get(reverse("studies:dataset-export", args=[theirs.pk, "csv"])).status_code == 404


def test_export_streams_csv_and_jsonl(client, cast):
    login(client, cast["owner"])
    upload(client)
    run_import_job(ImportJob.objects.get().pk)
    response = client.get(reverse("studies:dataset-export", args=[dataset_pk("uploaded"), "jsonl"]))
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content) == GOOD.replace(
        b'"human": {"coherence": 4}', b'"human": {"coherence": 4.0}'
    )
    csv_body = b"".join(
        client.get(
            reverse("studies:dataset-export", args=[dataset_pk("uploaded"), "csv"])
        ).streaming_content
    )
    assert csv_body.splitlines()[0] == b"doc_id,system_id,source,reference_1,output,human_coherence"
    assert client.get("/datasets/uploaded/export.xml").status_code == 404


def test_dataset_detail_uses_a_bounded_number_of_queries(
    client, cast, django_assert_max_num_queries
):
    dataset = DatasetFactory(owner=cast["owner"])
    for i in range(20):
        OutputFactory(document__dataset=dataset, document__doc_key=f"k{i}")
    login(client, cast["owner"])
    with django_assert_max_num_queries(14):
        assert client.get(reverse("studies:dataset-detail", args=[dataset.pk])).status_code == 200


def test_run_pages_start_follow_cancel_and_resume(
    client, cast, tmp_path, settings, django_capture_on_commit_callbacks
):
    from studies.models import MetricRun
    from tests.tiny_models import tiny_gpt2

    settings.CONCORDIA = {**settings.CONCORDIA, "MODEL_DIR": tmp_path}
    tiny_gpt2(tmp_path / "tiny")
    model = "tiny"  # an installed model, by its folder name
    login(client, cast["owner"])
    upload(client)
    run_import_job(ImportJob.objects.get().pk)
    from studies.models import Aspect

    coh = Aspect.objects.get(code="COH")
    url = reverse("studies:run-new", args=[dataset_pk("uploaded")])
    assert client.get(url).status_code == 200
    bad = client.post(
        url,
        {
            "aspects": [coh.pk],
            "setting": "IST",
            "dimension": "src_hypo",
            "model": "/no/such/model",
            "k": 0,
        },
    )
    assert bad.status_code == 400 and b"Unknown model" in bad.content
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            url,
            {
                "aspects": [coh.pk],
                "setting": "IST",
                "dimension": "src_hypo",
                "model": model,
                "k": 0,
            },
        )
    run = MetricRun.objects.get(kind="computed")
    assert response.status_code == 302 and len(callbacks) == 1
    progress = client.get(
        reverse("studies:run-detail", args=[run.pk]), headers={"HX-Request": "true"}
    )
    assert (
        progress.status_code == 200
        and b'hx-trigger="every 1s"' in progress.content
        and b"0 / 1" in progress.content
    )
    client.post(reverse("studies:run-cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "cancelled"
    finished = client.get(
        reverse("studies:run-detail", args=[run.pk]), headers={"HX-Request": "true"}
    )
    assert finished.status_code == 286 and b"Resume" in finished.content
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(reverse("studies:run-resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "pending" and len(callbacks) == 1
    login(client, cast["outsider"])
    assert client.get(reverse("studies:run-detail", args=[run.pk])).status_code == 404
    login(client, cast["annotator"])
    assert client.get(reverse("studies:run-detail", args=[run.pk])).status_code == 403
