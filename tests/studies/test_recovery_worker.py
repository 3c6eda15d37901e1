"""Lost tasks are recovered by real worker processes with no human action: a worker killed
with SIGKILL mid-run, a PENDING run whose message was purged, and a Redis restart (on a
redis-server of the test's own, on a port free at run time) that loses queued and
in-flight messages; and the sweeper runs while the only model worker is busy.

Each test's workers use a broker of their own (a filesystem folder, or that Redis), so the
session's worker fixture never takes their messages; the database is the tests' one.
As the demo runs them, the runs' workers serve their lane's queue (ROUGE-L: ``quick``) and
a maintenance worker serves the
sweeper's queue with celery beat embedded (``worker -Q maintenance -B``), which sends the
sweeper every second, with a lease and a grace period of a few seconds.
TEST_SLOW_CHUNK_SECONDS makes each chunk of five outputs take 0.25 s, so a run of 150
outputs lasts long enough to be cut.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from studies.models import MetricRun, MetricScore
from studies.services.runs import RunRequest, start_run
from tests.conftest import ROOT
from tests.studies.conftest import pending_run, scores, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]
TASK = "studies.tasks.run_metric_quick"  # ROUGE-L: the quick queue


@pytest.fixture
def run(write_jsonl, cast) -> MetricRun:  # type: ignore[no-untyped-def]
    """A PENDING ROUGE-L run over 150 outputs, not enqueued."""
    return pending_run(write_jsonl, cast["owner"])


def assert_finished_once_each(run: MetricRun, kept: dict[int, float]) -> None:
    run.refresh_from_db()
    rows = list(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert run.status == "succeeded", run.error
    assert len(rows) == len({o for o, _ in rows}) == run.total == run.done == 150
    assert all(dict(rows)[o] == v for o, v in kept.items())  # finished scores were kept


def test_a_worker_killed_mid_run_is_replaced_and_the_sweeper_finishes_the_run(run, workers):
    w = workers(PENDING_GRACE_SECONDS="600")  # only the lease can bring it back here
    doomed = w.start("doomed")
    w.start_maintenance()
    w.app.send_task(TASK, args=[run.pk], queue="quick")
    wait_for(lambda: len(scores(run)) >= 20, 90, w.logs)
    w.kill(doomed)
    run.refresh_from_db()
    kept = scores(run)
    assert run.status == "running" and 20 <= len(kept) < 150, (run.status, len(kept))

    w.start("rescuer")  # no one presses Resume
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).status == "succeeded", 120, w.logs)
    assert_finished_once_each(run, kept)
    # the run itself, or first the dead worker's shard and then (no worker had come up
    # within the lease) the run: each recovery logged with its reason
    recoveries = run.provenance["recoveries"]
    assert 1 <= len(recoveries) <= 2, recoveries
    assert {e["was"] for e in recoveries} == {"running"}, recoveries
    assert all(e["reason"].startswith("no heartbeat for") for e in recoveries), recoveries


def test_a_pending_run_whose_message_was_purged_is_enqueued_again_and_finishes(run, workers):
    w = workers()
    w.app.send_task(TASK, args=[run.pk], queue="quick")
    with w.app.connection_for_write() as conn:
        assert conn.default_channel.queue_purge("quick") == 1  # the message is gone
    w.start("after-purge")
    w.start_maintenance()
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).status == "succeeded", 120, w.logs)
    assert_finished_once_each(run, {})
    # once, or again if the sweeper ran before the model worker was up (a no-op message)
    assert {e["was"] for e in run.provenance["recoveries"]} == {"pending"}


def test_the_compose_beat_service_runs_the_sweeper_with_no_other_worker(run, workers):
    """docker/entrypoint.sh's ``beat`` role (compose's ``beat`` service) serves the
    sweeper's queue itself: a run whose message was lost is sent again."""
    w = workers(PENDING_GRACE_SECONDS="1")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # its `celery`
    w.spawn("beat", ["bash", str(ROOT / "docker" / "entrypoint.sh"), "beat"], PATH=path)
    wait_for(
        lambda: bool(MetricRun.objects.get(pk=run.pk).provenance.get("recoveries")), 90, w.logs
    )
    banner = (w.data_dir / "beat.log").read_text()
    assert "[queues]" in banner and ".> maintenance " in banner  # and no other queue
    assert ".> cpu " not in banner and ".> gpu " not in banner and ".> quick " not in banner


def test_append_only_redis_keeps_a_queued_task_across_a_restart(run, redis_server, workers):
    w = workers(redis_server.start(appendonly=True))  # as docker/compose.yml runs it
    w.app.send_task(TASK, args=[run.pk], queue="quick")
    assert redis_server.client().llen("quick") == 1
    time.sleep(1.5)  # appendfsync everysec
    redis_server.start(appendonly=True)
    assert redis_server.client().llen("quick") == 1  # still queued


def test_redis_restarts_without_persistence_mid_run_and_every_run_still_finishes(
    run, redis_server, workers
):
    w = workers(redis_server.start(appendonly=False))
    second = MetricRun.objects.get(
        pk=start_run(run.dataset, RunRequest(metric="rouge1"), enqueue=False).pk
    )
    w.start("through-restart")
    w.start_maintenance()
    w.app.send_task(TASK, args=[run.pk], queue="quick")
    w.app.send_task(TASK, args=[second.pk], queue="quick")  # waits behind the first
    wait_for(lambda: len(scores(run)) >= 20, 90, w.logs)
    assert MetricRun.objects.get(pk=second.pk).status == "pending"
    restarted = timezone.now()
    redis_server.start(appendonly=False)  # the queued message(s) of `second` are lost
    assert redis_server.client().llen("quick") == 0
    for pk in (run.pk, second.pk):
        wait_for(lambda pk=pk: MetricRun.objects.get(pk=pk).status == "succeeded", 120, w.logs)
        assert MetricScore.objects.filter(run_id=pk).count() == 150
    second.refresh_from_db()
    recoveries = second.provenance["recoveries"]
    assert {e["was"] for e in recoveries} == {"pending"}
    assert any(datetime.fromisoformat(e["at"]) > restarted for e in recoveries), recoveries


def test_the_sweeper_runs_on_its_own_queue_while_the_only_model_worker_is_busy(
    run, redis_server, workers
):
    """A run whose message was lost is sent again while the only model worker is still
    busy with a long run: the sweeper waits behind no run (on the runs' queue it waited
    until the worker was free, 172 s after a crash in issue 22)."""
    on_redis = settings.CELERY_BROKER_URL.startswith("redis")  # CI: the suite's kind of broker
    broker = redis_server.start(appendonly=False) if on_redis else "filesystem://"
    w = workers(
        broker, TEST_SLOW_CHUNK_SECONDS="1", PENDING_GRACE_SECONDS="2", RUN_LEASE_SECONDS="60"
    )
    model = w.start("model")
    w.start_maintenance()
    w.app.send_task(TASK, args=[run.pk], queue="quick")  # 30 chunks of 1 s
    wait_for(lambda: len(scores(run)) >= 5, 90, w.logs)  # the model worker is busy
    lost = start_run(run.dataset, RunRequest(metric="rouge1"), enqueue=False)  # never sent

    def recovered_or_run_over() -> bool:
        return bool(
            MetricRun.objects.get(pk=lost.pk).provenance.get("recoveries")
            or MetricRun.objects.get(pk=run.pk).status != "running"
        )

    wait_for(recovered_or_run_over, 60, w.logs)
    run.refresh_from_db()
    lost.refresh_from_db()
    assert run.status == "running", "the sweep waited until the model worker was free"
    assert [e["was"] for e in lost.provenance["recoveries"]] == ["pending"]
    assert lost.status == "pending"  # sent again, queued behind the long run
    w.kill(model)  # not a warm shutdown: that would wait for the long run
