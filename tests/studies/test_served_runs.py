"""Runs on a served endpoint end to end, against the REAL vLLM server of the session
(tests/served.py) behind a :class:`~tests.served.FaultProxy` that counts the requests and
sees the headers: an endpoint added by the command and probed; a GPTScore run through
the ``io`` worker equal to the local engine's run; a repeated run answered from the
response cache with no request; the cost cap; and the key, sent on every request, found
in no page, API answer, export, log or provenance."""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.utils import timezone

from studies.models import Dataset, Endpoint, MetricRun, MetricScore, ServedResponse
from studies.services.runs import RunRequest, execute_run, start_run
from tests.factories import import_demo
from tests.served import RUNS_KEY as KEY
from tests.served import FaultProxy, Served, add_endpoint
from tests.studies.conftest import valued_scores as scores

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # the proxy runs on 127.0.0.1: the operator's allow-list (the workers' too)
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.served,
    pytest.mark.worker,
]
DOCS = "2"  # demo documents per run (× 6 systems: 12 outputs)


@pytest.fixture
def demo(cast, tmp_path) -> Dataset:  # type: ignore[no-untyped-def]
    return import_demo(cast["owner"], tmp_path)


def run_metric(*args: str) -> MetricRun:
    """``manage.py run_metric --dataset demo …``; the run it started."""
    before = set(MetricRun.objects.values_list("pk", flat=True))
    out = io.StringIO()
    with contextlib.suppress(CommandError):  # a stopped run says why in its error
        call_command(
            "run_metric",
            "--dataset",
            "demo",
            "--aspect",
            "COH",
            "--limit-docs",
            DOCS,
            *args,
            stdout=out,
        )
    (run,) = MetricRun.objects.exclude(pk__in=before)
    run.refresh_from_db()
    return run


def wait_finished(run: MetricRun, seconds: float = 600.0) -> MetricRun:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.is_finished:
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run.pk} still {run.status} after {seconds:.0f} s: {run.error}")


def test_a_gptscore_run_on_the_endpoint_through_the_io_worker_equals_the_local_run(
    demo,
    cast,
    client,
    vllm_server: Served,
    fault_proxy: FaultProxy,
    celery_worker_process,
    caplog,
    capsys,
):
    said = add_endpoint(fault_proxy.url, "--price-in", "2", "--price-out", "8")
    endpoint = Endpoint.objects.get(name="vllm")
    found = endpoint.capabilities
    assert "probe of vllm: chat top_logprobs 20" in said and endpoint.probed_at
    assert found["echo_logprobs"] and found["prompt_logprobs"] and found["sampling_n"]
    assert found["chat_top_logprobs"] == 20 and found["seed"]
    # the key went to the server on every request
    assert {h.get("Authorization") for h in fault_proxy.headers_seen} == {f"Bearer {KEY}"}

    started = time.perf_counter()
    local = run_metric()
    local_s = time.perf_counter() - started
    assert local.status == "succeeded", local.error

    fault_proxy.reset()
    started = time.perf_counter()
    served = run_metric("--endpoint", "vllm", "--enqueue")
    assert served.config["endpoint"]["host"] == fault_proxy.url.split("//")[1]
    served = wait_finished(served)
    served_s = time.perf_counter() - started
    assert served.status == "succeeded", served.error
    engine = served.provenance["engines"][-1]
    assert engine["backend"] == "served" and engine["model_id"] == "smollm2-135m-instruct"
    here, there = scores(local), scores(served)
    assert len(here) == len(there) == served.total == 12
    worst = max(abs(here[k] - there[k]) for k in here)
    assert worst <= 1e-3, worst
    usage = served.usage
    assert usage["requests"] == fault_proxy.counts["forwarded"] > 0
    assert usage["prompt_tokens"] > 0 and usage["cache_hits"] == 0
    paid = usage["prompt_tokens"] * 2 + usage["completion_tokens"] * 8
    assert usage["cost"] == pytest.approx(paid / 1e6, rel=1e-6)
    assert usage["latency_p50_s"] > 0 and usage["latency_p95_s"] >= usage["latency_p50_s"]

    # the same run again: every answer from the response cache, no request at all
    fault_proxy.reset()
    again = run_metric("--endpoint", "vllm")
    assert again.status == "succeeded", again.error
    assert fault_proxy.counts["received"] == 0
    assert again.usage["requests"] == 0 and again.usage["cache_hits"] == usage["requests"]
    assert scores(again) == pytest.approx(there, abs=0)

    # the key is in no page, API answer, export, log or provenance
    client.force_login(cast["owner"])
    api = client  # session auth reaches the API too
    texts = [
        client.get(f"/runs/{served.pk}/").content.decode(),
        client.get(f"/datasets/{demo.pk}/").content.decode(),
        api.get(f"/api/runs/{served.pk}/").content.decode(),
        api.get("/api/runs/").content.decode(),
        api.get("/api/endpoints/").content.decode(),
        api.get(f"/api/endpoints/{endpoint.pk}/").content.decode(),
        b"".join(api.get(f"/api/datasets/{demo.pk}/export/").streaming_content).decode(),
        json.dumps([served.config, served.provenance, served.usage, served.error]),
        caplog.text,
        capsys.readouterr().out,
    ]
    texts += [p.read_text(errors="replace") for p in settings.DATA_DIR.glob("test-worker-*.log")]
    version = served.config["model_version"]  # vLLM's system_fingerprint
    assert version.startswith("vllm-") and f"gptscore:vllm@{version}:" in texts[0]
    assert all(KEY not in text for text in texts)
    print(
        f"\nserved run figures: local {local_s:.1f} s, served via io worker {served_s:.1f} s, "
        f"max |Δ| {worst:.2e} over {len(here)} outputs, {usage['requests']} requests, "
        f"p50 {usage['latency_p50_s']} s; repeat: 0 requests, {again.usage['cache_hits']} hits"
    )


def test_the_cost_cap_stops_the_run_and_keeps_the_finished_documents(
    demo, vllm_server: Served, fault_proxy: FaultProxy
):
    add_endpoint(fault_proxy.url, "--price-in", "10000", "--no-probe")
    first = run_metric("--endpoint", "vllm", "--dimension", "ref-hypo", "--limit-docs", "1")
    assert first.status == "succeeded", first.error
    one_doc = first.usage["cost"]  # a token costs 0.01: the first document's prompt tokens
    # the first document is now cached (free); the second costs about as much again
    capped = run_metric(
        "--endpoint", "vllm", "--dimension", "ref-hypo", "--cost-cap", str(one_doc / 2)
    )
    assert capped.status == "failed" and "Stopped at the cost cap" in capped.error
    assert capped.done == first.total < capped.total  # the first document's scores kept
    assert capped.usage["cost"] <= one_doc / 2 and capped.usage["cache_hits"] >= first.total


def test_a_geval_run_on_the_endpoint_equals_the_local_run_and_writes_its_steps_there(
    demo, vllm_server: Served, fault_proxy: FaultProxy
):
    add_endpoint(fault_proxy.url)
    one = ("--metric", "geval", "--steps", "none", "--limit-docs", "1")  # 6 outputs
    local = run_metric(*one)
    served = run_metric(*one, "--endpoint", "vllm")
    assert local.status == served.status == "succeeded", (local.error, served.error)
    here, there = scores(local), scores(served)
    assert len(here) == len(there) == 6
    worst = max(abs(here[k] - there[k]) for k in here)
    assert worst <= 1e-3, worst
    detail = MetricScore.objects.filter(run=served).exclude(value=None).first()
    assert detail is not None and 0.0 < detail.details["label_mass"] <= 1.0
    assert served.config["estimation"] == "probs" and served.usage["requests"] > 0

    # auto chain-of-thought: the evaluation steps are generated through the endpoint too
    fault_proxy.reset()
    cot = run_metric("--metric", "geval", "--endpoint", "vllm", "--limit-docs", "1")
    assert cot.status == "succeeded", cot.error
    assert cot.steps is not None and cot.steps.text.strip()
    assert cot.steps.generation["endpoint"]["name"] == "vllm"
    assert cot.config["steps"]["text"] == cot.steps.text
    assert fault_proxy.counts["forwarded"] > cot.total  # the steps' request and the ratings'
    print(f"\nG-Eval run on the endpoint: max |Δ| {worst:.2e} over {len(here)} outputs")


def test_a_pairwise_judge_on_the_endpoint_equals_the_local_judge(
    demo, vllm_server: Served, fault_proxy: FaultProxy
):
    add_endpoint(fault_proxy.url)
    pairs = ("--metric", "pairwise", "--limit-docs", "1", "--pairs", "k", "--pairs-per-doc", "3")
    local = run_metric(*pairs)
    served = run_metric(*pairs, "--endpoint", "vllm")
    assert local.status == served.status == "succeeded", (local.error, served.error)
    assert served.config["n_requests"] == 6 and served.usage["requests"] >= 6
    here, there = scores(local), scores(served)
    assert len(here) == len(there) >= 3 and set(here) == set(there)
    worst = max(abs(here[k] - there[k]) for k in here)
    assert worst <= 1e-3, worst
    print(f"\npairwise judge on the endpoint: max |Δ| {worst:.2e} over {len(here)} outputs")


def test_a_redeployed_model_is_a_different_run_and_never_mixes_with_the_old_one(
    demo, cast, vllm_server: Served, fault_proxy: FaultProxy
):
    fault_proxy.model_version = "judge-v1"
    add_endpoint(fault_proxy.url)
    first = run_metric("--endpoint", "vllm", "--limit-docs", "1")
    assert first.status == "succeeded", first.error
    assert first.config["model_version"] == "judge-v1"
    assert first.label.startswith("gptscore:vllm@judge-v1:")

    # the server is redeployed with other weights: the probe sees it, and a new run is
    # a different run (its own label and version), answered by the new model, not the cache
    fault_proxy.model_version = "judge-v2"
    call_command("endpoint", "probe", "vllm", stdout=io.StringIO())
    second = run_metric("--endpoint", "vllm", "--limit-docs", "1")
    assert second.status == "succeeded", second.error
    assert second.config["model_version"] == "judge-v2"
    assert second.label.startswith("gptscore:vllm@judge-v2:") and second.label != first.label
    assert second.usage["cache_hits"] == 0 and second.usage["requests"] >= second.total

    # redeployed again (v3) while a run started on v2 scores: the first document is
    # v2's, from the cache; the first answer of v3 stops the run, and is not cached
    request = RunRequest(aspect="COH", endpoint="vllm", limit_docs=2)
    mixed = start_run(demo, request, user=cast["owner"], enqueue=False)
    fault_proxy.model_version = "judge-v3"
    execute_run(mixed.pk)
    mixed.refresh_from_db()
    assert mixed.status == "failed" and "the server's model changed" in mixed.error
    assert "'judge-v3'" in mixed.error and mixed.done == second.total  # v2's document kept
    assert not ServedResponse.objects.filter(response__system_fingerprint="judge-v3").exists()

    # a probe older than SERVED_PROBE_MAX_AGE_SECONDS is taken again by the worker before
    # a run scores: it finds v3 and stops the run started on v2 before any request
    Endpoint.objects.filter(name="vllm").update(probed_at=timezone.now() - timedelta(hours=1))
    stale = start_run(demo, request, user=cast["owner"], enqueue=False)
    assert stale.config["model_version"] == "judge-v2"  # what the stored probe says
    execute_run(stale.pk)
    stale.refresh_from_db()
    assert stale.status == "failed" and "now serves model version 'judge-v3'" in stale.error
    assert stale.done == 0 and stale.usage["requests"] > 0  # the probe's, counted
    assert Endpoint.objects.get(name="vllm").capabilities["model_version"] == "judge-v3"


def _watch_outage(run_id: int, seen: list[dict[str, object]], seconds: float = 120) -> None:
    """Record the outage the run's heartbeat notes (timings["outage"]) once it shows."""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            timings = MetricRun.objects.filter(pk=run_id).values_list("timings", flat=True)
            found = (timings.first() or {}).get("outage")
            if found:
                seen.append(found)
                return
            time.sleep(0.2)
    finally:
        connections.close_all()


def test_a_run_finishes_after_its_server_is_killed_and_started_again(
    demo, vllm_server: Served, fault_proxy: FaultProxy, celery_worker_process
):
    server = vllm_server.server
    if server is None:
        pytest.skip("the server was started outside the tests ($CONCORDIA_VLLM_URL): no restart")
    add_endpoint(fault_proxy.url, "--max-concurrency", "1")
    fault_proxy.delay = 0.3  # a slower server: the run lasts long enough to be cut
    run = run_metric("--endpoint", "vllm", "--enqueue", "--limit-docs", "4")
    try:
        deadline = time.monotonic() + 300
        while run.done < 6 and time.monotonic() < deadline:  # the first document is in
            time.sleep(0.2)
            run.refresh_from_db()
        assert 6 <= run.done < run.total, (run.done, run.status, run.error)
        server.kill()  # mid-run, as a crash would
        killed_at = run.done
        outages: list[dict[str, object]] = []  # what the run page showed meanwhile
        watching = threading.Thread(target=_watch_outage, args=(run.pk, outages))
        watching.start()
        server.start()  # the same port; the io worker keeps retrying meanwhile
        watching.join(timeout=120)
    finally:
        server.start()  # the session's later tests need it (a no-op when it runs)
    run = wait_finished(run)
    assert run.status == "succeeded", run.error
    rows = MetricScore.objects.filter(run=run)
    assert rows.count() == run.total == 24 and rows.exclude(value=None).count() == 24
    assert len(set(rows.values_list("output_id", flat=True))) == 24  # one score per output
    retries = run.usage["retries"]
    assert retries["connect"] + retries["timeout"] + retries["5xx"] >= 1
    # while the server was down, its run page said so ("server not answering since …")
    assert outages and outages[0]["last"].startswith("no complete answer")
    print(
        f"\nserver killed after {killed_at} of {run.total} outputs: the run finished with "
        f"{rows.count()} scores, retries {retries}"
    )
