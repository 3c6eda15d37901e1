"""Served endpoints keep the operator's secrets and each researcher's scores their own
(issue 36, findings 1 and 3), shown through the real ``io`` worker against servers the
tests start: a header logger (what a researcher's own server would see) and servers that
forge answers.

* A researcher cannot make the workers send an environment variable: the API and the
  page take no ``api_key_env``, a row that names one anyway gets nothing sent, and an
  operator's environment key goes only to the base URL an admin saved with it.
* Another researcher's server cannot answer for a victim: the response cache is keyed
  by who answers and for whom, so the victim's run asks its own server and its cache
  hits are its own requests only.
"""

from __future__ import annotations

import pytest

from studies.models import Endpoint, MetricRun, MetricScore
from studies.services.catalog.endpoints import create_endpoint, probe_endpoint
from studies.services.runs import RunRequest, execute_run, start_run
from studies.services.runs.core import enqueue_run
from tests.adversary import TEST_KEY_ENV, TEST_KEY_VALUE, wait_for
from tests.factories import import_demo

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.worker,
]
OWN_SECRETS = ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", TEST_KEY_ENV)


def probed(endpoint: Endpoint, seconds: float = 60.0) -> Endpoint:
    """The endpoint once the io worker's probe (asked for already) is done."""
    assert wait_for(
        lambda: (
            not Endpoint.objects.filter(pk=endpoint.pk, probe_requested_at__isnull=False).exists()
        ),
        seconds,
    ), f"the probe of {endpoint.name} is still waiting after {seconds:.0f} s"
    return Endpoint.objects.get(pk=endpoint.pk)


def secrets_sent(server) -> list[str]:  # type: ignore[no-untyped-def]
    """Every Authorization header the server received that holds one of the workers'
    secrets (the test key's value, or any variable's name)."""
    return [
        value
        for value in server.headers_seen("Authorization")
        if TEST_KEY_VALUE in value or any(name in value for name in OWN_SECRETS)
    ]


def test_a_researcher_cannot_make_the_workers_send_an_environment_variable(
    cast, client, adversary, celery_worker_process
):
    logger = adversary("forge")
    api_client = client  # session auth reaches the API too
    api_client.force_login(cast["owner"])
    # the API: an endpoint of one's own never reads a key from the workers' environment
    created = api_client.post(
        "/api/endpoints/",
        {"name": "mine", "base_url": logger.url, "model_id": "judge", "api_key_env": TEST_KEY_ENV},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["api_key_env"] == ""
    # the page: the field is not there, and naming it changes nothing
    page = api_client.post(
        "/endpoints/new/",
        {
            "name": "paged",
            "protocol": "openai",
            "base_url": logger.url,
            "model_id": "judge",
            "api_key_env": "SECRET_KEY",
            "max_concurrency": "2",
            "price_in": "0",
            "price_out": "0",
            "timeout": "5",
        },
    )
    assert page.status_code == 302, page.content.decode()[:2000]
    mine, paged = Endpoint.objects.get(name="mine"), Endpoint.objects.get(name="paged")
    assert mine.api_key_env == paged.api_key_env == ""
    probed(mine), probed(paged)
    assert logger.requests and not secrets_sent(logger)
    assert logger.headers_seen("Authorization") == []  # neither has a key of its own

    # a row that names a variable anyway (written before this version, or by hand): the
    # worker sends nothing at all, and says why
    Endpoint.objects.filter(pk=mine.pk).update(api_key_env=TEST_KEY_ENV)
    before = len(logger.requests)
    assert api_client.post(f"/api/endpoints/{mine.pk}/probe/").status_code == 202
    refused = probed(mine)
    assert "Only a shared endpoint" in refused.probe_error
    assert len(logger.requests) == before and not secrets_sent(logger)


def test_an_operators_environment_key_goes_only_to_the_url_an_admin_saved(
    cast, client, adversary, celery_worker_process, settings
):
    settings.ENDPOINT_KEY_ENV_ALLOWED = [TEST_KEY_ENV]  # as the workers have it
    judge, elsewhere = adversary("forge"), adversary("forge")
    shared = create_endpoint("hosted", judge.url, "judge", api_key_env=TEST_KEY_ENV, timeout=5)
    client.force_login(cast["admin"])
    assert client.post(f"/api/endpoints/{shared.pk}/probe/").status_code == 202
    assert not probed(shared).probe_error
    assert set(judge.headers_seen("Authorization")) == {f"Bearer {TEST_KEY_VALUE}"}

    # its URL changed by anything but an admin's save (a row written by hand): the key
    # is not sent there
    Endpoint.objects.filter(pk=shared.pk).update(base_url=elsewhere.url)
    assert client.post(f"/api/endpoints/{shared.pk}/probe/").status_code == 202
    assert "not the one an admin saved" in probed(shared).probe_error
    assert elsewhere.requests == []

    # an admin saves it with that URL: now the key goes there
    form = {
        "name": "hosted",
        "protocol": "openai",
        "base_url": elsewhere.url,
        "model_id": "judge",
        "api_key_env": TEST_KEY_ENV,
        "max_concurrency": 2,
        "price_in": 0,
        "price_out": 0,
        "timeout": 5,
    }
    saved = client.post(f"/admin/studies/endpoint/{shared.pk}/change/", form)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    assert not probed(shared).probe_error
    assert set(elsewhere.headers_seen("Authorization")) == {f"Bearer {TEST_KEY_VALUE}"}
    # and no variable outside the operator's list, whoever asks
    refused = client.post(
        "/admin/studies/endpoint/add/", {**form, "name": "bad", "api_key_env": "SECRET_KEY"}
    )
    assert refused.status_code == 200 and "is not a variable an endpoint may read" in (
        refused.content.decode()
    )
    assert not Endpoint.objects.filter(name="bad").exists()


def run_on(dataset, user, endpoint: str) -> MetricRun:  # type: ignore[no-untyped-def]
    request = RunRequest(aspect="COH", endpoint=endpoint, limit_docs=2)
    return start_run(dataset, request, user=user, enqueue=False)


def values(run: MetricRun) -> list[float]:
    return [v for v in MetricScore.objects.filter(run=run).values_list("value", flat=True)]


def test_another_researchers_server_cannot_answer_for_a_victims_run(
    cast, tmp_path, adversary, celery_worker_process
):
    victim, attacker = cast["owner"], cast["outsider"]
    honest, forger = adversary("forge"), adversary("forge")
    honest.logprob, forger.logprob = -1.0, -0.001  # same model id, same reported version
    theirs = import_demo(attacker, tmp_path)  # the same public texts as the victim's
    mine = import_demo(victim, tmp_path)
    for who, server in ((attacker, forger), (victim, honest)):
        probe_endpoint(create_endpoint("judge", server.url, "judge", owner=who, timeout=5))

    poisoned = run_on(theirs, attacker, "judge")  # the attacker scores first
    execute_run(poisoned.pk)
    poisoned.refresh_from_db()
    assert poisoned.status == "succeeded" and all(v > -0.5 for v in values(poisoned))

    asked = len(forger.requests)
    run = run_on(mine, victim, "judge")
    enqueue_run(run)  # through the io worker
    assert wait_for(lambda: MetricRun.objects.get(pk=run.pk).is_finished, 60)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.usage["cache_hits"] == 0 and run.usage["requests"] == run.total
    scores = values(run)
    assert len(scores) == run.total and all(v < -0.5 for v in scores)  # the honest server's
    assert len(forger.requests) == asked  # the victim's run never reached the forger

    # the victim's own repeat is answered from the victim's own cache
    again = run_on(mine, victim, "judge")
    execute_run(again.pk)
    again.refresh_from_db()
    assert again.usage["cache_hits"] == run.total and again.usage["requests"] == 0
    assert sorted(values(again)) == sorted(scores)
