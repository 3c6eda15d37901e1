"""End to end through a real broker and a real ``celery worker`` process."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.models import ImportJob, Output, WorkerHeartbeat
from studies.tasks import heartbeat

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def test_a_task_round_trips_through_the_worker_and_writes_a_row(celery_worker_process):
    # to the model worker's queue (heartbeats go to the light worker by default)
    pk = heartbeat.apply_async(("round trip",), queue="cpu").get(timeout=30)
    row = WorkerHeartbeat.objects.get(pk=pk)
    assert row.note == "round trip"
    assert row.pid == celery_worker_process.pid  # written by the worker, not by this process


def test_an_upload_is_imported_by_the_worker(client, cast, celery_worker_process):
    client.force_login(cast["owner"])
    content = b"".join(
        b'{"doc_id": "d%d", "system_id": "s%d", "source": "src %d", "output": "out", "human": {"fluency": 3}}\n'
        % (i // 4, i % 4, i // 4)
        for i in range(40)
    )
    response = client.post(
        reverse("studies:upload"),
        {
            "file": SimpleUploadedFile("e2e.jsonl", content),
            "dataset": "e2e",
            "task": "summarization",
        },
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    deadline = time.monotonic() + 60
    while job.status in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    assert job.status == "succeeded", job.errors
    assert Output.objects.filter(document__dataset__name="e2e").count() == 40


def test_a_run_killed_mid_way_is_completed_by_a_new_worker_with_one_score_per_output(
    cast, write_jsonl, tmp_path
):
    import os
    import signal
    import subprocess

    from django.conf import settings

    from evalsite.celery import worker_command
    from studies.models import Dataset, MetricRun, MetricScore
    from studies.services.imports import ImportOptions, import_file
    from studies.services.runs import RunRequest, resume_run, start_run
    from studies.tasks import run_metric
    from tests.conftest import record, worker_env
    from tests.tiny_models import tiny_gpt2

    model = tiny_gpt2(tmp_path / "tiny")
    records = [
        record(
            f"d{d:02d}", f"s{s}", output=f"The council approved budget number {d} {s} after debate."
        )
        for d in range(30)
        for s in range(5)
    ]
    path = write_jsonl(records)
    import_file(
        path,
        ImportOptions(
            dataset="kill", task="summarization", file_format="jsonl", file_name=path.name
        ),
    )
    run = start_run(
        Dataset.objects.get(name="kill"),
        RunRequest(aspect="COH", model=model),
        enqueue=False,
        local_paths=True,
    )
    env = {**worker_env(), "RUN_CHUNK_OUTPUTS": "5"}  # one document per write

    def worker(name: str) -> subprocess.Popen[bytes]:
        log = (settings.DATA_DIR / f"{name}.log").open("wb")
        return subprocess.Popen(
            worker_command(f"{name}-{os.getpid()}@%h", queues="kill-test"),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    first = worker("doomed")
    try:
        run_metric.apply_async((run.pk,), queue="kill-test")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            done = MetricScore.objects.filter(run=run).count()
            if done >= 10:
                break
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    run.refresh_from_db()
    kept = dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert run.status == "running" and 10 <= len(kept) < 150, (run.status, len(kept))

    second = worker("rescuer")
    try:
        assert resume_run(run, force=True, enqueue=False)
        run_metric.apply_async((run.pk,), queue="kill-test")
        deadline = time.monotonic() + 120
        while run.status != "succeeded" and time.monotonic() < deadline:
            time.sleep(0.2)
            run.refresh_from_db()
    finally:
        second.terminate()
        second.wait(timeout=30)
    assert run.status == "succeeded", run.error
    after = list(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert (
        len(after)
        == len({o for o, _v in after})
        == 150
        == run.done
        == MetricRun.objects.get(pk=run.pk).total
    )
    assert all(dict(after)[o] == v for o, v in kept.items())


def test_two_researchers_uploads_naming_one_new_dataset_each_land_in_their_own(
    client, cast, monkeypatch
):
    """Both uploads are queued before any worker runs: the worker's import must create a
    dataset per owner, never write one researcher's rows into the other's."""
    import os
    import subprocess

    from django.conf import settings

    from evalsite.celery import app, worker_command
    from studies.models import Dataset
    from studies.services import queue
    from tests.conftest import worker_env

    # the uploads enqueue on a queue no worker reads yet (a session worker may be running)
    monkeypatch.setattr(
        queue, "send", lambda name, *args: app.send_task(name, args=list(args), queue="race-test")
    )
    for who in ("owner", "outsider"):
        client.force_login(cast[who])
        content = b"".join(
            b'{"doc_id": "%s-d%d", "system_id": "s1", "source": "src", "output": "by %s", '
            b'"human": {"coherence": 3}}\n' % (who.encode(), i, who.encode())
            for i in range(5)
        )
        response = client.post(
            reverse("studies:upload"),
            {
                "file": SimpleUploadedFile(f"{who}.jsonl", content),
                "dataset": "summeval",
                "task": "summarization",
            },
        )
        assert response.status_code == 302
    assert not Dataset.objects.exists() and ImportJob.objects.filter(status="pending").count() == 2

    log = (settings.DATA_DIR / "race-worker.log").open("wb")
    worker = subprocess.Popen(
        worker_command(f"race-{os.getpid()}@%h", queues="race-test"),
        env=worker_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while (
            time.monotonic() < deadline and ImportJob.objects.exclude(status="succeeded").exists()
        ):
            assert not ImportJob.objects.filter(status="failed").exists(), list(
                ImportJob.objects.values_list("errors", flat=True)
            )
            time.sleep(0.2)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert list(ImportJob.objects.values_list("status", flat=True)) == ["succeeded"] * 2
    datasets = Dataset.objects.filter(name="summeval")
    assert sorted(d.owner.username for d in datasets) == ["outsider", "owner"]
    for dataset in datasets:
        texts = set(Output.objects.filter(document__dataset=dataset).values_list("text", flat=True))
        assert texts == {f"by {dataset.owner.username}"}
        assert dataset.import_jobs.get().created_by == dataset.owner


def test_two_workers_share_one_run_and_each_output_is_scored_once(cast, write_jsonl):
    """Two real worker processes on one queue: the one that claims the run sends a
    message per other shard, the second joins, both score, every output once."""
    import os
    import subprocess

    from django.conf import settings

    from evalsite.celery import worker_command
    from studies.models import Dataset, MetricScore
    from studies.services.imports import ImportOptions, import_file
    from studies.services.runs import RunRequest, start_run
    from studies.tasks import run_metric_cpu
    from tests.conftest import record, worker_env

    records = [
        record(f"d{d:02d}", f"s{s}", output=f"The council approved budget {d} {s}.")
        for d in range(12)
        for s in range(3)
    ]
    path = write_jsonl(records)
    import_file(
        path,
        ImportOptions(
            dataset="shared", task="summarization", file_format="jsonl", file_name=path.name
        ),
    )
    run = start_run(Dataset.objects.get(name="shared"), RunRequest(metric="rouge1"), enqueue=False)
    # two documents per shard, a pause per chunk so that both workers get some
    env = {
        **worker_env(),
        "RUN_SHARD_DOCUMENTS": "2",
        "RUN_CHUNK_OUTPUTS": "3",
        "TEST_SLOW_CHUNK_SECONDS": "0.3",
    }
    logs = [settings.DATA_DIR / f"share-{k}.log" for k in range(2)]
    workers = [
        subprocess.Popen(
            worker_command(f"share{k}-{os.getpid()}@%h", queues="share-test"),
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        for k, log in enumerate(logs)
    ]
    try:
        deadline = time.monotonic() + 90
        while not all(" ready." in log.read_text(errors="replace") for log in logs):
            assert time.monotonic() < deadline, [log.read_text()[-2000:] for log in logs]
            assert all(w.poll() is None for w in workers)
            time.sleep(0.2)
        run_metric_cpu.apply_async((run.pk,), queue="share-test")
        deadline = time.monotonic() + 120
        while run.status != "succeeded" and time.monotonic() < deadline:
            time.sleep(0.2)
            run.refresh_from_db()
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=30)
    assert run.status == "succeeded", (run.status, run.error)
    scores = list(MetricScore.objects.filter(run=run).values_list("output_id", flat=True))
    assert len(scores) == len(set(scores)) == 36 == run.done
    held = dict(run.shards.values_list("index", "worker"))
    assert len(held) == 6 and set(run.shards.values_list("status", flat=True)) == {"done"}
    assert len(set(held.values())) == 2, held  # both workers scored shards
    assert run.timings["workers"] == 2
