"""A served model against a REAL vLLM server (tests/served.py starts one per session):
the same numbers as the local engine, the probe's findings, the cache, and faults
injected by a proxy in front of the real server. No fake server anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from scoring.lm import HFLanguageModel, TargetRequest
from scoring.lm.served import (
    Capabilities,
    CostCapReached,
    EndpointSpec,
    EndpointUnavailable,
    MemoryCache,
    RequestRefused,
    ServedClient,
    ServedModel,
    local_server,
    probe,
    vllm_idle,
)
from scoring.metrics import geval, gptscore
from tests.served import DEFAULTS, FaultProxy, Served, items, spec
from tests.served import ENGINE_KEY as KEY

pytestmark = [pytest.mark.served, pytest.mark.engine]  # no database

TEMPLATES = {  # IST: GPTScore Table 11 (the project's defaults); VAL: the same, no instruction
    ("IST", "src_hypo"): "Generate a coherent summary for the following text: {src}\n\nTl;dr",
    ("IST", "ref_hypo"): "Rewrite the following text into a coherent text. {ref} In other words, ",
    ("VAL", "src_hypo"): "{src}\n\nTl;dr",
    ("VAL", "ref_hypo"): "{ref} In other words, ",
}
FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def capabilities(vllm_server: Served) -> Capabilities:
    return probe(ServedClient(spec(vllm_server)))


@pytest.fixture(scope="module")
def served(vllm_server: Served, capabilities: Capabilities) -> ServedModel:
    return ServedModel(ServedClient(spec(vllm_server)), capabilities=capabilities)


@pytest.fixture(scope="module")
def local(vllm_server: Served) -> Iterator[HFLanguageModel]:
    yield HFLanguageModel(vllm_server.model_dir, device="cpu", dtype="float32")


def test_the_started_servers_vllm_spins_briefly_when_idle(vllm_server: Served) -> None:
    """The virtualenv's Python loads the hook (a .pth file) and vLLM's SpinCondition
    then spins local_server.SPIN_SECONDS, the variable the server is started with."""
    if vllm_server.server is not None:
        assert vllm_server.server.environment()[vllm_idle.VARIABLE] == local_server.SPIN_SECONDS
    python = local_server.install() / "bin" / "python"
    shown = subprocess.run(
        [
            str(python),
            "-c",
            "import sys; from vllm.distributed.device_communicators import shm_broadcast as m;"
            "print('concordia_vllm_idle' in sys.modules, m.SpinCondition.__init__.__defaults__)",
        ],
        env={**os.environ, vllm_idle.VARIABLE: local_server.SPIN_SECONDS},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")[-2]
    assert shown == f"True ({float(local_server.SPIN_SECONDS)},)", shown


def test_the_probe_finds_what_vllm_gives(capabilities: Capabilities) -> None:
    assert capabilities.chat_top_logprobs == 20  # vLLM's default --max-logprobs
    assert capabilities.completion_top_logprobs == 20
    assert capabilities.echo_logprobs and capabilities.prompt_logprobs
    assert capabilities.sampling_n and capabilities.seed
    assert capabilities.target_logprobs


@pytest.mark.parametrize("setting", ["IST", "VAL"])
@pytest.mark.parametrize("dimension", ["src_hypo", "ref_hypo"])
def test_gptscore_through_the_endpoint_equals_the_local_engine(
    served: ServedModel, local: HFLanguageModel, setting: str, dimension: str
) -> None:
    config = gptscore.GPTScoreConfig(
        template=gptscore.Template(TEMPLATES[setting, dimension]),
        dimension=dimension,
        setting=setting,
    )
    outputs = items()
    here = gptscore.score(local, outputs, config)
    there = gptscore.score(served, outputs, config)
    assert len(there) == len(outputs) == 16
    deltas = []
    for a, b, item in zip(here, there, outputs, strict=True):
        assert a.key == b.key == item.key
        assert a.error is None and b.error is None, (a.error, b.error)
        assert a.value is not None and b.value is not None
        assert a.details[dimension]["n_tokens"] == b.details[dimension]["n_tokens"]
        deltas.append(abs(a.value - b.value))
    FIGURES[f"gptscore {setting} {dimension}"] = max(deltas)
    assert max(deltas) <= 1e-3, deltas


def test_the_echo_and_prompt_logprobs_routes_agree(
    vllm_server: Served, capabilities: Capabilities, served: ServedModel
) -> None:
    only_prompt = Capabilities(**{**capabilities.as_dict(), "echo_logprobs": False, "notes": ()})
    other = ServedModel(ServedClient(spec(vllm_server)), capabilities=only_prompt)
    # A character split over tokens (“ in three bytes), and a prompt ending in a space
    # (the target's first token straddles: it counts as the target's, as locally).
    requests = [
        TargetRequest("a", "Quote: ", "“Café” costs £5 — cheap."),
        TargetRequest("b", "Tl;dr", " The council voted for bike lanes."),
    ]
    echo = served.score_targets(requests)
    prompt_lp = other.score_targets(requests)
    for x, y in zip(echo, prompt_lp, strict=True):
        assert x.ok and y.ok, (x.error, y.error)
        assert x.token_logprobs == pytest.approx(y.token_logprobs, abs=1e-5)


def test_a_straddling_token_can_be_refused(vllm_server: Served, capabilities: Capabilities) -> None:
    strict = ServedModel(
        ServedClient(spec(vllm_server)), capabilities=capabilities, straddle="error"
    )
    bad, good = strict.score_targets(
        [TargetRequest("s", "In other words, ", "the cat"), TargetRequest("t", "Tl;dr", " ok")]
    )
    assert bad.error is not None and "spans the end of the prompt" in bad.error
    assert good.ok


def test_geval_through_chat_top_logprobs_equals_the_local_rating_path(
    served: ServedModel, local: HFLanguageModel
) -> None:
    template = next(
        t
        for t in json.loads(DEFAULTS.read_text())["templates"]
        if t["kind"] == "geval" and t["aspect"] == "COH" and t["task"] == "summarization"
    )
    intro, source_label, output_label = geval.introduction_for("summarization", template["text"])
    scale = (1, 2, 3, 4, 5)
    config = geval.GEvalConfig(
        introduction=intro,
        aspect_name="Coherence",
        criteria=geval.criteria_text(
            "Coherence", "the collective quality of all sentences.", scale
        ),
        scale=scale,
        steps="1. Read the news article.\n2. Read the summary.\n3. Rate its coherence.",
        source_label=source_label,
        output_label=output_label,
    )
    outputs = items(4)
    here = geval.score(local, outputs, config)
    there = geval.score(served, outputs, config)
    worst = 0.0
    for a, b in zip(here, there, strict=True):
        assert a.error is None and b.error is None, (a.error, b.error)
        assert a.value is not None and b.value is not None
        for label in map(str, scale):
            worst = max(
                worst, abs(a.details["distribution"][label] - b.details["distribution"][label])
            )
        worst = max(worst, abs(a.value - b.value))
        assert b.details["label_mass"] == pytest.approx(a.details["label_mass"], abs=1e-3)
    FIGURES["geval"] = worst
    assert worst <= 1e-3


def test_geval_without_logprobs_estimates_from_samples(served: ServedModel) -> None:
    config = geval.GEvalConfig(
        introduction="Rate the summary.",
        aspect_name="Fluency",
        criteria="Fluency (1-3) - is it well written?",
        scale=(1, 2, 3),
        estimation="sampled",
        n_samples=5,
    )
    first = geval.score(served, items(2), config)
    again = geval.score(served, items(2), config)  # the same seed: the same samples
    for result, repeat in zip(first, again, strict=True):
        assert result.details["sampled"] is True
        if result.error is None:
            assert result.details["n_samples"] == 5
            assert 0 <= result.details["n_unparsed"] <= 5
            assert result.details["distribution"] == repeat.details["distribution"]
        else:
            assert "none of the 5 sampled answers" in result.error


def test_generation_is_greedy_and_repeatable(served: ServedModel) -> None:
    prompt = "Evaluation Steps:\n1."
    text = served.generate(prompt, max_new_tokens=12)
    assert text and text == served.generate(prompt, max_new_tokens=12)
    chat = served.generate(served.chat_prompt("Say hello."), max_new_tokens=8)
    assert chat.strip()


def test_a_repeated_batch_is_served_from_the_cache(
    vllm_server: Served, capabilities: Capabilities, fault_proxy: FaultProxy
) -> None:
    client = ServedClient(spec(vllm_server, fault_proxy.url), cache=MemoryCache())
    model = ServedModel(client, capabilities=capabilities)
    requests = [TargetRequest(i, f"Summary {i}:", f" item number {i}.") for i in range(8)]
    first = model.score_targets(requests)
    assert fault_proxy.counts["received"] == 8 and client.usage.requests == 8
    again = model.score_targets(requests)
    assert fault_proxy.counts["received"] == 8  # not one more request reached the server
    assert client.usage.cache_hits == 8
    assert [s.token_logprobs for s in again] == [s.token_logprobs for s in first]


def test_faults_are_retried_counted_and_the_results_right(
    vllm_server: Served, capabilities: Capabilities, served: ServedModel, fault_proxy: FaultProxy
) -> None:
    requests = [TargetRequest(i, f"Note {i}:", f" the value is {i * 7}.") for i in range(6)]
    want = served.score_targets(requests)
    fault_proxy.fail("429", 2, value=0.2)
    fault_proxy.fail("500", 3)
    fault_proxy.fail("hang", 1, value=15.0)
    client = ServedClient(
        spec(vllm_server, fault_proxy.url, timeout=6.0, max_concurrency=2), backoff_base=0.05
    )
    started = time.perf_counter()
    got = ServedModel(client, capabilities=capabilities).score_targets(requests)
    assert [g.token_logprobs for g in got] == [w.token_logprobs for w in want]
    # A forwarded request the loaded server answers after the client's 6 s is a real
    # timeout too: retried, and forwarded once more. Each such one adds one to both counts.
    slow = fault_proxy.counts["forwarded"] - 6
    assert 0 <= slow <= 2 and fault_proxy.counts["hang"] == 1
    assert client.usage.retries == {"429": 2, "5xx": 3, "timeout": 1 + slow, "connect": 0}
    assert client.usage.requests == 6 and client.usage.failures == 0
    assert time.perf_counter() - started >= 6.0  # the hung request waited for its timeout


def test_persistent_5xx_is_a_clear_error_that_never_shows_the_key(
    vllm_server: Served, capabilities: Capabilities, fault_proxy: FaultProxy
) -> None:
    fault_proxy.always = 500
    client = ServedClient(
        spec(vllm_server, fault_proxy.url, max_concurrency=1), max_retries=2, backoff_base=0.01
    )
    model = ServedModel(client, capabilities=capabilities)
    with pytest.raises(EndpointUnavailable) as caught:
        model.score_targets([TargetRequest(i, "Say:", f" {i}") for i in range(4)])
    message = str(caught.value)
    assert "failed 3 times in a row" in message and "500" in message
    assert "injected failure" in message
    assert KEY not in message and KEY not in repr(caught.value) and KEY not in repr(client)
    # The batch stopped once one request was given up: not every request used its tries.
    assert 3 <= fault_proxy.counts["received"] < 4 * 3
    assert fault_proxy.headers_seen[0]["Authorization"] == f"Bearer {KEY}"


def test_a_prompt_past_the_context_is_that_requests_error(served: ServedModel) -> None:
    long = "word " * 6000  # past the server's 4,096 tokens
    ok, overflow = served.score_targets(
        [TargetRequest("ok", "Tl;dr", " fine."), TargetRequest("long", long, "end.")]
    )
    assert ok.ok
    assert overflow.error is not None and "400" in overflow.error
    assert "context" in overflow.error.lower() or "length" in overflow.error.lower()


def test_an_unknown_model_id_is_a_clear_error(
    vllm_server: Served, capabilities: Capabilities
) -> None:
    wrong = EndpointSpec(vllm_server.base_url, "no-such-model", api_key=KEY)
    model = ServedModel(ServedClient(wrong), capabilities=capabilities)
    with pytest.raises(RequestRefused) as caught:
        model.score_targets([TargetRequest("k", "Say:", " hi")])
    assert caught.value.status == 404
    assert "no-such-model" in str(caught.value) and "model id" in str(caught.value)
    with pytest.raises(RequestRefused):
        probe(ServedClient(wrong))


def test_the_cost_cap_stops_the_batch_and_keeps_finished_scores(
    vllm_server: Served, capabilities: Capabilities, served: ServedModel
) -> None:
    requests = [TargetRequest(i, f"Item {i}:", f" costs {i} coins.") for i in range(6)]
    want = served.score_targets(requests)
    client = ServedClient(
        spec(vllm_server, max_concurrency=1, price_in=1000.0, price_out=1000.0), cost_cap=0.03
    )
    with pytest.raises(CostCapReached) as caught:
        ServedModel(client, capabilities=capabilities).score_targets(requests)
    partial = caught.value.partial
    assert partial is not None and len(partial) == 6
    done = [p for p in partial if p is not None]
    assert 0 < len(done) < 6 and client.usage.cost <= 0.03
    for got, expected in zip(partial, want, strict=True):
        if got is not None:
            assert got.token_logprobs == expected.token_logprobs


def test_equality_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the largest differences found above (for the report)."""
    with capsys.disabled():
        for name, value in FIGURES.items():
            print(f"\nmax |Δ| {name}: {value:.2e}")
