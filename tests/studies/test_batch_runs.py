"""Batch runs without a server (the probe's findings stored): writing a served run's
requests sends nothing and leaves it waiting; a results file that refuses every request
for good ends it as an online run ends (FAILED, its outputs' errors kept); a local run
has no batch file. The answers themselves: tests/studies/test_served_batch.py, against
the real ``vllm run-batch``."""

from __future__ import annotations

import json

import pytest

from studies.models import Dataset, Endpoint, MetricRun, MetricScore
from studies.services.catalog.endpoints import create_endpoint
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
