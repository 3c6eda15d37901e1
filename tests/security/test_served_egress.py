"""A researcher's endpoint cannot turn the workers against the site's own network
(issue 36, finding 5): its host must resolve to a public address, in every spelling,
when it is saved and again when the worker connects; no redirect is followed; a failure
says a status and a short reason, never what the server answered, and the same whatever
listens on the port. The tests' servers run on 127.0.0.1, which the tests' operator
allows by that name only (``ENDPOINT_ALLOWED_HOSTS``): every other way to say loopback
stays refused.
"""

from __future__ import annotations

import io
import ipaddress

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from studies.models import Endpoint, MetricRun
from studies.services.catalog.endpoints import EndpointProblem, create_endpoint, probe_endpoint
from studies.services.runs import RunRequest, execute_run, start_run
from tests.adversary import LEAK, wait_for
from tests.conftest import free_port
from tests.factories import import_demo, probed_endpoint

pytestmark = [pytest.mark.usefixtures("allow_loopback")]
# the site's own network, spelt every way: loopback, private, link-local (the cloud's
# metadata service), unspecified, carrier-grade NAT, IPv4 in IPv6, and the spellings a
# resolver accepts (decimal, hex, octal, short)
SPELLINGS = [
    "http://localhost:{port}",
    "http://127.0.0.2:{port}",
    "http://2130706433:{port}",
    "http://0x7f000001:{port}",
    "http://0177.0.0.1:{port}",
    "http://127.1:{port}",
    "http://0.0.0.0:{port}",
    "http://[::1]:{port}",
    "http://[::ffff:127.0.0.1]:{port}",
    "http://169.254.169.254/latest/meta-data",
    "http://10.0.0.7:8000",
    "http://192.168.1.20:8000",
    "http://100.64.0.1:8000",
]
FORM = {
    "protocol": "openai",
    "model_id": "judge",
    "max_concurrency": "2",
    "timeout": "5",
    "price_in": "0",
    "price_out": "0",
}


def add_by_command(name: str, url: str) -> None:
    args = ["endpoint", "add", name, "--base-url", url, "--model-id", "m", "--owner", "owner"]
    call_command(*args, "--no-probe", stdout=io.StringIO())


@pytest.mark.django_db
def test_a_researchers_endpoint_may_name_no_address_of_the_sites_network(
    cast, client, adversary, settings
):
    server = adversary("forge")
    client.force_login(cast["owner"])
    for n, spelling in enumerate(SPELLINGS):
        url = spelling.format(port=server.port)
        page = client.post("/endpoints/new/", {**FORM, "name": f"p{n}", "base_url": url})
        assert page.status_code == 400, url
        assert "Not reachable for a researcher&#x27;s endpoint" in page.content.decode(), url
        if "[" not in url:  # the API's schema takes host names and IPv4 only
            api = client.post(
                "/api/endpoints/",
                {"name": f"a{n}", "base_url": url, "model_id": "judge"},
                content_type="application/json",
            )
            assert api.status_code == 400 and "base_url" in api.json()["errors"], url
        with pytest.raises(CommandError, match="Not reachable"):
            add_by_command(f"c{n}", url)
    assert not Endpoint.objects.exists() and server.requests == []
    # the name the operator allowed is reachable; an operator's shared endpoint is
    # trusted on the site's network (a vLLM beside the workers); so is a network the
    # operator allows
    assert create_endpoint("ok", server.url, "judge", owner=cast["owner"])
    assert create_endpoint("local", f"http://localhost:{server.port}", "judge")
    settings.ENDPOINT_ALLOWED_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"),)
    assert create_endpoint("net", f"http://localhost:{server.port}", "judge", owner=cast["owner"])
    with pytest.raises(EndpointProblem, match="does not resolve"):
        create_endpoint("nx", "http://no-such-host.invalid:8000", "judge", owner=cast["owner"])


def wait_probed(endpoint: Endpoint, seconds: float = 60.0) -> Endpoint:
    assert wait_for(
        lambda: (
            not Endpoint.objects.filter(pk=endpoint.pk, probe_requested_at__isnull=False).exists()
        ),
        seconds,
    ), f"the probe of {endpoint.name} is still waiting after {seconds:.0f} s"
    return Endpoint.objects.get(pk=endpoint.pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
@pytest.mark.worker
def test_the_worker_checks_the_address_again_when_it_connects(
    cast, client, tmp_path, adversary, celery_worker_process
):
    server = adversary("forge")
    owner = cast["owner"]
    endpoint = create_endpoint("judge", server.url, "judge", owner=owner, timeout=5)
    # the row now names loopback another way (written before this version, by hand, or
    # a name whose address changed since it was saved): the worker refuses to connect
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url=f"http://localhost:{server.port}")
    client.force_login(owner)
    assert client.post(f"/api/endpoints/{endpoint.pk}/probe/").status_code == 202
    refused = wait_probed(endpoint)
    assert "resolves to a loopback address" in refused.probe_error
    assert server.requests == []
    # a run on it (its probe stored) stops before it sends anything, saying why
    probed_endpoint(refused)
    dataset = import_demo(owner, tmp_path)
    run = start_run(
        dataset, RunRequest(aspect="COH", endpoint="judge", limit_docs=1), user=owner, enqueue=False
    )
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.FAILED and "loopback address" in run.error
    assert run.done == 0 and server.requests == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
@pytest.mark.worker
def test_no_redirect_is_followed_and_no_answer_body_is_shown(
    cast, client, adversary, celery_worker_process
):
    target, redirector, leaker = adversary("forge"), adversary("redirect"), adversary("leak")
    redirector.redirect_to = f"{target.url}/v1/completions"
    owner = cast["owner"]
    moved = create_endpoint("moved", redirector.url, "judge", owner=owner, timeout=5)
    leaky = create_endpoint("leaky", leaker.url, "judge", owner=owner, timeout=5)
    client.force_login(owner)
    for endpoint in (moved, leaky):
        assert client.post(f"/api/endpoints/{endpoint.pk}/probe/").status_code == 202
    moved, leaky = wait_probed(moved), wait_probed(leaky)
    assert "redirects are not followed" in moved.probe_error and target.requests == []
    assert leaker.requests and leaky.probe_error and "500" in leaky.probe_error
    page = client.get(f"/endpoints/{leaky.pk}/").content.decode()
    api = client.get(f"/api/endpoints/{leaky.pk}/").content.decode()
    assert all(LEAK not in text for text in (leaky.probe_error, page, api))


@pytest.mark.django_db
def test_a_failure_reads_the_same_whatever_listens_on_the_port(cast, adversary):
    """A closed port, a service that is not HTTP and a server too slow to answer give
    one message: the probe is no port scanner."""
    owner = cast["owner"]
    silent = adversary("drip")
    silent.drip_seconds = 3600  # the first bytes, then silence
    said = {}
    for kind, url in (
        ("closed", f"http://127.0.0.1:{free_port()}"),
        ("not http", adversary("garbage").url),
        ("too slow", silent.url),
    ):
        endpoint = create_endpoint(kind.replace(" ", "-"), url, "judge", owner=owner, timeout=1)
        with pytest.raises(EndpointProblem):
            probe_endpoint(endpoint)
        said[kind] = endpoint.probe_error.replace(endpoint.host, "HOST")
    assert len(set(said.values())) == 1, said
    assert "no complete answer" in said["closed"]
