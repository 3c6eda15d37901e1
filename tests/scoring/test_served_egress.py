"""The served client's defences, engine alone (no database, no vLLM): the egress policy
judged on resolved addresses and pinned at connect time (DNS rebinding), the total
deadline, the size cap, strict answers. Servers the tests start play the hostile side
(tests/adversary.py); a resolver stub plays the DNS that changes its answer."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Callable
from typing import Any

import pytest

from scoring.lm import TargetRequest
from scoring.lm.served import (
    BadAnswer,
    Call,
    Capabilities,
    EgressPolicy,
    EgressRefused,
    EndpointBlocked,
    EndpointSpec,
    EndpointUnavailable,
    ServedClient,
    ServedModel,
)
from scoring.lm.served.egress import forbidden_kind

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


def resolver(*answers: list[str]) -> Callable[[str, int], list[str]]:
    """A DNS that gives ``answers`` in turn (the last one from then on); counts calls."""
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def client(url: str, policy: EgressPolicy | None = None, **kw: Any) -> ServedClient:
    spec = EndpointSpec(url, "judge", egress=policy, timeout=kw.pop("timeout", 2.0), **kw)
    return ServedClient(spec, max_retries=0)


BODY = {"prompt": "The capital of France is Paris.", "echo": True, "logprobs": 0, "max_tokens": 0}


def one(served: ServedClient) -> Any:
    """The outcome of one echo request."""
    return served.run([Call("/v1/completions", BODY)])[0]


def many(served: ServedClient, n: int) -> list[Any]:
    """The outcomes of ``n`` different echo requests, one batch."""
    return served.run([Call("/v1/completions", {**BODY, "prompt": f"Text {i}."}) for i in range(n)])


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("100.64.1.1", "shared (carrier-grade NAT)"),
        ("240.0.0.1", "private"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("2002:7f00:1::1", "loopback"),  # 6to4 around 127.0.0.1
        ("64:ff9b::a00:1", "private"),  # NAT64 around 10.0.0.1
        ("8.8.8.8", None),
        ("2001:4860:4860::8888", None),
    ],
)
def test_addresses_are_judged_as_what_they_reach(address: str, kind: str | None) -> None:
    assert forbidden_kind(ipaddress.ip_address(address)) == kind


def test_a_name_that_resolves_elsewhere_at_connect_time_is_refused_then(adversary: Any) -> None:
    server = adversary("forge")
    dns = resolver(["93.184.216.34"], ["127.0.0.1"])  # public when saved, loopback later
    policy = EgressPolicy(resolver=dns)
    assert policy.check("judge.example", server.port) == "93.184.216.34"  # the save's check
    outcome = one(client(f"http://judge.example:{server.port}", policy))
    assert isinstance(outcome, EndpointBlocked) and "loopback address" in str(outcome)
    assert server.requests == []


def test_the_client_connects_to_the_address_it_checked_keeping_the_name(adversary: Any) -> None:
    server = adversary("forge")
    dns = resolver(["127.0.0.1"], ["203.0.113.9"])  # a second answer is never asked for
    policy = EgressPolicy(allowed_networks=LOOPBACK, resolver=dns)
    answers = many(client(f"http://judge.example:{server.port}", policy), 3)
    assert all(isinstance(a, dict) for a in answers)
    assert dns.calls == ["judge.example"]  # type: ignore[attr-defined]  # resolved once, pinned
    assert set(server.headers_seen("Host")) == {f"judge.example:{server.port}"}


def in_thread(work: Callable[[], Any], seconds: float) -> Any:
    """``work()``'s result, or a failure when it is still running after ``seconds``."""
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"still waiting after {seconds:.0f} s"
    return done[0]


def test_a_dripping_answer_is_cut_at_the_total_deadline(adversary: Any) -> None:
    server = adversary("drip")
    server.drip_seconds = 0.1  # a byte well within any per-read timeout
    outcome = in_thread(lambda: one(client(server.url, timeout=0.5)), 20)
    assert isinstance(outcome, EndpointUnavailable) and "0.5 s" in str(outcome)


def test_a_huge_answer_is_refused_while_it_streams(adversary: Any) -> None:
    server = adversary("huge")
    outcome = one(client(server.url, max_response_bytes=1024 * 1024))
    assert isinstance(outcome, BadAnswer) and "larger than 1048576 bytes" in str(outcome)
    assert server.sent_bytes < 16 * 1024 * 1024  # of 100 MB: the client hung up early


@pytest.mark.parametrize(
    ("logprob", "usage", "said"),
    [
        (float("nan"), None, "not JSON (NaN and Infinity are not)"),
        (float("-inf"), None, "not JSON (NaN and Infinity are not)"),
        ("-0.5", None, "not a number"),
        (3.0, None, "not a finite number ≤ 0"),
        (-0.5, {"prompt_tokens": -1_000_000_000}, "usage.prompt_tokens is not a token count"),
        (-0.5, {"prompt_tokens": "many"}, "usage.prompt_tokens is not a token count"),
        (-0.5, {"completion_tokens": 1.5}, "usage.completion_tokens is not a token count"),
        (-0.5, [], "usage is not an object"),
    ],
)
def test_an_unusable_answer_is_that_outputs_located_error(
    adversary: Any, logprob: Any, usage: Any, said: str
) -> None:
    server = adversary("forge")
    server.logprob, server.usage = logprob, usage
    found = Capabilities(echo_logprobs=True, tokens_spell_text=True)
    model = ServedModel(client(server.url), capabilities=found)
    (result,) = model.score_targets([TargetRequest("k", "The summary:", " Paris is big.")])
    assert result.error is not None and said in result.error, result.error
    assert result.mean is None and model.client.usage.cost >= 0


def test_implausible_usage_is_counted_at_the_clients_estimate(adversary: Any) -> None:
    server = adversary("forge")
    server.usage = {"prompt_tokens": 0, "completion_tokens": 0}  # 0 for a long prompt
    priced = client(server.url, price_in=10_000.0)
    answer = priced.post(
        "/v1/completions", {"prompt": "word " * 400, "echo": True, "max_tokens": 0}
    )
    assert isinstance(answer, dict)
    assert priced.usage.implausible == 1 and priced.usage.prompt_tokens > 600
    assert priced.usage.cost > 6.0  # what 600+ tokens at 10,000 a million cost


def test_a_policy_refuses_what_does_not_resolve() -> None:
    with pytest.raises(EgressRefused, match="does not resolve"):
        EgressPolicy().check("no-such-host.invalid", 80)
