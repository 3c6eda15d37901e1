"""The served client stores each answer in the response cache as it arrives, not when its
batch ends: a worker killed mid-batch has lost only the answers in flight (the kill and
resume against the real vLLM server: tests/studies/test_served_tuning.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scoring.lm.served import Call, EndpointSpec, MemoryCache, ServedClient


class Held:
    """A local HTTP server that answers each completion at once with its prompt, except
    the prompt ``held``, answered when :attr:`release` is set."""

    def __init__(self) -> None:
        self.release, self.holding = threading.Event(), threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if body["prompt"] == "held":
                    owner.holding.set()
                    owner.release.wait(30)
                answer = {
                    "choices": [{"text": body["prompt"], "index": 0}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def held() -> Iterator[Held]:
    server = Held()
    yield server
    server.release.set()
    server.server.shutdown()
    server.server.server_close()


class Recorded(MemoryCache):
    """A memory cache that keeps each write's keys, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[set[str]] = []

    def set_many(self, values: Mapping[str, dict[str, Any]]) -> None:
        super().set_many(values)
        self.writes.append(set(values))


def test_each_answer_is_stored_as_it_arrives_before_its_batch_ends(held: Held) -> None:
    cache = Recorded()
    client = ServedClient(EndpointSpec(held.url, "m", max_concurrency=4, timeout=60), cache=cache)
    calls = [Call("/v1/completions", {"prompt": p, "max_tokens": 1}) for p in ("a", "b", "held")]
    keys = [client.key_of(c.route, client.wire.with_model(c.body, "m")) for c in calls]
    outcomes: list[Any] = []
    batch = threading.Thread(target=lambda: outcomes.extend(client.run(calls)))
    batch.start()
    try:
        assert held.holding.wait(30)
        # the batch is still running (one request held), and the answers in are stored
        stored = threading.Event()
        for _ in range(300):
            if set(keys[:2]) <= set(cache.get_many(keys)):
                stored.set()
                break
            batch.join(0.05)
        assert stored.is_set() and batch.is_alive() and keys[2] not in cache.get_many(keys)
    finally:
        held.release.set()
        batch.join(30)
    assert [o["choices"][0]["text"] for o in outcomes] == ["a", "b", "held"]
    assert set(cache.get_many(keys)) == set(keys)
    assert set().union(*cache.writes) == set(keys) and len(cache.writes) >= 2
    assert client.usage.requests == 3 and client.usage.cache_hits == 0
