"""An endpoint that gives only its top-k candidates (issue 37, item 2): the REAL vLLM
server behind a proxy that refuses more than 5 candidates as ``--max-logprobs 5`` does,
its echo and prompt log-probabilities ignored by the probe (as a hosted API gives none).
G-Eval's labels outside the top-5 are never a silent 0: each score records them with the
bound on their probability, the run page, the export and the report card flag them, and
``--require-exact-labels`` refuses such a run before it starts."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from studies.models import Dataset, Endpoint, MetricRun, MetricScore
from studies.services.analysis.report_card import CardParams, compute_card
from studies.services.imports import ImportOptions, import_file
from tests.served import SUMMEVAL, FaultProxy, Served, add_endpoint

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.served,
]
IGNORED = ("echo_logprobs", "prompt_logprobs", "chat_prompt_logprobs")


@pytest.fixture
def top5_server(vllm_server: Served) -> Iterator[Served]:
    """The session's server behind a proxy that refuses more than 5 candidates with the
    400 vLLM gives when started with ``--max-logprobs 5`` (a server of its own would cost a
    start: minutes on a loaded CPU)."""
    proxy = FaultProxy(vllm_server.base_url)
    proxy.top_logprobs_cap = 5
    try:
        yield Served(proxy.url, vllm_server.model_id, vllm_server.model_dir, None)
    finally:
        proxy.close()


@pytest.fixture
def summeval(cast, tmp_path) -> Dataset:  # type: ignore[no-untyped-def]
    """SummEval's first document and 6 of its outputs (coherence, means of 3 experts)."""
    if not SUMMEVAL.is_file():
        pytest.skip(f"no SummEval at {SUMMEVAL}")
    path = tmp_path / "summeval6.jsonl"
    path.write_text("".join(SUMMEVAL.read_text().splitlines(keepends=True)[:6]))
    options = ImportOptions(
        dataset="summeval6",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=cast["owner"],
    )
    import_file(path, options)
    return Dataset.objects.get(name="summeval6")


def run_geval(*extra: str) -> MetricRun:
    """G-Eval (probabilities, no steps) of the subset's coherence on the endpoint."""
    before = set(MetricRun.objects.values_list("pk", flat=True))
    call_command(
        "run_metric",
        *("--dataset", "summeval6", "--aspect", "coherence", "--metric", "geval"),
        *("--steps", "none", "--endpoint", "vllm", *extra),
        stdout=io.StringIO(),
    )
    (run,) = MetricRun.objects.exclude(pk__in=before)
    run.refresh_from_db()
    return run


def test_top_k_only_scores_are_flagged_with_their_bound_and_exact_labels_can_be_required(
    summeval, cast, client, top5_server: Served
) -> None:
    ignore = [arg for name in IGNORED for arg in ("--ignore", name)]
    said = add_endpoint(top5_server.base_url, *ignore)
    found = Endpoint.objects.get(name="vllm").capabilities
    assert found["chat_top_logprobs"] == 5 and "told to ignore" in said
    assert not (found["echo_logprobs"] or found["prompt_logprobs"] or found["chat_prompt_logprobs"])
    assert sorted(found["ignored"]) == sorted(IGNORED)

    # refused before it starts: no run saved, nothing sent
    before = MetricRun.objects.count()
    with pytest.raises(CommandError, match="exact label probabilities were required"):
        run_geval("--require-exact-labels")
    assert MetricRun.objects.count() == before

    run = run_geval()
    assert run.status == "succeeded", run.error
    details = [s.details for s in MetricScore.objects.filter(run=run).exclude(value=None)]
    assert details and {d["label_mode"] for d in details} == {"top-k"}
    flagged = [d for d in details if d.get("outside_top_k")]
    assert flagged, "a small model spreads its mass past the top-5: some label is outside"
    for d in flagged:
        for label, bound in d["outside_top_k"].items():
            assert d["distribution"][label] == 0.0 and 0.0 < bound <= 1.0
        assert d["outside_bound"] == pytest.approx(sum(d["outside_top_k"].values()))

    client.force_login(cast["owner"])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="top-k-flags"' in page and f"{len(flagged)} score" in page
    export = b"".join(
        client.get(f"/api/datasets/{summeval.pk}/export/?file_format=csv").streaming_content
    )
    header = export.decode().splitlines()[0]
    assert f"metric_{run.label}:outside_top_k_bound" in header
    # the report card flags the row and its verdict says whether the flags could change it
    card = compute_card(summeval, CardParams(resamples=50))
    (row,) = [r for r in card["rows"] if r["run"]["pk"] == run.pk]
    assert row["top_k"]["scores"] == len(flagged) and set(row["top_k"]["verdicts"]) == {
        "against",
        "toward",
    }
    assert f"{len(flagged)} of its {row['top_k']['of']} scores were read" in row["verdict"]["text"]


@pytest.mark.parametrize("metric", ["geval", "gptscore"])
def test_the_cost_estimate_is_within_a_quarter_of_what_the_run_spent(
    summeval, top5_server: Served, metric: str
) -> None:
    """Issue 43, item 12: the estimate from the per-metric prompt shape against the
    usage vLLM reported. Here with its echo: G-Eval reads every label exactly (top-5)."""
    add_endpoint(top5_server.base_url, "--price-in", "2", "--price-out", "8")
    before = set(MetricRun.objects.values_list("pk", flat=True))
    extra = ("--metric", "geval", "--steps", "none") if metric == "geval" else ()
    call_command(
        "run_metric",
        *("--dataset", "summeval6", "--aspect", "coherence", "--endpoint", "vllm", *extra),
        stdout=io.StringIO(),
    )
    (run,) = MetricRun.objects.exclude(pk__in=before)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    estimate, usage = run.config["cost_estimate"], run.usage
    assert usage["cache_hits"] == 0 and usage["cost"] > 0
    error = {
        "requests": estimate["requests"] / usage["requests"] - 1,
        "prompt_tokens": estimate["prompt_tokens"] / usage["prompt_tokens"] - 1,
        "cost": estimate["cost"] / usage["cost"] - 1,
    }
    print(f"\n{metric} cost estimate vs vLLM's usage: {estimate} vs {usage}: error {error}")
    assert abs(error["cost"]) <= 0.25 and abs(error["prompt_tokens"]) <= 0.25, error
