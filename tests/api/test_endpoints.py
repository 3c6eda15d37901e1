"""Served endpoints without a server: the key is write-only (encrypted at rest, never
answered, never in the admin's pages), endpoints are owner-scoped as datasets are, and
the command, the API and the admin create the same rows."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from scoring.lm.served import Capabilities
from studies.models import Aspect, Endpoint, MetricRun
from studies.models.endpoints import fernet, legacy_key
from studies.permissions import visible_endpoints
from studies.services.catalog.endpoints import (
    EndpointProblem,
    create_endpoint,
    estimate_cost,
    find_endpoint,
    spec_of,
)
from studies.services.recovery import sweep_stale_work
from studies.services.runs import RunError, RunRequest, execute_run, queue_for, start_run
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]
KEY = "sk-never-show-me-4d2a9f"


def raw_column(endpoint: Endpoint) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT api_key_encrypted FROM studies_endpoint WHERE id = %s", [endpoint.pk]
        )
        return str(cursor.fetchone()[0])


def test_the_key_is_encrypted_at_rest_and_only_the_spec_holds_it(world):
    endpoint = create_endpoint(
        "mine", "http://127.0.0.1:9/v1", "m", owner=world.users["owner"], api_key=KEY
    )
    stored = raw_column(endpoint)
    assert stored and KEY not in stored
    assert Endpoint.objects.get(pk=endpoint.pk).api_key() == KEY
    spec = spec_of(endpoint)
    assert spec.api_key == KEY and KEY not in repr(spec) and KEY not in repr(endpoint)
    assert spec.root == "http://127.0.0.1:9"


def test_the_endpoint_key_is_its_own_not_derived_from_the_secret_key(settings, tmp_path):
    key = Fernet.generate_key().decode()
    settings.ENDPOINT_KEY = key
    endpoint = create_endpoint("filed", "http://127.0.0.1:9", "m", api_key=KEY)
    assert Fernet(key.encode()).decrypt(raw_column(endpoint).encode()) == KEY.encode()
    with pytest.raises(InvalidToken):  # SECRET_KEY alone no longer opens it
        legacy_key(settings.SECRET_KEY).decrypt(raw_column(endpoint).encode())
    # unset: one generated once into the data folder, the same for every process
    settings.ENDPOINT_KEY, settings.DATA_DIR = "", tmp_path
    generated = fernet()
    assert (tmp_path / "endpoint.key").read_text().strip() and generated is fernet()
    # a key stored by an earlier version (derived from SECRET_KEY) is still read, and
    # `endpoint rekey` encrypts it again with the current key
    old = legacy_key(settings.SECRET_KEY).encrypt(KEY.encode()).decode()
    Endpoint.objects.filter(pk=endpoint.pk).update(api_key_encrypted=old)
    assert Endpoint.objects.get(pk=endpoint.pk).api_key() == KEY
    out = io.StringIO()
    call_command("endpoint", "rekey", stdout=out)
    assert "1 stored key(s) encrypted again" in out.getvalue()
    stored = raw_column(endpoint)
    assert stored != old and Endpoint.objects.get(pk=endpoint.pk).api_key() == KEY
    with pytest.raises(InvalidToken):
        legacy_key(settings.SECRET_KEY).decrypt(stored.encode())
    # a rotation: the old key kept in ENDPOINT_KEY_PREVIOUS still reads until rekeyed
    settings.ENDPOINT_KEY_PREVIOUS = [(tmp_path / "endpoint.key").read_text().strip()]
    settings.ENDPOINT_KEY = Fernet.generate_key().decode()
    assert Endpoint.objects.get(pk=endpoint.pk).api_key() == KEY


def test_a_key_from_the_environment_is_an_operators_and_bound_to_its_url(monkeypatch, settings):
    with pytest.raises(EndpointProblem, match=r"\$MY_KEY is not a variable an endpoint may read"):
        create_endpoint("env", "http://127.0.0.1:9", "m", api_key_env="MY_KEY")
    settings.ENDPOINT_KEY_ENV_ALLOWED = ["MY_KEY"]
    endpoint = create_endpoint("env", "http://127.0.0.1:9", "m", api_key_env="MY_KEY")
    assert endpoint.api_key_env_url == "http://127.0.0.1:9"
    with pytest.raises(EndpointProblem, match=r"\$MY_KEY"):
        spec_of(endpoint)
    monkeypatch.setenv("MY_KEY", KEY)
    assert spec_of(endpoint).api_key == KEY
    # its URL changed by anything but an admin's save: the key is not sent anywhere
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url="http://127.0.0.1:10")
    with pytest.raises(EndpointProblem, match="not the one an admin saved"):
        spec_of(Endpoint.objects.get(pk=endpoint.pk))
    # a researcher's endpoint never reads one, even a listed variable
    with pytest.raises(EndpointProblem, match="Only a shared endpoint"):
        create_endpoint(
            "mine",
            "http://127.0.0.1:9",
            "m",
            owner=UserFactory(role="researcher"),
            api_key_env="MY_KEY",
        )


@pytest.mark.parametrize(
    ("url", "why"),
    [("ftp://host", "http"), ("http://user:pw@host:8000", "credentials"), ("nonsense", "http")],
)
def test_bad_base_urls_are_refused(url, why):
    with pytest.raises(EndpointProblem, match=why):
        create_endpoint("bad", url, "m")


def test_endpoints_are_owner_scoped_as_datasets_are(world):
    owner, other = world.users["owner"], world.users["other_researcher"]
    mine = create_endpoint("judge", "http://127.0.0.1:9", "m", owner=owner)
    shared = create_endpoint("judge", "http://127.0.0.1:10", "m")
    theirs = create_endpoint("private", "http://127.0.0.1:11", "m", owner=other)
    assert set(visible_endpoints(owner)) == {mine, shared}
    assert set(visible_endpoints(world.users["collaborator"])) == {shared}
    assert not visible_endpoints(world.users["annotator"]).exists()
    assert find_endpoint("judge", owner) == mine  # one's own before a shared one
    assert find_endpoint("judge", other) == shared
    with pytest.raises(EndpointProblem, match="No endpoint named 'private'"):
        find_endpoint("private", owner)
    assert find_endpoint("private", world.users["admin"]) == theirs


def test_the_api_takes_the_key_and_never_answers_it(world, settings):
    settings.ENDPOINT_ALLOWED_HOSTS = ["127.0.0.1", "api.example.com", "h"]  # no DNS here
    client = world.client("owner")
    created = client.post(
        "/api/endpoints/",
        {
            "name": "hosted",
            "base_url": "https://api.example.com/v1",
            "model_id": "gpt-x",
            "api_key": KEY,
            "rpm": 60,
            "price_in": 2.5,
            "price_out": 10.0,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["has_api_key"] and body["owner"] == "owner" and "api_key" not in body
    pk = body["id"]
    assert Endpoint.objects.get(pk=pk).api_key() == KEY
    for url in ("/api/endpoints/", f"/api/endpoints/{pk}/", "/api/schema/?format=json"):
        response = client.get(url)
        assert response.status_code == 200 and KEY not in response.content.decode()
    # another researcher neither sees it nor learns its name; a collaborator neither
    for role in ("other_researcher", "collaborator"):
        assert world.client(role).get(f"/api/endpoints/{pk}/").status_code == 404
        assert "hosted" not in world.client(role).get("/api/endpoints/").content.decode()
        assert world.client(role).delete(f"/api/endpoints/{pk}/").status_code == 404
    # the same name again is refused; another owner may use it
    again = client.post(
        "/api/endpoints/",
        {"name": "hosted", "base_url": "http://h:1", "model_id": "m"},
        format="json",
    )
    assert again.status_code == 400 and "name" in again.json()["errors"]
    other = world.client("other_researcher").post(
        "/api/endpoints/",
        {"name": "hosted", "base_url": "http://h:1", "model_id": "m"},
        format="json",
    )
    assert other.status_code == 201
    # created: a probe was asked of an io worker; asked again with probe/
    assert Endpoint.objects.get(pk=pk).probe_requested_at is not None
    probed = client.post(f"/api/endpoints/{pk}/probe/")
    assert probed.status_code == 202 and probed.json()["probe_requested_at"]
    assert world.client("collaborator").post(f"/api/endpoints/{pk}/probe/").status_code == 404
    assert client.delete(f"/api/endpoints/{pk}/").status_code == 204


def test_a_shared_endpoint_is_only_an_admins_to_delete(world):
    shared = create_endpoint("shared", "http://127.0.0.1:9", "m", api_key=KEY)
    assert world.client("owner").get(f"/api/endpoints/{shared.pk}/").status_code == 200
    assert world.client("owner").delete(f"/api/endpoints/{shared.pk}/").status_code == 403
    assert world.client("owner").post(f"/api/endpoints/{shared.pk}/probe/").status_code == 403
    assert world.client("admin").delete(f"/api/endpoints/{shared.pk}/").status_code == 204


def test_the_admin_stores_a_typed_key_and_never_shows_it(world, client):
    client.force_login(world.users["admin"])
    response = client.post(
        "/admin/studies/endpoint/add/",
        {
            "name": "adm",
            "protocol": "openai",
            "base_url": "http://127.0.0.1:9",
            "model_id": "m",
            "api_key": KEY,
            "max_concurrency": 4,
            "price_in": 0,
            "price_out": 0,
            "timeout": 60,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint = Endpoint.objects.get(name="adm")
    assert endpoint.api_key() == KEY and endpoint.owner is None
    for url in (
        f"/admin/studies/endpoint/{endpoint.pk}/change/",
        "/admin/studies/endpoint/",
    ):
        page = client.get(url)
        assert page.status_code == 200 and KEY not in page.content.decode()
    # saving again with the key left blank keeps it
    client.post(
        f"/admin/studies/endpoint/{endpoint.pk}/change/",
        {
            "name": "adm",
            "protocol": "openai",
            "base_url": "http://127.0.0.1:9",
            "model_id": "m2",
            "api_key": "",
            "max_concurrency": 4,
            "price_in": 0,
            "price_out": 0,
            "timeout": 60,
        },
    )
    endpoint.refresh_from_db()
    assert endpoint.model_id == "m2" and endpoint.api_key() == KEY


def test_the_command_adds_and_lists_without_the_key(world, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(KEY + "\n"))
    out = io.StringIO()
    call_command(
        "endpoint",
        "add",
        "cmd",
        "--base-url",
        "http://127.0.0.1:9",
        "--model-id",
        "m",
        "--api-key-stdin",
        "--owner",
        "owner",
        "--rpm",
        "30",
        "--no-probe",
        stdout=out,
    )
    call_command("endpoint", "list", stdout=out)
    endpoint = Endpoint.objects.get(name="cmd")
    assert endpoint.owner == world.users["owner"] and endpoint.rpm == 30
    assert endpoint.api_key() == KEY and KEY not in out.getvalue()
    assert "key stored" in out.getvalue() and "not probed" in out.getvalue()
    # compose's vllm-endpoint service: run again at every start, it leaves the row be
    again = ["endpoint", "add", "cmd", "--base-url", "http://other:1", "--model-id", "m2"]
    with pytest.raises(CommandError, match="already"):
        call_command(*again, "--owner", "owner", "--no-probe", stdout=out)
    call_command(*again, "--owner", "owner", "--keep-existing", stdout=out)
    assert "exists; left as it is" in out.getvalue()
    assert Endpoint.objects.get(name="cmd").base_url == "http://127.0.0.1:9"
    with pytest.raises(CommandError, match="No user named"):
        call_command(
            "endpoint",
            "add",
            "x",
            "--base-url",
            "http://h:1",
            "--model-id",
            "m",
            "--owner",
            "nobody",
            stdout=out,
        )
    # an endpoint that does not answer: saved, and the probe's failure said
    with pytest.raises(CommandError, match="probe failed"):
        call_command(
            "endpoint",
            "add",
            "down",
            "--base-url",
            "http://127.0.0.1:9",
            "--model-id",
            "m",
            "--timeout",
            "2",
            stdout=out,
            stderr=io.StringIO(),
        )
    assert Endpoint.objects.get(name="down").probe_error


def probed(endpoint: Endpoint, **found: object) -> Endpoint:
    """Store probe findings (as a probe would) without a server."""
    found = {"tokens_spell_text": True, **found}  # the tokenizer check passed
    endpoint.capabilities = Capabilities(**found).as_dict()  # type: ignore[arg-type]
    endpoint.probed_at = timezone.now()
    endpoint.save()
    return endpoint


def test_a_run_needing_what_the_endpoint_lacks_is_refused_before_it_starts(world):
    owner = world.users["owner"]
    probed(create_endpoint("weak", "http://127.0.0.1:9", "m", owner=owner), chat_top_logprobs=0)
    before = MetricRun.objects.count()
    with pytest.raises(RunError, match="GPTScore needs the prompt's token log-probabilities"):
        start_run(world.dataset, RunRequest(aspect="COH", endpoint="weak"), user=owner)
    with pytest.raises(RunError, match="G-Eval with probabilities .* needs chat top_logprobs"):
        start_run(
            world.dataset, RunRequest(metric="geval", aspect="COH", endpoint="weak"), user=owner
        )
    with pytest.raises(RunError, match="needs n samples per request"):
        start_run(
            world.dataset,
            RunRequest(metric="geval", aspect="COH", endpoint="weak", estimation="sampled"),
            user=owner,
        )
    with pytest.raises(RunError, match="does not run on a served endpoint"):
        start_run(world.dataset, RunRequest(metric="rouge1", endpoint="weak"), user=owner)
    # another researcher's endpoint is not found, as one that does not exist
    with pytest.raises(RunError, match="No endpoint named 'weak'"):
        start_run(
            world.dataset,
            RunRequest(aspect="COH", endpoint="weak"),
            user=world.users["collaborator"],
        )
    assert MetricRun.objects.count() == before
    # the API says the same, as a 400
    response = world.client("owner").post(
        "/api/runs/",
        {
            "dataset": world.dataset.pk,
            "aspects": [Aspect.objects.get(code="COH").pk],
            "endpoint": "weak",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "log-probabilities" in response.json()["errors"]["non_field_errors"][0]


def test_an_unreachable_endpoint_puts_the_run_back_to_pending_for_the_sweeper(
    world, monkeypatch, settings
):
    monkeypatch.setattr("studies.services.runs.served.MAX_RETRIES", 1)
    monkeypatch.setitem(settings.CONCORDIA, "SERVED_PATIENCE_SECONDS", 0.0)
    owner = world.users["owner"]
    probed(
        create_endpoint("down", "http://127.0.0.1:9", "m", owner=owner, api_key=KEY),
        echo_logprobs=True,
        chat_top_logprobs=5,
    )
    run = start_run(
        world.dataset, RunRequest(aspect="COH", endpoint="down"), user=owner, enqueue=False
    )
    assert queue_for(run.metric, run.config) == "io"
    assert run.config["endpoint"]["host"] == "127.0.0.1:9" and run.label.startswith(
        "gptscore:down:"
    )
    assert execute_run(run.pk) == "pending: endpoint unavailable"
    run.refresh_from_db()
    assert run.status == MetricRun.Status.PENDING and run.done == 0
    assert "Waiting for the endpoint" in run.error and KEY not in run.error
    assert run.usage["retries"]["connect"] >= 1 and run.usage["failures"] >= 1
    later = timezone.now() + timedelta(seconds=settings.CONCORDIA["PENDING_GRACE_SECONDS"] + 1)
    assert sweep_stale_work(later)["pending_runs"] == 1


def test_the_run_form_and_a_started_run_show_the_cost_estimate(world, client):
    owner = world.users["owner"]
    endpoint = probed(
        create_endpoint("priced", "http://127.0.0.1:9", "m", owner=owner, price_in=1e4),
        echo_logprobs=True,
    )
    estimate = estimate_cost(endpoint, world.dataset)
    assert estimate["outputs"] == 12 and estimate["requests"] == 12
    assert estimate["cost"] == estimate["prompt_tokens"] / 100  # a token costs 0.01
    assert estimate["prompt_tokens"] > 12 * 30  # the template and the texts, per output
    client.force_login(owner)
    page = client.get(f"/datasets/{world.dataset.pk}/runs/new/").content.decode()
    assert 'id="endpoint-estimates"' in page and '<option value="priced">' in page
    other = client.get(f"/datasets/{world.dataset.pk}/runs/new/")
    client.force_login(world.users["collaborator"])
    assert "priced" not in client.get(f"/datasets/{world.dataset.pk}/runs/new/").content.decode()
    assert other.status_code == 200
    run = start_run(
        world.dataset,
        RunRequest(aspect="COH", endpoint="priced", cost_cap=5.0, limit_docs=2),
        user=owner,
        enqueue=False,
    )
    assert run.config["cost_cap"] == 5.0 and run.config["cost_estimate"]["outputs"] == 6
    api = world.client("owner").get(f"/api/runs/{run.pk}/").json()
    assert api["config"]["cost_estimate"]["cost"] > 0 and api["usage"] == {}
