"""Migration 0014 takes a deployment's endpoints as they were into the hardened rules:
keys encrypted with the key derived from SECRET_KEY re-encrypted with the endpoint key,
a shared endpoint's environment key bound to its URL, a researcher's dropped, settings
clamped into their bounds, and the response cache (keys naming no answerer) emptied."""

from __future__ import annotations

import pytest
from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from studies.models.endpoints import fernet, legacy_key

BEFORE = [("studies", "0013_unsent_tasks_steps_generations_import_sessions")]
AFTER = [("studies", "0014_endpoint_hardening")]
KEY = "sk-stored-before-0013"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
def test_migration_0014_rekeys_binds_clamps_and_empties_the_cache(cast):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Endpoint, ServedResponse = (
        old.get_model("studies", "Endpoint"),
        old.get_model("studies", "ServedResponse"),
    )
    derived = legacy_key(settings.SECRET_KEY).encrypt(KEY.encode()).decode()
    shared = Endpoint.objects.create(
        name="shared", base_url="http://gpu:8000", model_id="m", api_key_env="JUDGE_KEY"
    )
    theirs = Endpoint.objects.create(
        name="theirs",
        base_url="http://h:1",
        model_id="m",
        owner_id=cast["owner"].pk,
        api_key_env="SECRET_KEY",
        api_key_encrypted=derived,
        timeout=1e9,
        price_in=1e308,
        max_concurrency=100_000,
    )
    ServedResponse.objects.create(key="0" * 64, model_id="m", response={"choices": []})

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    Endpoint = new.get_model("studies", "Endpoint")
    shared, theirs = Endpoint.objects.get(pk=shared.pk), Endpoint.objects.get(pk=theirs.pk)
    assert shared.api_key_env == "JUDGE_KEY" and shared.api_key_env_url == "http://gpu:8000"
    assert theirs.api_key_env == "" and theirs.api_key_env_url == ""
    assert (theirs.timeout, theirs.price_in, theirs.max_concurrency) == (600.0, 10_000.0, 256)
    assert fernet().decrypt(theirs.api_key_encrypted.encode()).decode() == KEY
    with pytest.raises(InvalidToken):  # SECRET_KEY alone no longer opens it
        legacy_key(settings.SECRET_KEY).decrypt(theirs.api_key_encrypted.encode())
    assert not new.get_model("studies", "ServedResponse").objects.exists()
    executor = MigrationExecutor(connection)  # the later tests' schema: every migration
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
