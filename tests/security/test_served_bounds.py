"""Served work is bounded (issue 36, finding 4 and the patience of 7), through the real
``io`` workers against servers the tests start: a server that drips one byte at a time
is cut off at its total deadline and the worker is free again; a 100 MB answer is
refused while it streams, never read whole nor cached; limits and prices have finite
maxima (a 400 naming the field, never a 500); starting a run never probes in the web
request; one endpoint holds at most its slots of the ``io`` processes; an endpoint that
keeps failing fails its run after the documented patience, with the reason."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from studies.models import Aspect, Endpoint, MetricRun, ServedResponse
from studies.services.catalog.endpoints import create_endpoint
from studies.services.runs import RunRequest, execute_run, resume_run, start_run
from tests.adversary import wait_for
from tests.conftest import free_port
from tests.factories import import_demo, probed_endpoint

pytestmark = [pytest.mark.usefixtures("allow_loopback")]
WORKER = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def probe_by_api(client, endpoint: Endpoint) -> None:  # type: ignore[no-untyped-def]
    assert client.post(f"/api/endpoints/{endpoint.pk}/probe/").status_code == 202


def probe_done(endpoint: Endpoint) -> bool:
    return not Endpoint.objects.filter(pk=endpoint.pk, probe_requested_at__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
@pytest.mark.worker
def test_a_dripping_server_is_cut_off_and_the_io_worker_is_free_again(
    cast, client, adversary, celery_worker_process
):
    drip, good = adversary("drip"), adversary("forge")
    drip.drip_seconds = 0.2  # a byte long before any read times out
    owner = cast["owner"]
    slow = create_endpoint("slow", drip.url, "judge", owner=owner, timeout=1)
    client.force_login(owner)
    probe_by_api(client, slow)
    # three tries of one second each, and their backoff: done in seconds, not never
    assert wait_for(lambda: probe_done(slow), 30), "the dripping probe still holds the worker"
    assert "no complete answer" in Endpoint.objects.get(pk=slow.pk).probe_error
    fine = create_endpoint("fine", good.url, "judge", owner=cast["outsider"], timeout=5)
    client.force_login(cast["outsider"])
    probe_by_api(client, fine)
    assert wait_for(lambda: probe_done(fine), 30)
    assert Endpoint.objects.get(pk=fine.pk).capabilities["echo_logprobs"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
@pytest.mark.worker
def test_a_huge_answer_is_refused_while_it_streams_and_never_cached(
    cast, client, tmp_path, adversary, celery_worker_process, settings
):
    huge = adversary("huge")  # 100 MB of JSON, no length announced
    owner = cast["owner"]
    endpoint = create_endpoint("huge", huge.url, "judge", owner=owner, timeout=30)
    client.force_login(owner)
    probe_by_api(client, endpoint)
    assert wait_for(lambda: probe_done(endpoint), 60)
    assert "larger than 16777216 bytes" in Endpoint.objects.get(pk=endpoint.pk).probe_error
    assert huge.sent_bytes < 40 * 1024 * 1024  # the worker hung up after the cap
    # a run's answers alike (a smaller cap here): every output says so, nothing cached
    settings.CONCORDIA = {**settings.CONCORDIA, "SERVED_MAX_RESPONSE_BYTES": 1024 * 1024}
    huge.sent_bytes = 0
    probed_endpoint(Endpoint.objects.get(pk=endpoint.pk))
    dataset = import_demo(owner, tmp_path)
    run = start_run(
        dataset, RunRequest(aspect="COH", endpoint="huge", limit_docs=1), user=owner, enqueue=False
    )
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.FAILED and "larger than 1048576 bytes" in run.error
    assert not ServedResponse.objects.exists()
    assert huge.sent_bytes < run.total * 16 * 1024 * 1024  # of 100 MB each: socket buffers


@pytest.mark.django_db
def test_limits_and_prices_have_finite_maxima(cast, client, adversary):
    server = adversary("forge")
    client.force_login(cast["owner"])
    base = {"name": "judge", "base_url": server.url, "model_id": "judge"}
    for field, value in (
        ("price_in", 1e308),
        ("price_out", 10_001),
        ("timeout", 1e9),
        ("max_concurrency", 100_000),
        ("rpm", 10**12),
        ("tpm", 10**12),
    ):
        api = client.post(
            "/api/endpoints/", {**base, field: value}, content_type="application/json"
        )
        assert api.status_code == 400 and field in api.json()["errors"], (field, api.content)
        page = client.post(
            "/endpoints/new/",
            {"protocol": "openai", "max_concurrency": 2, "timeout": 5, "price_in": 0}
            | {"price_out": 0, **base, field: value},
        )
        assert page.status_code == 400, field
    for flag, value in (("--timeout", "1e9"), ("--price-in", "inf"), ("--max-concurrency", "999")):
        with pytest.raises(CommandError):
            call_command(
                *["endpoint", "add", "cmd", "--base-url", server.url, "--model-id", "m"],
                *[flag, value, "--no-probe"],
                stdout=io.StringIO(),
            )
    assert not Endpoint.objects.exists()


@pytest.mark.django_db
def test_starting_a_run_never_probes_in_the_web_request(cast, client, tmp_path, adversary):
    server = adversary("forge")
    owner = cast["owner"]
    dataset = import_demo(owner, tmp_path)
    create_endpoint("judge", server.url, "judge", owner=owner, timeout=600)  # never probed
    client.force_login(owner)
    started = client.post(
        "/api/runs/",
        {
            "dataset": dataset.pk,
            "aspects": [Aspect.objects.get(code="COH").pk],
            "endpoint": "judge",
            "limit_docs": 1,
        },
        content_type="application/json",
    )
    assert started.status_code == 201, started.content
    assert server.requests == []  # nothing was asked of the server in the request
    run = MetricRun.objects.get(kind=MetricRun.Kind.COMPUTED)
    assert run.config["awaiting_probe"] and run.label.startswith("gptscore:judge:")
    # the worker probes before the run scores, and freezes the version found
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.SUCCEEDED, run.error
    assert "awaiting_probe" not in run.config and run.config["model_version"] == "judge-v1"
    assert run.label.startswith("gptscore:judge@judge-v1:")
    # an endpoint that turns out to lack what the metric needs refuses the run there
    create_endpoint("chat", adversary("refuse").url, "judge", owner=owner, timeout=5)
    refused = start_run(
        dataset, RunRequest(aspect="COH", endpoint="chat", limit_docs=1), user=owner, enqueue=False
    )
    execute_run(refused.pk)
    refused.refresh_from_db()
    assert refused.status == MetricRun.Status.FAILED
    assert "cannot run" in refused.error and "log-probabilities" in refused.error


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
@pytest.mark.worker
def test_one_researchers_endpoints_hold_at_most_their_slots_of_the_io_workers(
    cast, client, adversary, celery_worker_process, extra_io_worker
):
    """Two io processes, one slot a researcher (the tests' SERVED_ENDPOINT_SLOTS): two
    probes of a researcher's dripping endpoints hold one process between them, and
    another researcher's probe is done meanwhile on the other."""
    drip, good = adversary("drip"), adversary("forge")
    owner = cast["owner"]
    slow = [create_endpoint(f"slow{k}", drip.url, "judge", owner=owner, timeout=30) for k in (1, 2)]
    client.force_login(owner)
    for endpoint in slow:
        probe_by_api(client, endpoint)
    assert wait_for(lambda: drip.requests, 30)
    fine = create_endpoint("fine", good.url, "judge", owner=cast["outsider"], timeout=5)
    client.force_login(cast["outsider"])
    probe_by_api(client, fine)
    assert wait_for(lambda: probe_done(fine), 30), "every io process is held by one researcher"
    assert not any(probe_done(e) for e in slow)  # still dripping: they did not just end
    assert drip.max_active == 1  # one request at a time from one process
    drip.close()  # the drip ends: so do its probes, in turn
    assert wait_for(lambda: all(probe_done(e) for e in slow), 60)
    assert drip.max_active == 1


@pytest.mark.django_db
def test_a_run_whose_endpoint_keeps_failing_fails_after_the_patience(
    cast, tmp_path, monkeypatch, settings
):
    monkeypatch.setattr("studies.services.runs.served.MAX_RETRIES", 1)
    settings.CONCORDIA = {**settings.CONCORDIA, "SERVED_PATIENCE_SECONDS": 0.0}
    owner = cast["owner"]
    down = create_endpoint("down", f"http://127.0.0.1:{free_port()}", "judge", owner=owner)
    probed_endpoint(down)
    dataset = import_demo(owner, tmp_path)
    run = start_run(
        dataset, RunRequest(aspect="COH", endpoint="down", limit_docs=1), user=owner, enqueue=False
    )
    assert execute_run(run.pk) == "pending: endpoint unavailable"  # within the patience
    run.refresh_from_db()
    assert run.status == MetricRun.Status.PENDING and run.timings["unavailable_since"]
    # an hour (SERVED_GIVE_UP_SECONDS) later, still no answer: the run fails, saying why
    hour_ago = (timezone.now() - timedelta(seconds=3601)).timestamp()
    MetricRun.objects.filter(pk=run.pk).update(
        timings={**run.timings, "unavailable_since": hour_ago}
    )
    assert execute_run(run.pk) == "failed: endpoint unavailable"
    run.refresh_from_db()
    assert run.status == MetricRun.Status.FAILED
    assert (
        re.search(r"did not answer for 36\d\d s", run.error) and "no complete answer" in run.error
    )
    assert resume_run(run, enqueue=False)  # Resume tries again, with the patience afresh
    run.refresh_from_db()
    assert run.status == MetricRun.Status.PENDING and "unavailable_since" not in run.timings
