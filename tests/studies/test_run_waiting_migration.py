"""Migration 0020: a run stored as FAILED while it waited for batch answers (its error
saying so, before WAITING existed) becomes WAITING; any other failed run stays failed;
endpoints get empty batch prices."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("studies", "0019_dataset_source_info")]
AFTER = [("studies", "0020_endpoint_batch_prices_run_waiting")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
def test_migration_0020_makes_runs_waiting_for_batch_answers_waiting(cast):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Dataset, MetricRun, Endpoint = (
        old.get_model("studies", name) for name in ("Dataset", "MetricRun", "Endpoint")
    )
    task = old.get_model("studies", "TaskKind").objects.get(code="summarization")
    dataset = Dataset.objects.create(name="d", task=task, owner_id=cast["owner"].pk)
    waiting = MetricRun.objects.create(
        dataset=dataset,
        metric="gptscore",
        label="waits",
        status="failed",
        error="Waiting for batch answers: 6 requests outstanding (0/6 outputs scored). …",
    )
    failed = MetricRun.objects.create(
        dataset=dataset, metric="gptscore", label="broke", status="failed", error="boom"
    )
    Endpoint.objects.create(name="e", base_url="http://gpu:8000", model_id="m")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    runs = new.get_model("studies", "MetricRun").objects
    assert (runs.get(pk=waiting.pk).status, runs.get(pk=waiting.pk).error) == ("waiting", "")
    assert (runs.get(pk=failed.pk).status, runs.get(pk=failed.pk).error) == ("failed", "boom")
    endpoint = new.get_model("studies", "Endpoint").objects.get(name="e")
    assert endpoint.batch_price_in is None and endpoint.batch_price_out is None
    executor = MigrationExecutor(connection)  # the later tests' schema: every migration
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
