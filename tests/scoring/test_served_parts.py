"""The served-model parts that need no server: the endpoint spec, usage figures, the
cache key, the rate limiters (memory, file across processes, Redis), reading token
offsets, and the rating-label walk over top-k candidates."""

from __future__ import annotations

import math
import multiprocessing
import socket
import time
from pathlib import Path

import pytest

from scoring.lm.served import (
    Capabilities,
    EndpointSpec,
    FileLimiter,
    FileSlots,
    MemoryCache,
    MemoryLimiter,
    MemorySlots,
    RedisLimiter,
    RedisSlots,
    Slots,
    Usage,
    _exact_labels,
    cache_key,
)
from scoring.lm.served._rating_walk import Walk
from scoring.lm.served.answers import estimate_tokens
from scoring.lm.served.backend import chat_prompt, split_chat
from scoring.lm.served.limits import take
from scoring.lm.served.protocols.openai import align as _align


def test_the_spec_never_shows_its_key_and_checks_its_values() -> None:
    spec = EndpointSpec("http://user:pw@example.org:8000/v1/", "m", api_key="sk-secret")
    assert "sk-secret" not in repr(spec)
    assert spec.root == "http://user:pw@example.org:8000" and spec.host == "example.org:8000"
    assert spec.cost(1_000_000, 500_000) == 0.0
    priced = EndpointSpec("https://api.example.org", "m", price_in=2.0, price_out=8.0)
    assert priced.cost(1_000_000, 500_000) == pytest.approx(6.0)
    for bad in ({"base_url": "ftp://x"}, {"max_concurrency": 0}, {"rpm": 0}, {"timeout": 0}):
        with pytest.raises(ValueError):
            EndpointSpec(**{"base_url": "http://x", "model_id": "m", **bad})  # type: ignore[arg-type]


def test_usage_gives_quantiles_and_retries_by_reason() -> None:
    usage = Usage()
    for seconds in (0.1, 0.2, 0.3, 0.4, 1.0):
        usage.add_response(seconds, 10, 1, 0.5)
    usage.add_retry("429")
    usage.add_retry("5xx")
    usage.add_retry("5xx")
    summary = usage.as_dict()
    assert summary["requests"] == 5 and summary["prompt_tokens"] == 50
    assert summary["latency_p50"] == pytest.approx(0.3)
    assert summary["latency_p95"] == pytest.approx(0.88)
    assert summary["retries"] == {"429": 1, "5xx": 2, "timeout": 0, "connect": 0}
    assert summary["cost"] == pytest.approx(2.5) and usage.total_retries == 3
    assert Usage().p50 is None


def test_capabilities_round_trip() -> None:
    caps = Capabilities(chat_top_logprobs=20, echo_logprobs=True, notes=("x",))
    assert Capabilities.from_dict(caps.as_dict()) == caps
    assert caps.target_logprobs and not Capabilities().target_logprobs


def test_the_cache_key_is_the_exact_request_whatever_the_key_order() -> None:
    a = cache_key("m", {"prompt": "x", "max_tokens": 0, "echo": True}, "/v1/completions")
    b = cache_key("m", {"echo": True, "max_tokens": 0, "prompt": "x"}, "/v1/completions")
    assert a == b and len(a) == 64
    assert a != cache_key("m2", {"prompt": "x", "max_tokens": 0, "echo": True}, "/v1/completions")
    assert a != cache_key("m", {"prompt": "x ", "max_tokens": 0, "echo": True}, "/v1/completions")
    assert a != cache_key("m", {"prompt": "x", "max_tokens": 0, "echo": True}, "/v1/chat")
    cache = MemoryCache()
    cache.set(a, {"choices": [1]})
    found = cache.get(a)
    assert found == {"choices": [1]}
    found["choices"].append(2)  # a copy: the stored answer is unchanged
    assert cache.get(a) == {"choices": [1]} and cache.get(b + "0") is None


def test_estimates_count_the_prompt_and_the_answers() -> None:
    assert estimate_tokens({"prompt": "x" * 30, "max_tokens": 0}) == (11, 0)
    chat = {"messages": [{"role": "user", "content": "y" * 9}], "max_tokens": 4, "n": 5}
    assert estimate_tokens(chat) == (4, 20)


def test_a_bucket_grants_a_minutes_worth_then_makes_callers_wait() -> None:
    state, wait = None, 0.0
    for _ in range(3):
        state, wait = take(state, 100.0, rpm=3, tpm=None, tokens=10)
        assert wait == 0.0
    state, wait = take(state, 100.0, rpm=3, tpm=None, tokens=10)
    assert wait == pytest.approx(20.0)  # one request comes back every 60/3 s
    state, wait = take(state, 120.0, rpm=3, tpm=None, tokens=10)
    assert wait == 0.0
    state, wait = take(None, 0.0, rpm=None, tpm=100, tokens=80)
    assert wait == 0.0
    state, wait = take(state, 0.0, rpm=None, tpm=100, tokens=50)
    assert wait == pytest.approx(30 * 60 / 100)  # 30 tokens short at 100 a minute
    _, wait = take(None, 0.0, rpm=None, tpm=100, tokens=500)  # bigger than a minute's worth
    assert wait == 0.0


def test_the_memory_limiter_keeps_endpoints_apart() -> None:
    limiter = MemoryLimiter()
    assert limiter.reserve("a", 1, None, 1) == 0.0
    assert limiter.reserve("a", 1, None, 1) > 0
    assert limiter.reserve("b", 1, None, 1) == 0.0
    assert limiter.reserve("a", None, None, 1) == 0.0  # no limits: never waits


def _grab(path: str, count: int, out: multiprocessing.Queue[int]) -> None:
    limiter = FileLimiter(path)
    out.put(sum(1 for _ in range(count) if limiter.reserve("ep", 30, None, 1) == 0.0))


def test_the_file_limiter_is_shared_by_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "limits.json")
    queue: multiprocessing.Queue[int] = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=_grab, args=(path, 40, queue)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    granted = sum(queue.get(timeout=5) for _ in workers)
    assert 30 <= granted <= 31  # 30 a minute between them (plus what refills meanwhile)


def _redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _redis_up(), reason="no Redis on 127.0.0.1:6379")
def test_the_redis_limiter_grants_the_same_as_the_others() -> None:
    limiter = RedisLimiter.from_url("redis://127.0.0.1:6379/15", prefix=f"test:{time.time()}:")
    granted = [limiter.reserve("ep", 5, 1000, 100) for _ in range(12)]
    assert granted[:5] == [0.0] * 5
    assert all(w > 0 for w in granted[5:])
    assert granted[5] == pytest.approx(12.0, abs=0.5)  # one request back every 60/5 s
    assert limiter.reserve("other", 5, None, 1) == 0.0


def _slot_stores(tmp_path: Path) -> list[Slots]:
    stores: list[Slots] = [MemorySlots(), FileSlots(tmp_path / "slots.json")]
    if _redis_up():
        stores.append(RedisSlots.from_url("redis://127.0.0.1:6379/15", f"test:{time.time()}:"))
    return stores


def test_slots_hold_at_most_their_limit_and_free_themselves(tmp_path: Path) -> None:
    for slots in _slot_stores(tmp_path):
        first, second = slots.take("ep", 2, 30), slots.take("ep", 2, 30)
        assert first and second and first != second, slots
        assert slots.take("ep", 2, 30) is None  # both held
        assert slots.take("other", 2, 30)  # keys apart
        slots.give_back("ep", first)
        assert slots.renew("ep", second, 30) and not slots.renew("ep", first, 30)
        third = slots.take("ep", 2, 0.2)
        assert third and slots.take("ep", 2, 30) is None
        deadline = time.monotonic() + 5  # the lease of a holder that died runs out
        while (fourth := slots.take("ep", 2, 30)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fourth, slots


def test_offsets_are_read_where_tokens_spell_the_text() -> None:
    assert _align(["Hel", "lo", " you"], "Hello you", [0, 3, 5]) == [0, 3, 5]
    with pytest.raises(ValueError):
        _align(["Hel", "lo"], "Hello", [0, 2])
    # “ split over two tokens that read as replacement characters on their own.
    text = "a “b"
    assert _align(["a", " \ufffd", "\ufffd", "b"], text, None) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        _align(["a", "x"], "a b", None)


def test_a_chat_prompt_is_marked_and_read_back() -> None:
    prompt = chat_prompt("Rate it.\n- Coherence:")
    assert prompt.endswith("\n")  # labels follow without a space, as after a template
    assert split_chat(prompt) == ("Rate it.\n- Coherence:", "")
    assert split_chat(prompt + "4") == ("Rate it.\n- Coherence:", "4")
    assert split_chat("plain") is None


def _lp(p: float) -> float:
    return math.log(p)


def test_the_walk_reads_single_token_labels_from_one_node() -> None:
    walk = Walk("P", ["1", "2", "3"])
    assert walk.missing() == [""]
    walk.add("", {"1": _lp(0.5), "2": _lp(0.2), "x": _lp(0.2)})  # 3 is not in the top-k
    assert walk.missing() == []
    dist = walk.result("k")
    assert dist.probs == pytest.approx((0.5 / 0.7, 0.2 / 0.7, 0.0))
    assert dist.label_mass == pytest.approx(0.7)


def test_the_walk_follows_multi_token_labels_and_stops_where_labels_end() -> None:
    walk = Walk("P:", [" 1", " 2", " 10"])
    walk.add("", {" ": _lp(0.8), "x": _lp(0.2)})
    assert walk.missing() == [" "]
    walk.add(" ", {"1": _lp(0.5), "2": _lp(0.25)})
    assert walk.missing() == [" 1"]  # "1" may go on into "10"
    walk.add(" 1", {"0": _lp(0.4), ".": _lp(0.6)})
    dist = walk.result("k")
    p1, p2, p10 = 0.8 * 0.5 * 0.6, 0.8 * 0.25, 0.8 * 0.5 * 0.4
    total = p1 + p2 + p10
    assert dist.probs == pytest.approx((p1 / total, p2 / total, p10 / total))
    assert dist.label_mass == pytest.approx(total)


def test_a_failed_node_or_bad_labels_make_an_error_result() -> None:
    walk = Walk("P", ["1", "2"])
    walk.fail("refused")
    assert walk.missing() == [] and walk.result("k").error == "refused"
    assert Walk("P", ["1", "1"]).result("k").error == "rating labels must be distinct"


def test_exact_labels_stop_where_a_longer_label_goes_on_and_flag_none() -> None:
    # "1" is the start of "10": it keeps the probability of stopping after "1"
    read = [
        (("1",), (math.log(0.4),)),
        (("2",), (math.log(0.1),)),
        (("1", "0"), (math.log(0.4), math.log(0.25))),
    ]
    found = _exact_labels.exact_distribution("k", ("1", "2", "10"), read)
    assert found.ok and found.label_mode == "exact" and not found.outside_top_k
    want = [0.4 * 0.75, 0.1, 0.4 * 0.25]
    assert found.probs == pytest.approx([w / sum(want) for w in want])
    assert found.label_mass == pytest.approx(sum(want))
    failed = _exact_labels.exact_distribution("k", ("1", "2"), [read[0], "a label merges"])
    assert failed.error == "a label merges"


def test_a_label_outside_the_top_k_is_flagged_with_its_bound() -> None:
    walk = Walk("Score:", (" 1", " 2", " 3"))
    walk.add("", {" 1": math.log(0.5), " 2": math.log(0.3), " x": math.log(0.05)})
    assert walk.missing() == []
    found = walk.result("k")
    assert found.label_mode == "top-k" and found.probs[2] == 0.0
    assert dict(found.outside_top_k) == pytest.approx({" 3": 0.05})  # the k-th candidate's
    assert found.outside_bound == pytest.approx(0.05)
