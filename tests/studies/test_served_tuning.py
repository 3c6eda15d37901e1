"""A tuning job on a served judge, end to end on real workers and the REAL vLLM server of
the session (tests/served.py) behind a :class:`~tests.served.FaultProxy` that counts each
request body it forwards: an instruction search whose worker is killed mid-way is taken
back by the sweeper and finished by another worker, and no request reaches the server
twice (the answers the killed worker had are read from the response cache); a few-shot
tuning of the served judge equals the same tuning of the local one."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from studies.models import Aspect, MetricRun, ServedResponse
from studies.services.runs import RunRequest
from studies.services.tuning.job import start_tuning
from studies.services.tuning.splits import make_split
from tests.factories import finished_run
from tests.served import FaultProxy, Served, add_endpoint
from tests.studies.conftest import make_tuning_study, valued_scores, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.served,
    pytest.mark.worker,
]
TASK = "studies.tasks.tune_judge"


def test_a_served_instruction_search_resumes_after_its_worker_is_killed_sending_nothing_twice(
    write_jsonl, cast, vllm_server: Served, fault_proxy: FaultProxy, workers
):
    # one request at a time: when one is held, every earlier one has been answered
    add_endpoint(fault_proxy.url, "--max-concurrency", "1")
    study = make_tuning_study(write_jsonl, cast["owner"], n_docs=4, n_systems=2)
    judge = RunRequest(metric="geval", aspect="coherence", endpoint="vllm", steps="none")
    start = finished_run(study, judge)
    make_split(study, test=0.25, seed=3)  # 3 tune documents (one of them scores candidates)
    options = {
        "rounds": 1,
        "candidates": 2,
        "budget_requests": 20,
        "proposer_endpoint": "vllm",
        "max_new_tokens": 24,
    }
    coherence = Aspect.objects.get(code="COH")
    job = start_tuning(
        start, coherence, "instructions", options=options, resamples=20, enqueue=False
    )
    fault_proxy.reset()
    stored_before = ServedResponse.objects.count()

    w = workers(PENDING_GRACE_SECONDS="600")  # only the lease brings the job back
    doomed = w.start("doomed", "io")
    w.app.send_task(TASK, args=[job.pk], queue="io")
    wait_for(lambda: fault_proxy.counts["forwarded"] >= 3, 300, w.logs)
    fault_proxy.fail("hang", value=600.0)  # the next request is held, never forwarded
    wait_for(lambda: fault_proxy.counts["hang"] == 1, 300, w.logs)
    answered = fault_proxy.counts["forwarded"]
    # every answer the worker got is in the response cache before it dies
    wait_for(lambda: ServedResponse.objects.count() - stored_before == answered, 60, w.logs)
    w.kill(doomed)
    job.refresh_from_db()
    assert job.status == MetricRun.Status.RUNNING, (job.status, job.error)

    w.start("rescuer", "io")  # no one presses Resume
    w.start_maintenance()
    wait_for(lambda: MetricRun.objects.get(pk=job.pk).is_finished, 600, w.logs)
    job.refresh_from_db()
    assert job.status == MetricRun.Status.SUCCEEDED, job.error
    assert {e["was"] for e in job.provenance["recoveries"]} == {"running"}
    # no request reached the server twice: each body forwarded once, after as before
    assert fault_proxy.counts["forwarded"] > answered
    assert sum(fault_proxy.bodies.values()) == fault_proxy.counts["forwarded"]
    assert max(fault_proxy.bodies.values()) == 1, fault_proxy.bodies.most_common(3)
    tuning = job.config["tuning"]
    proposer = tuning["proposer"]  # the proposer's own client (its usage apart from the judge's)
    assert tuning["tuner"] == "instructions" and proposer["requests"] >= 1
    hits = job.usage["cache_hits"] + proposer.get("cache_hits", 0)
    assert hits >= answered, (job.usage, proposer)
    assert tuning["candidates"] and tuning["search"]["requests"] <= 20
    assert job.scores.exclude(value=None).count() == start.scores.exclude(value=None).count()
    print(
        f"\ninstruction search killed after {answered} answered requests: resumed, "
        f"{fault_proxy.counts['forwarded']} forwarded in all, none twice; "
        f"{hits} answers from the cache"
    )


def test_a_few_shot_tuning_of_the_served_judge_equals_the_same_tuning_of_the_local_one(
    write_jsonl, cast, vllm_server: Served, fault_proxy: FaultProxy
):
    """The default model rates locally and on the server the vLLM of the session runs: the
    few-shot tuner chooses the same examples on dev and its tuned scores agree within
    1e-3, as the start runs do."""
    add_endpoint(fault_proxy.url)
    study = make_tuning_study(write_jsonl, cast["owner"], n_docs=4, n_systems=2)
    make_split(study, test=0.25, seed=3)
    starts, tuned = [], []
    for endpoint in ("", "vllm"):
        judge = RunRequest(metric="geval", aspect="coherence", endpoint=endpoint, steps="none")
        starts.append(finished_run(study, judge))
        out = StringIO()
        call_command(
            "tune_judge",
            *("--run", str(starts[-1].pk), "--aspect", "coherence", "--tuner", "few-shot"),
            *("--k", "1,2", "--selection", "random", "--resamples", "20"),
            stdout=out,
        )
        tuned.append(MetricRun.objects.get(pk=int(out.getvalue().split()[0])))
    (here, there) = (valued_scores(run) for run in tuned)
    assert len(here) == len(there) == 8
    first, second = (valued_scores(run) for run in starts)
    start_gap = max(abs(first[o] - second[o]) for o in first)
    worst = max(abs(here[o] - there[o]) for o in here)
    assert worst <= 1e-3, (worst, start_gap)
    local, served = (run.config["tuning"] for run in tuned)
    assert (local["k"], local["example_outputs"]) == (served["k"], served["example_outputs"])
    assert tuned[1].usage["requests"] > 0 and tuned[0].config.get("endpoint") is None
    print(f"\nfew-shot tuning served vs local: max |Δ| {worst:.2e} (start runs {start_gap:.2e})")
