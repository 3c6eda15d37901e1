"""What a served run's page says while its server does not answer (issue 43): "connecting
to the endpoint…" before its first document, never "loading model…"; "server not
answering since …, retrying" while requests fail, and nothing once they no longer do.
The failures are real: the endpoint is a port on which nothing listens. The whole path
against a real vLLM server behind a fault proxy is test_served_runs.py's."""

from __future__ import annotations

import gc

import pytest
from django.utils import timezone

from scoring.lm.served import Call, EndpointUnavailable
from studies.models import Endpoint, MetricRun
from studies.services.runs import core, execute_run, served
from tests.conftest import free_port
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def down(cast, settings, monkeypatch, allow_loopback):  # type: ignore[no-untyped-def]
    """An endpoint on a port where nothing listens (researchers may reach 127.0.0.1 here:
    the egress allow-list); its runs give up after one retry."""
    settings.CONCORDIA = {**settings.CONCORDIA, "SERVED_PATIENCE_SECONDS": 0.0}
    monkeypatch.setattr(served, "MAX_RETRIES", 1)
    return Endpoint.objects.create(
        name="down",
        base_url=f"http://127.0.0.1:{free_port()}",
        model_id="m",
        owner=cast["owner"],
        timeout=5,
    )


def _served_run(endpoint: Endpoint, owner, status: str = "pending") -> MetricRun:  # type: ignore[no-untyped-def]
    run = MetricRun.objects.create(
        dataset=DatasetFactory(owner=owner),
        metric="gptscore",
        label="gptscore:down",
        kind=MetricRun.Kind.COMPUTED,
        status=status,
        created_by=owner,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        config={"endpoint": {"id": endpoint.pk, "name": endpoint.name}, "model_version": ""},
    )
    # the rolled-back test database gives the next test's run the same id, and an earlier
    # test's clients of that id live on until the garbage collector finds them (their
    # outage would be this run's): a new run has no clients
    gc.collect()
    served._clients.pop(run.pk, None)
    return run


def test_a_served_run_connects_instead_of_loading_a_model_and_shows_the_outage(down, cast, client):
    run = _served_run(down, cast["owner"])
    assert execute_run(run.pk) == "pending: endpoint unavailable"  # the probe found no one
    run.refresh_from_db()
    assert run.timings["phase"] == "connecting to the endpoint"
    assert run.timings["outage"]["last"].startswith("no complete answer")  # one message for all
    client.force_login(cast["owner"])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-outage"' in page and "server not answering since" in page
    assert "retrying" in page and "loading model" not in page


def test_the_outage_shows_while_the_runs_requests_fail_and_goes_once_they_stop(down, cast, client):
    run = _served_run(down, cast["owner"], status="running")
    client.force_login(cast["owner"])
    retrying = served.RunClient(run.pk, served.endpoints.spec_of(down), max_retries=1)
    (outcome,) = retrying.run([Call("/v1/completions", {"prompt": "x", "max_tokens": 1})])
    assert isinstance(outcome, EndpointUnavailable)
    core._beat(run.pk, "this-worker")  # the run's heartbeat notes it
    page = client.get(f"/runs/{run.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "server not answering since" in page and "no complete answer" in page
    since = MetricRun.objects.get(pk=run.pk).timings["outage"]["since"]
    core._beat(run.pk, "this-worker")  # still failing: the same outage, not a new one
    assert MetricRun.objects.get(pk=run.pk).timings["outage"]["since"] == since
    del retrying, outcome  # its requests are over (the run moved on, or ended)
    gc.collect()
    core._beat(run.pk, "this-worker")
    assert "outage" not in MetricRun.objects.get(pk=run.pk).timings
    page = client.get(f"/runs/{run.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "server not answering" not in page
