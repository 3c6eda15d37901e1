"""Served runs end honestly and hold what they open (issue 36, findings 2 and 7's
answers), through the real ``io`` worker against servers the tests start: the worker's
database connections stay flat over a run (counted in PostgreSQL's pg_stat_activity); a
run whose outputs are mostly errors (NaN log-probabilities) ends FAILED with the reason,
never a database error, and Resume scores them again; a malformed usage neither leaves
a probe unfinished nor lets a server lower the cost the cap counts."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest
from django.conf import settings
from django.db import connection

from studies.models import Dataset, Endpoint, MetricRun, MetricScore
from studies.services.catalog.endpoints import create_endpoint, probe_endpoint
from studies.services.imports import ImportOptions, import_file
from studies.services.runs import RunRequest, cancel_run, execute_run, start_run
from studies.services.runs.core import enqueue_run
from tests.adversary import wait_for
from tests.conftest import SHARED_DATA
from tests.factories import import_demo

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.worker,
]
SUMMEVAL = SHARED_DATA / "summeval.jsonl"
# connections a run may add: the io worker's one, the light worker's (the snapshot written
# as the run ends), the maintenance worker's (a sweep), and one spare; the code before
# this added about six a document
SLACK = 4


def connections() -> int:
    """Open connections to the test database, all processes together."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def finished(run: MetricRun, seconds: float) -> MetricRun:
    assert wait_for(lambda: MetricRun.objects.get(pk=run.pk).is_finished, seconds), (
        f"run {run.pk} still {MetricRun.objects.get(pk=run.pk).status} after {seconds:.0f} s"
    )
    run.refresh_from_db()
    return run


def served_dataset(owner, tmp_path):  # type: ignore[no-untyped-def]
    """SummEval's 1,600 outputs when ../shared/data holds it (its sources cut to 400
    characters: the connections, not the texts, are under test), else the demo's 72."""
    if not SUMMEVAL.is_file():
        return import_demo(owner, tmp_path)
    path = tmp_path / "summeval.jsonl"
    rows = [json.loads(line) for line in SUMMEVAL.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps({**r, "source": r["source"][:400]}) + "\n" for r in rows))
    options = ImportOptions(
        dataset="summeval",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=owner,
    )
    import_file(path, options)
    return Dataset.objects.get(name="summeval", owner=owner)


@pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="counts PostgreSQL's connections (pg_stat_activity): the PostgreSQL pass runs it",
)
def test_the_io_worker_holds_no_more_connections_as_a_run_goes_on(
    cast, tmp_path, adversary, celery_worker_process
):
    server = adversary("forge")
    owner = cast["owner"]
    dataset = served_dataset(owner, tmp_path)
    probe_endpoint(create_endpoint("judge", server.url, "judge", owner=owner, max_concurrency=8))
    run = start_run(dataset, RunRequest(aspect="COH", endpoint="judge"), user=owner, enqueue=False)
    baseline = connections()
    enqueue_run(run)
    peak, started = baseline, time.monotonic()
    while not MetricRun.objects.get(pk=run.pk).is_finished and time.monotonic() - started < 600:
        peak = max(peak, connections())
        if peak > baseline + SLACK + 10:  # leaking: stop before the server runs out
            cancel_run(run)
            break
        time.sleep(0.1)
    run = finished(run, 60)
    print(
        f"\nserved run connections: {run.total} outputs, {run.done} scored, status "
        f"{run.status}, test database connections {baseline} before, peak {peak} during "
        f"(io worker concurrency 1, max_concurrency 8)"
    )
    assert peak <= baseline + SLACK, (baseline, peak)
    assert run.status == MetricRun.Status.SUCCEEDED and run.done == run.total, run.error


def test_a_run_of_mostly_errors_fails_saying_why_and_resume_scores_them(
    cast, client, tmp_path, adversary, celery_worker_process
):
    server = adversary("forge")
    owner = cast["owner"]
    dataset = import_demo(owner, tmp_path)
    probe_endpoint(create_endpoint("judge", server.url, "judge", owner=owner))
    server.logprob = float("nan")  # the server turns: NaN log-probabilities for every token
    run = start_run(
        dataset, RunRequest(aspect="COH", endpoint="judge", limit_docs=2), user=owner, enqueue=False
    )
    enqueue_run(run)
    run = finished(run, 60)
    assert run.status == MetricRun.Status.FAILED, run.error
    assert f"{run.total} of {run.total} outputs got no score" in run.error
    assert "not JSON (NaN and Infinity are not)" in run.error
    errors = list(MetricScore.objects.filter(run=run).values_list("error", flat=True))
    assert len(errors) == run.total and all("NaN" in e for e in errors)
    assert not any(w in " ".join([run.error, *errors]) for w in ("DataError", "INSERT", "jsonb"))
    client.force_login(owner)
    assert client.get(f"/api/runs/{run.pk}/").json()["can_resume"]
    # the server is fixed; Resume scores the failed outputs again
    server.logprob = -0.5
    assert client.post(f"/api/runs/{run.pk}/resume/").status_code in (200, 202)
    run = finished(run, 60)
    assert run.status == MetricRun.Status.SUCCEEDED, run.error
    values = MetricScore.objects.filter(run=run).values_list("value", flat=True)
    assert len(values) == run.total and all(v is not None for v in values)


def test_a_malformed_usage_ends_the_probe_and_cannot_lower_the_cost(
    cast, client, tmp_path, adversary, celery_worker_process
):
    server = adversary("forge")
    server.usage = {"prompt_tokens": "lots", "completion_tokens": 0}
    owner = cast["owner"]
    endpoint = create_endpoint("judge", server.url, "judge", owner=owner, price_in=100)
    client.force_login(owner)
    assert client.post(f"/api/endpoints/{endpoint.pk}/probe/").status_code == 202
    assert wait_for(lambda: Endpoint.objects.get(pk=endpoint.pk).probe_requested_at is None, 60), (
        "the probe crashed and left the endpoint waiting for it"
    )
    assert "usage.prompt_tokens is not a token count" in (
        Endpoint.objects.get(pk=endpoint.pk).probe_error
    )
    server.usage = {"prompt_tokens": 10, "completion_tokens": 0}
    probe_endpoint(Endpoint.objects.get(pk=endpoint.pk))
    dataset = import_demo(owner, tmp_path)
    request = RunRequest(aspect="COH", endpoint="judge", limit_docs=2, cost_cap=0.1)

    # a negative count: every answer is that output's error, and nothing is paid back
    server.usage = {"prompt_tokens": -1_000_000_000, "completion_tokens": 0}
    negative = start_run(dataset, replace(request, cost_cap=None), user=owner, enqueue=False)
    execute_run(negative.pk)
    negative.refresh_from_db()
    assert negative.status == MetricRun.Status.FAILED
    assert "usage.prompt_tokens is not a token count" in negative.error
    assert negative.usage["cost"] >= 0

    # a count too small to be true (0 for a long prompt): the client counts the prompt
    # itself, and the cap stops the run where the real spending would
    server.usage = {"prompt_tokens": 0, "completion_tokens": 0}
    capped = start_run(dataset, request, user=owner, enqueue=False)
    execute_run(capped.pk)
    capped.refresh_from_db()
    assert capped.status == MetricRun.Status.FAILED and "cost cap" in capped.error
    assert capped.usage["implausible"] > 0 and 0 < capped.usage["cost"] <= 0.1
    assert capped.done < capped.total
