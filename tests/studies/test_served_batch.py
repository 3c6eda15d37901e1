"""Batch runs by file, end to end: a GPTScore run and a G-Eval run written as a batch
request file (``run_metric --batch-file``), answered by the REAL ``vllm run-batch`` (its
CPU build, once for the module: it loads the model each time), read back with
``batch_results`` (and the API's upload), equal to the same runs online against the session's vLLM server; and
a results file with 3 lines removed and 2 corrupted, reported by ``custom_id``, leaving
the run waiting and resumable, then finished by answering only those 5.

``$CONCORDIA_BATCH_DOCS`` scales the demo documents (6 outputs each: one by default, enough
for 3 lines removed and 2 corrupted with one left whole; 12 at most); the
acceptance's 160-output GPTScore run (SummEval, 10 documents) is ``bench/batch_runs.py``."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from scoring.lm.served import local_server
from studies.models import Dataset, MetricRun, ServedResponse
from studies.services.runs import can_resume
from studies.services.runs.batch import WAITING
from tests.factories import import_demo
from tests.served import Served
from tests.studies.conftest import valued_scores as scores

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.served,
]
DOCS = os.environ.get("CONCORDIA_BATCH_DOCS", "1")  # demo documents (× 6 systems)


@pytest.fixture
def demo(cast, tmp_path) -> Dataset:  # type: ignore[no-untyped-def]
    return import_demo(cast["owner"], tmp_path)


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def run_metric(*args: str) -> MetricRun:
    """``manage.py run_metric --dataset demo --aspect COH …`` on the endpoint; its run."""
    before = set(MetricRun.objects.values_list("pk", flat=True))
    command("run_metric", "--dataset", "demo", "--aspect", "COH", "--limit-docs", DOCS, *args)
    (run,) = MetricRun.objects.exclude(pk__in=before)
    run.refresh_from_db()
    return run


def lines_of(path: Path) -> dict[str, str]:
    """A JSON-lines file's lines by custom_id."""
    return {json.loads(t)["custom_id"]: t for t in path.read_text().splitlines() if t.strip()}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{t}\n" for t in lines))
    return path


def test_batch_runs_answered_by_vllm_run_batch_equal_the_online_runs_and_resume(
    demo, cast, client, vllm_server: Served, tmp_path: Path, capsys
):
    command(
        "endpoint",
        "add",
        "vllm",
        "--base-url",
        vllm_server.base_url,
        "--model-id",
        vllm_server.model_id,
        "--owner",
        "owner",
        "--timeout",
        "120",
    )
    geval = ("--metric", "geval", "--steps", "none")
    online = {
        "gptscore": run_metric("--endpoint", "vllm"),
        "geval": run_metric(*geval, "--endpoint", "vllm"),
    }
    assert all(r.status == "succeeded" for r in online.values()), [r.error for r in online.values()]
    ServedResponse.objects.all().delete()  # the batch runs are answered by the batch alone

    batch, requests = {}, {}
    for name, extra in (("gptscore", ()), ("geval", geval)):
        requests[name] = tmp_path / f"{name}-requests.jsonl"
        batch[name] = run_metric(
            *extra,
            "--endpoint",
            "vllm",
            "--batch-file",
            str(requests[name]),
            "--batch-format",
            "vllm-batch",
        )
        run = batch[name]
        assert run.status == "failed" and run.error.startswith(WAITING) and run.done == 0
        assert can_resume(run)
    asked = {name: lines_of(path) for name, path in requests.items()}
    n = online["gptscore"].total
    assert len(asked["gptscore"]) == n and len(asked["geval"]) >= n
    line = json.loads(next(iter(asked["gptscore"].values())))
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert set(line) == {"custom_id", "method", "url", "body"}
    assert not set(asked["gptscore"]) & set(asked["geval"])

    # one real `vllm run-batch` answers both files
    both = write_lines(
        tmp_path / "in.jsonl", [*asked["gptscore"].values(), *asked["geval"].values()]
    )
    seconds = local_server.run_batch(
        both, tmp_path / "out.jsonl", vllm_server.model_dir, model_id=vllm_server.model_id
    )
    answered = lines_of(tmp_path / "out.jsonl")
    assert set(answered) == set(asked["gptscore"]) | set(asked["geval"])

    # GPTScore: 3 lines removed, 2 corrupted (cut short; an answer with no body)
    ids = sorted(asked["gptscore"])
    removed, cut, empty = ids[:3], ids[3], ids[4]
    damaged = [answered[k] for k in ids[5:]]
    damaged.append(answered[cut][: len(answered[cut]) // 2])
    broken = json.loads(answered[empty])
    broken["response"]["body"] = None
    damaged.append(json.dumps(broken))
    said = command(
        "batch_results",
        str(batch["gptscore"].pk),
        str(write_lines(tmp_path / "d.jsonl", damaged)),
        "--requests",
        str(tmp_path / "next.jsonl"),
    )
    run = MetricRun.objects.get(pk=batch["gptscore"].pk)
    assert "3 missing from the results" in said and "2 failed" in said
    assert all(k in said for k in [*removed, cut, empty])
    assert run.status == "failed" and run.error.startswith(WAITING) and can_resume(run)
    assert run.done == len(scores(run)) == n - 5  # one request per output: 5 wait
    again = lines_of(tmp_path / "next.jsonl")
    assert set(again) == {*removed, cut, empty}  # only the 5 are asked again
    assert all(again[k] == asked["gptscore"][k] for k in again)  # the same requests
    client.force_login(cast["owner"])  # the API gives the same file
    got = client.post(
        f"/api/runs/{run.pk}/batch/requests/",
        {"batch_format": "vllm-batch"},
        content_type="application/json",
    )
    assert got.status_code == 200 and got["Content-Type"].startswith("application/x-ndjson")
    assert sorted(got.content.decode().splitlines()) == sorted(again.values())

    # answering only those 5 finishes the run; G-Eval's file is read whole
    rest = write_lines(tmp_path / "rest.jsonl", [answered[k] for k in again])
    finished = command("batch_results", str(run.pk), str(rest))
    assert "succeeded" in finished
    # a label outside the server's top-20 is then asked exactly (prompt log-probabilities):
    # the next request file holds those requests, answered by run-batch in turn
    geval_pk, out, rounds = batch["geval"].pk, tmp_path / "out.jsonl", 1
    while True:
        upload = SimpleUploadedFile(out.name, out.read_bytes())
        read = client.post(f"/api/runs/{geval_pk}/batch/results/", {"file": upload})
        assert read.status_code == 200, read.content
        assert read.json()["missing"] == [] and read.json()["failed"] == {}
        if read.json()["status"] == "succeeded" or rounds == 3:
            break
        got = client.post(
            f"/api/runs/{geval_pk}/batch/requests/",
            {"batch_format": "vllm-batch"},
            content_type="application/json",
        )
        assert got.status_code == 200 and got.content.strip(), got.content
        rounds += 1
        asked_again = write_lines(tmp_path / f"in{rounds}.jsonl", got.content.decode().splitlines())
        out = tmp_path / f"out{rounds}.jsonl"
        seconds += local_server.run_batch(
            asked_again, out, vllm_server.model_dir, model_id=vllm_server.model_id
        )
    assert read.json()["status"] == "succeeded", read.json()
    worst = {}
    for name, run in batch.items():
        run.refresh_from_db()
        assert run.status == "succeeded" and run.error == "" and run.done == run.total == n
        here, there = scores(online[name]), scores(run)
        assert set(here) == set(there) and len(there) == n
        worst[name] = max(abs(here[k] - there[k]) for k in here)
        assert worst[name] <= 1e-6, (name, worst[name])
        assert run.provenance["engines"][-1]["batch_format"] == "vllm-batch"
    with capsys.disabled():
        print(
            f"\nbatch runs: {n} outputs each, vllm run-batch {seconds:.0f} s for "
            f"{len(both.read_text().splitlines())} requests (G-Eval in {rounds} files); "
            f"max |Δ| GPTScore "
            f"{worst['gptscore']:.1e}, G-Eval {worst['geval']:.1e}"
        )
