"""Runs split into shards of whole documents: planned once, claimed by one worker at a
time, joined by others, taken back from a dead worker, finished by the last one."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from studies.models import Dataset, MetricRun, MetricScore, RunShard
from studies.services import queue
from studies.services.recovery import sweep_stale_work
from studies.services.runs import RunRequest, execute_run, shards, start_run
from studies.services.runs.core import outputs_of
from tests.conftest import record

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(write_jsonl, cast, settings):  # type: ignore[no-untyped-def]
    from studies.services.imports import ImportOptions, import_file

    settings.CONCORDIA = {**settings.CONCORDIA, "RUN_SHARD_DOCUMENTS": 2}
    path = write_jsonl(
        [record(f"d{d}", f"s{s}", output=f"Output {s} on {d}.") for d in range(5) for s in range(3)]
    )
    import_file(
        path,
        ImportOptions(
            dataset="shards",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=cast["owner"],
        ),
    )
    return start_run(Dataset.objects.get(name="shards"), RunRequest(metric="rouge1"), enqueue=False)


@pytest.fixture
def sent(monkeypatch):  # type: ignore[no-untyped-def]
    messages: list[tuple[str, tuple[object, ...], str | None]] = []
    monkeypatch.setattr(
        queue, "send", lambda name, *args, queue=None: messages.append((name, args, queue))
    )
    return messages


def test_a_run_is_cut_into_shards_of_whole_documents_and_each_output_is_scored_once(run, sent):
    assert execute_run(run.pk) == "succeeded"
    rows = list(run.shards.order_by("index"))
    assert [r.doc_keys for r in rows] == [["d0", "d1"], ["d2", "d3"], ["d4"]]
    assert {r.status for r in rows} == {"done"} and sum(r.outputs for r in rows) == 15
    assert len({r.worker for r in rows}) == 1 and rows[0].worker == shards.worker_name()
    run.refresh_from_db()
    assert run.done == 15 == MetricScore.objects.filter(run=run).count()
    assert run.timings["workers"] == 1 and run.timings["outputs_per_s"] > 0
    assert sent == []  # scored in this process: no message for other workers


def test_the_worker_that_claims_a_run_sends_a_message_per_other_shard_on_its_queue(
    run, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert execute_run(run.pk, fan_out=True, queue="lab-gpu-2") == "succeeded"
    # sent once the model was ready; each names a shard; by then this worker took them all;
    # then, the run ended, the dataset's snapshot for a light worker
    assert sent == [
        ("studies.tasks.run_metric_quick", (run.pk, 1), "lab-gpu-2"),
        ("studies.tasks.run_metric_quick", (run.pk, 2), "lab-gpu-2"),
        ("studies.tasks.write_snapshot", (run.dataset_id,), None),
    ]
    for _name, (run_id, index), _queue in sent[:2]:  # the late messages find nothing to do
        assert execute_run(run_id, shard=index, fan_out=True) == "not pending"  # type: ignore[arg-type]


def test_a_second_worker_joins_a_running_run_and_the_last_one_finishes_it(run, sent):
    shards.plan(run, outputs_of(run.dataset, None))
    MetricRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    held = shards.claim(run, "other-host:1")  # another worker holds shard 0
    assert held is not None and held.index == 0
    # this worker joins for shard 2 first, then takes shard 1, then stops: shard 0 is held
    assert execute_run(run.pk, shard=2) == "shards done"
    assert list(run.shards.values_list("index", "status")) == [
        (0, "running"),
        (1, "done"),
        (2, "done"),
    ]
    run.refresh_from_db()
    assert run.status == "running" and run.done == 9
    # a message with nothing left to claim does nothing
    assert execute_run(run.pk) == "not pending"
    # the other worker dies; the sweeper takes its shard back and sends a message for it
    RunShard.objects.filter(pk=held.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django.db.transaction.on_commit", lambda fn, *a, **k: fn())
        counts = sweep_stale_work()
    assert counts["running_shards"] == 1 and counts["running_runs"] == 0
    assert sent == [("studies.tasks.run_metric_quick", (run.pk, 0), None)]
    assert execute_run(run.pk, shard=0) == "succeeded"  # the last shard ends the run
    run.refresh_from_db()
    assert run.status == "succeeded" and run.done == 15
    assert MetricScore.objects.filter(run=run).count() == 15
    # the dead worker scored nothing: this one holds every shard, shard 0 on its 2nd attempt
    assert run.timings["workers"] == 1
    assert list(run.shards.values_list("attempts", flat=True)) == [2, 1, 1]


def test_a_cancelled_run_gives_its_shard_back_and_a_resumed_one_scores_only_the_rest(run, sent):
    from studies.services.runs import cancel_run, resume_run

    original = shards.finish

    def cancel_after_first(shard: RunShard) -> None:
        original(shard)
        cancel_run(run)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shards, "finish", cancel_after_first)
        assert execute_run(run.pk) == "cancelled"
    assert list(run.shards.values_list("status", flat=True)) == ["done", "pending", "pending"]
    run.refresh_from_db()
    assert run.status == "cancelled" and run.done == 6
    assert resume_run(run, enqueue=False)
    assert execute_run(run.pk) == "succeeded"
    assert MetricScore.objects.filter(run=run).count() == 15


def test_a_worker_on_the_run_takes_back_a_dead_workers_shard_itself(run, sent):
    shards.plan(run, outputs_of(run.dataset, None))
    MetricRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    dead = shards.claim(run, "gone-host:9")
    assert dead is not None
    RunShard.objects.filter(pk=dead.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    # joining, it first finds shard 0 silent for the lease and takes it, then the others
    assert execute_run(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.done == 15 == MetricScore.objects.filter(run=run).count()
    (entry,) = run.provenance["recoveries"]
    assert entry["shard"] == 0 and entry["by"] == shards.worker_name()
    # an hour and the seconds the run took to reach the shard (more on a loaded machine)
    said = re.fullmatch(
        r"no heartbeat for (\d+) s while scoring shard 0 \(worker gone-host:9\)", entry["reason"]
    )
    assert said and 3600 <= int(said[1]) < 3660, entry["reason"]
    assert sent == []  # no message needed: it scored the shard itself


def test_a_shard_within_its_lease_is_left_to_its_worker(run, sent):
    shards.plan(run, outputs_of(run.dataset, None))
    MetricRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    busy = shards.claim(run, "busy-host:1")
    assert busy is not None
    assert execute_run(run.pk) == "shards done"  # the others; shard 0 is still its worker's
    assert RunShard.objects.get(pk=busy.pk).status == "running"
    run.refresh_from_db()
    assert run.status == "running" and "recoveries" not in run.provenance
