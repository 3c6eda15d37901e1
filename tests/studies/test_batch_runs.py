"""Batch runs without a server (the probe's findings stored): writing a served run's
requests sends nothing and leaves it WAITING (its page, the API and the jobs page say so;
the sweeper leaves it alone); a results file that refuses every request for good ends it
as an online run ends (FAILED, its outputs' errors kept); the run page downloads the
requests and uploads the results; the cost estimate prices the batch interface beside
the online one; a local run has no batch file. The answers themselves: tests/studies/test_served_batch.py, against
the real ``vllm run-batch``."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from studies.models import Dataset, Endpoint, MetricRun, MetricScore
from studies.services.catalog.endpoints import create_endpoint, dataset_text, estimate_cost
from studies.services.recovery import sweep_stale_work
from studies.services.runs import (
    RunError,
    RunRequest,
    can_resume,
    outcome,
    read_answers,
    start_run,
    write_requests,
)
from tests.factories import import_demo, probed_endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]


@pytest.fixture
def demo(cast, tmp_path) -> Dataset:  # type: ignore[no-untyped-def]
    return import_demo(cast["owner"], tmp_path)


def served_run(demo: Dataset, owner) -> MetricRun:  # type: ignore[no-untyped-def]
    endpoint = create_endpoint("judge", "http://127.0.0.1:9", "judge", owner=owner)
    probed_endpoint(Endpoint.objects.get(pk=endpoint.pk))
    request = RunRequest(aspect="COH", endpoint="judge", limit_docs=1)
    return start_run(demo, request, user=owner, enqueue=False)


def test_requests_are_written_and_a_refusing_results_file_ends_the_run(demo, cast):
    run = served_run(demo, cast["owner"])
    written = write_requests(run, "openai-batch")
    run.refresh_from_db()
    assert run.status == "waiting" and run.error == "" and can_resume(run)
    assert not run.is_finished and "Waiting for batch answers: 6 requests" in outcome(run)
    assert written.written == len(written.lines) == run.total == 6 and run.done == 0
    lines = [json.loads(line) for line in written.lines]
    assert {line["url"] for line in lines} == {"/v1/completions"}  # the online route
    assert all(line["body"]["model"] == "judge" and line["body"]["echo"] for line in lines)
    assert run.provenance["batch"]["requested"] == sorted(line["custom_id"] for line in lines)

    # half the file: the rest is missing, named by custom_id; nothing is stored
    refusal = {"status_code": 400, "request_id": "r", "body": {"error": "too long"}}
    results = [
        json.dumps({"id": "b", "custom_id": line["custom_id"], "response": refusal, "error": None})
        for line in lines
    ]
    half = read_answers(run, results[:3])
    assert half.status == "waiting" and half.missing == sorted(
        lines[k]["custom_id"] for k in (3, 4, 5)
    )
    assert sorted(half.refused) == sorted(lines[k]["custom_id"] for k in (0, 1, 2))
    assert half.done == 3 and len(half.outstanding) == 3 and "3 missing" in half.summary()

    # the rest: every request refused for good is its output's error, as online
    rest = read_answers(run, results[3:])
    run.refresh_from_db()
    assert rest.outstanding == [] and run.done == run.total == 6
    assert run.status == "failed" and "6 of 6 outputs got no score" in run.error
    assert all("400" in s.error for s in MetricScore.objects.filter(run=run))


def test_a_local_run_has_no_batch_file(demo, cast):
    run = start_run(demo, RunRequest(aspect="COH", limit_docs=1), user=cast["owner"], enqueue=False)
    with pytest.raises(RunError, match="local model"):
        write_requests(run)


def refusals(lines: list[str]) -> list[bytes]:
    """A results file's lines refusing each request of a request file for good."""
    refusal = {"status_code": 400, "request_id": "r", "body": {"error": "too long"}}
    found = [json.loads(line)["custom_id"] for line in lines]
    return [
        json.dumps({"id": "b", "custom_id": c, "response": refusal, "error": None}).encode() + b"\n"
        for c in found
    ]


def test_a_waiting_run_says_so_on_its_page_the_api_and_the_jobs_page_and_is_never_swept(
    demo, cast, client
):
    run = served_run(demo, cast["owner"])
    write_requests(run)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.WAITING and run.finished_at is None

    client.force_login(cast["owner"])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-status">Waiting for batch answers<' in page and "Failed" not in page
    assert (
        "6 requests outstanding" in page
        and "hx-trigger" not in page.split('id="run-progress"')[1][:200]
    )
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert api["status"] == "waiting" and api["can_resume"] and "6 requests" in api["outcome"]
    rows = client.get("/api/jobs/").json()
    (row,) = [r for r in rows if r["url"] == f"/runs/{run.pk}/"]
    assert row["lane"] == "batch" and not row["running"] and (row["done"], row["total"]) == (0, 6)
    jobs = client.get("/jobs/").content.decode()
    assert 'id="lane-batch"' in jobs and run.label in jobs
    client.force_login(cast["outsider"])
    assert 'id="lane-batch"' not in client.get("/jobs/").content.decode()

    # days without a heartbeat: no worker holds it, so the sweeper has nothing to take back
    later = timezone.now() + timedelta(days=30)
    assert not any(v for k, v in sweep_stale_work(later).items() if k.endswith("_runs"))
    run.refresh_from_db()
    assert run.status == "waiting" and run.error == ""


def test_the_run_page_downloads_the_requests_and_reads_an_uploaded_results_file(demo, cast, client):
    run = served_run(demo, cast["owner"])
    client.force_login(cast["owner"])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="batch-requests"' in page and 'id="batch-results"' not in page  # nothing written yet

    url = f"/runs/{run.pk}/batch/requests/"
    assert client.get(url).status_code == 405
    got = client.post(url, {"batch_format": "openai-batch"})
    assert got.status_code == 200 and "attachment" in got["Content-Disposition"]
    lines = got.content.decode().splitlines()
    assert len(lines) == 6 and all(json.loads(line)["url"] == "/v1/completions" for line in lines)
    run.refresh_from_db()
    assert run.status == "waiting"
    assert 'id="batch-results"' in client.get(f"/runs/{run.pk}/").content.decode()

    # half the answers: the missing named by custom_id, the run still waiting
    results = refusals(lines)
    upload = SimpleUploadedFile("results.jsonl", b"".join(results[:3]))
    said = client.post(f"/runs/{run.pk}/batch/results/", {"file": upload}, follow=True)
    text = said.content.decode()
    assert said.redirect_chain[-1][0] == f"/runs/{run.pk}/" and "3 missing from the results" in text
    run.refresh_from_db()
    assert run.status == "waiting" and run.done == 3
    for custom_id in (json.loads(line)["custom_id"] for line in lines[3:]):
        assert custom_id in text

    # the rest: every output answered (refused for good: its error, as online); the run ends
    upload = SimpleUploadedFile("results.jsonl", b"".join(results[3:]))
    client.post(f"/runs/{run.pk}/batch/results/", {"file": upload})
    run.refresh_from_db()
    assert run.status == "failed" and run.done == run.total == 6 and "6 of 6" in run.error
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="batch-requests"' in page  # a failed run may go on by file

    # an empty file is refused by the form; another researcher's run is not found
    empty = SimpleUploadedFile("results.jsonl", b"")
    said = client.post(f"/runs/{run.pk}/batch/results/", {"file": empty}, follow=True)
    assert "file is empty" in said.content.decode()
    client.force_login(cast["outsider"])
    assert client.post(url, {"batch_format": "openai-batch"}).status_code == 404


def test_a_local_run_page_offers_no_batch_file_and_the_service_refuses_it(demo, cast, client):
    run = start_run(demo, RunRequest(aspect="COH", limit_docs=1), user=cast["owner"], enqueue=False)
    client.force_login(cast["owner"])
    assert 'id="batch-requests"' not in client.get(f"/runs/{run.pk}/").content.decode()
    said = client.post(
        f"/runs/{run.pk}/batch/requests/", {"batch_format": "openai-batch"}, follow=True
    )
    assert "local model" in said.content.decode()
    run.refresh_from_db()
    assert run.status == "pending"


def test_the_cost_estimate_shows_the_batch_price_beside_the_online_one(demo, cast, client):
    online = create_endpoint(
        "online-only",
        "http://127.0.0.1:9",
        "judge",
        owner=cast["owner"],
        price_in=2.0,
        price_out=8.0,
    )
    priced = create_endpoint(
        "both",
        "http://127.0.0.1:9",
        "judge",
        owner=cast["owner"],
        price_in=2.0,
        price_out=8.0,
        batch_price_in=1.0,
        batch_price_out=4.0,
    )
    text = dataset_text(demo)
    plain = estimate_cost(online, demo, "geval", text=text)
    both = estimate_cost(priced, demo, "geval", text=text)
    assert plain["batch_cost"] is None and plain["cost"] == both["cost"] > 0
    assert both["batch_cost"] == pytest.approx(both["cost"] / 2, abs=1e-6)

    client.force_login(cast["owner"])
    page = client.get(f"/datasets/{demo.pk}/runs/new/").content.decode()
    assert page.count("by batch file</span>") == 3  # GPTScore, G-Eval and pairwise of "both"
    assert f"{both['batch_cost']:.4f} by batch file" in page
    detail = client.get(f"/endpoints/{priced.pk}/").content.decode()
    assert "by batch file: input 1.0, output 4.0" in detail


def test_batch_prices_are_optional_and_bounded_as_the_online_ones(cast, client):
    client.force_login(cast["owner"])
    body = {"name": "e", "base_url": "http://127.0.0.1:9", "model_id": "m", "protocol": "openai"}
    made = client.post(
        "/api/endpoints/", {**body, "batch_price_in": 0.5}, content_type="application/json"
    )
    assert made.status_code == 201, made.content
    assert made.json()["batch_price_in"] == 0.5 and made.json()["batch_price_out"] is None
    for field, value in (("batch_price_in", -1), ("batch_price_out", 10_001)):
        refused = client.post(
            "/api/endpoints/",
            {**body, "name": f"x{value}", field: value},
            content_type="application/json",
        )
        assert refused.status_code == 400 and field in refused.json()["errors"]
    with pytest.raises(IntegrityError), transaction.atomic():  # every writer: the database too
        Endpoint.objects.filter(name="e").update(batch_price_out=1e308)
