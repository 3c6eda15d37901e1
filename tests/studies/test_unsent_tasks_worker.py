"""A message the broker does not take as work is committed never undoes or fails that
work: with real workers on a redis-server of the test's own (a port free at run time),
Redis is killed while a run scores its last documents. The run's final message (its
dataset's columnar snapshot) cannot be sent; the run stays SUCCEEDED with every score,
the message is kept, and once Redis is back the sweeper sends it and a light worker
writes the snapshot, with no human action. Before, the send's error ended the fully
scored run FAILED."""

from __future__ import annotations

import pytest

from evalsite.celery import LIGHT_QUEUE
from studies.models import MetricRun, UnsentTask
from studies.services import queue
from studies.services.analysis import snapshot
from tests.studies.conftest import pending_run, scores, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def status(run: MetricRun) -> str:
    return str(MetricRun.objects.get(pk=run.pk).status)


def test_a_redis_outage_as_a_run_finishes_leaves_it_succeeded_and_its_snapshot_follows(
    write_jsonl, cast, redis_server, workers, settings, tmp_path
):
    folder = tmp_path / "snapshots"  # the workers' and this test's
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOT_DIR": folder}
    run = pending_run(write_jsonl, cast["owner"])
    w = workers(
        redis_server.start(appendonly=False),
        CONCORDIA_SNAPSHOT_DIR=str(folder),
        TEST_SLOW_CHUNK_SECONDS="0.5",  # 30 chunks of 5 outputs
        RUN_LEASE_SECONDS="120",
        PENDING_GRACE_SECONDS="600",
    )
    w.start("model")
    w.start("light", LIGHT_QUEUE)
    w.start_maintenance()
    w.app.send_task(queue.RUN_METRIC_QUICK, args=[run.pk], queue="quick")  # ROUGE-L
    wait_for(lambda: len(scores(run)) >= 140, 120, w.logs)  # two chunks left
    redis_server.stop()
    # the worker tries the broker for about a second before it keeps the message
    wait_for(lambda: status(run) != "running" and UnsentTask.objects.exists(), 60, w.logs)
    run.refresh_from_db()
    assert (run.status, run.done, len(scores(run))) == ("succeeded", 150, 150), run.error
    kept = UnsentTask.objects.get()
    assert (kept.name, kept.args) == (queue.WRITE_SNAPSHOT, [run.dataset_id]), kept
    assert snapshot.current(run.dataset) is None  # not written yet: its message is kept

    redis_server.start(appendonly=False)  # back on the same port; the workers reconnect
    wait_for(
        lambda: not UnsentTask.objects.exists() and snapshot.current(run.dataset) is not None,
        120,
        w.logs,
    )
    run.refresh_from_db()
    assert run.status == "succeeded" and run.error == ""
    written = snapshot.current(run.dataset)
    assert written is not None and run.pk in written.runs and len(written.doc_keys()) == 30
