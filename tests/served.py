"""A real vLLM server for the tests that need one, and a proxy that injects faults.

Loaded as a pytest plugin (``pytest_plugins`` in tests/conftest.py). The session-scoped
``vllm_server`` fixture installs vLLM's own virtualenv if needed
(:func:`scoring.lm.served.local_server.install`; ``$CONCORDIA_VLLM_VENV`` points at an
existing one) and starts one server per test session, serving the installed default
model. No fake server ever stands in for it: :class:`FaultProxy` sits in front of the
real one, answers the faults it is told to, and forwards everything else.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from scoring.lm.served import EndpointSpec, local_server
from scoring.metrics.base import Item

ROOT = Path(__file__).resolve().parent.parent
MODEL_NAME = "smollm2-135m-instruct"
SHARED_DATA = Path(os.environ.get("CONCORDIA_SHARED_DATA") or ROOT.parent / "shared" / "data")
SUMMEVAL = SHARED_DATA / "summeval.jsonl"
DEFAULTS = ROOT / "studies" / "defaults" / "defaults.json"
ENGINE_KEY = "sk-concordia-test-6f1d2c"  # the engine's tests' key (spec)
RUNS_KEY = "sk-concordia-e2e-7c41f0b9"  # the endpoint's key in the run tests (add_endpoint)


def model_dir() -> Path:
    """The installed default model (``$CONCORDIA_MODEL_DIR``, else data/models)."""
    return Path(os.environ.get("CONCORDIA_MODEL_DIR") or ROOT / "data" / "models") / MODEL_NAME


@functools.cache
def summeval_lines() -> tuple[str, ...]:
    """SummEval's lines (``../shared``), the shortest documents first (each document's
    16 outputs together, in the file's order; documents of one length in the file's
    order): the tests prove the same on a 106-word article as on the file's first, of
    364 words, at a third of the prompt tokens for the model and the server alike. Read
    once per process."""
    by_doc: dict[str, list[str]] = {}
    words: dict[str, int] = {}
    for line in SUMMEVAL.read_text().splitlines(keepends=True):
        if line.strip():
            row = json.loads(line)
            by_doc.setdefault(row["doc_id"], []).append(line)
            words[row["doc_id"]] = len(row["source"].split())
    shortest_first = sorted(by_doc, key=words.__getitem__)  # stable: the file's order
    return tuple(line for doc in shortest_first for line in by_doc[doc])


def items(n: int = 16) -> list[Item]:
    """``n`` outputs: SummEval's, the shortest documents first (:func:`summeval_lines`),
    when ../shared is here, else the demo's."""
    if SUMMEVAL.is_file():
        rows = [json.loads(line) for line in summeval_lines()[:n]]
        return [
            Item(
                f"{r['doc_id']}/{r['system_id']}",
                r["doc_id"],
                r["source"],
                r["output"],
                tuple(r["references"][:1]),
            )
            for r in rows
        ]
    docs = json.loads((ROOT / "studies" / "defaults" / "demo_documents.json").read_text())
    out = []
    for doc in docs["documents"]:
        refs = doc["references"]
        for i, hypo in enumerate(refs):
            ref = refs[(i + 1) % len(refs)]
            out.append(
                Item(f"{doc['doc_id']}/{i}", doc["doc_id"], " ".join(doc["source"]), hypo, (ref,))
            )
    return out[:n]


def spec(served: Served, url: str | None = None, **kw: object) -> EndpointSpec:
    """The endpoint of ``served`` (or ``url``: a proxy in front of it) for the engine."""
    options: dict[str, object] = {"api_key": ENGINE_KEY, "max_concurrency": 4, "timeout": 120.0}
    options.update(kw)
    return EndpointSpec(url or served.base_url, served.model_id, **options)  # type: ignore[arg-type]


def add_endpoint(url: str, *extra: str) -> str:
    """``manage.py endpoint add vllm`` at ``url`` for the owner, its key on stdin; what it said."""
    from django.core.management import call_command

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO(RUNS_KEY + "\n"))
        call_command(
            "endpoint",
            "add",
            "vllm",
            "--base-url",
            url,
            "--model-id",
            MODEL_NAME,
            "--api-key-stdin",
            "--owner",
            "owner",
            "--max-concurrency",
            "4",
            "--timeout",
            "120",
            *extra,
            stdout=out,
        )
    return out.getvalue()


@dataclass
class Served:
    """The running server: where it is, what it serves, and the server to restart."""

    base_url: str
    model_id: str
    model_dir: Path
    server: local_server.VLLMServer | None  # None: a server started outside the tests


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One real vLLM server for the session (minutes to start on a loaded CPU), started
    with vLLM's defaults (``--max-logprobs`` 20, as most deployments run it): labels
    outside its top-20 are read exactly (issue 37), as on a user's server.

    ``$CONCORDIA_VLLM_URL`` names one already running (serving the default model as
    ``smollm2-135m-instruct``) instead, to save the start while developing."""
    where = model_dir()
    assert (where / "config.json").is_file(), (
        f"the default model is not at {where}: run `python manage.py install_model`"
    )
    running = os.environ.get("CONCORDIA_VLLM_URL")
    if running:
        yield Served(running.rstrip("/"), MODEL_NAME, where, None)
        return
    venv = local_server.install()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    server = local_server.VLLMServer(
        where, venv=venv, model_id=MODEL_NAME, log_path=log, max_logprobs=None
    )
    server.start()
    try:
        yield Served(server.base_url, server.model_id, where, server)
    finally:
        server.stop()


Fault = tuple[str, float]  # ("429", retry_after) | ("500", 0) | ("hang", seconds)


class FaultProxy:
    """A small HTTP proxy in front of a real server.

    :meth:`fail` queues faults, answered one per incoming request before anything is
    forwarded: ``"429"`` (with ``Retry-After``), ``"500"``, or ``"hang"`` (holds the
    request past the client's timeout, then drops it). :attr:`always` answers every
    request with that status. :attr:`delay` holds each forwarded request that many
    seconds (a slower server). :attr:`model_version`, when set, replaces the
    ``system_fingerprint`` of every answer and the ``root`` that ``/v1/models`` reports
    (a redeployed model). :attr:`top_logprobs_cap`, when set, refuses a request for more
    candidates than that with vLLM's own 400 (a server started with ``--max-logprobs``).
    :attr:`counts` tells what happened: ``received``, ``forwarded``, and one count per
    fault answered; :attr:`bodies` counts each forwarded request body (its SHA-256), so a
    request sent twice shows.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults: deque[Fault] = deque()
        self.always: int | None = None
        self.delay = 0.0
        self.model_version: str | None = None
        self.top_logprobs_cap: int | None = None
        self.counts: Counter[str] = Counter()
        self.bodies: Counter[str] = Counter()
        self.headers_seen: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._http = httpx.Client(timeout=600.0)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail(self, kind: str, times: int = 1, value: float = 0.0) -> None:
        """Answer the next ``times`` requests with the fault ``kind``."""
        if kind not in ("429", "500", "hang"):
            raise ValueError(f"unknown fault {kind!r}")
        with self._lock:
            self.faults.extend([(kind, value)] * times)

    def reset(self) -> None:
        with self._lock:
            self.faults.clear()
            self.always = None
            self.delay = 0.0
            self.model_version = None
            self.top_logprobs_cap = None
            self.counts.clear()
            self.bodies.clear()
            self.headers_seen.clear()

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def redeployed(self, content: bytes) -> bytes:
        """An answer as a server redeployed as :attr:`model_version` gives it."""
        data = json.loads(content)
        if isinstance(data, dict):
            if "system_fingerprint" in data:
                data["system_fingerprint"] = self.model_version
            for entry in data.get("data") or []:  # /v1/models
                if isinstance(entry, dict) and "root" in entry:
                    entry["root"] = self.model_version
        return json.dumps(data).encode()

    def over_cap(self, body: bytes) -> int:
        """The largest number of candidates ``body`` asks for past :attr:`top_logprobs_cap`
        (0: none past it): chat's ``top_logprobs``, the completions' ``logprobs``, vLLM's
        ``prompt_logprobs``."""
        if self.top_logprobs_cap is None or not body:
            return 0
        try:
            data = json.loads(body)
        except ValueError:
            return 0
        if not isinstance(data, dict):
            return 0
        asked = [data.get(key) for key in ("top_logprobs", "logprobs", "prompt_logprobs")]
        over = [n for n in asked if type(n) is int and n > self.top_logprobs_cap]
        return max(over, default=0)

    def _next(self) -> Fault | None:
        with self._lock:
            self.counts["received"] += 1
            if self.always is not None:
                self.counts[str(self.always)] += 1
                return (str(self.always), 0.0)
            if self.faults:
                fault = self.faults.popleft()
                self.counts[fault[0]] += 1
                return fault
            self.counts["forwarded"] += 1
            return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy._lock:
                    proxy.headers_seen.append(dict(self.headers.items()))
                over = proxy.over_cap(body)
                if over:  # as a server started with --max-logprobs answers, or a hosted API
                    message = (
                        f"Requested logprobs of {over}, which is greater than max allowed: "
                        f"{proxy.top_logprobs_cap}"
                    )
                    error = json.dumps({"error": {"message": message, "code": 400}}).encode()
                    with proxy._lock:
                        proxy.counts["capped"] += 1
                    return self._answer(400, error, {"Content-Type": "application/json"})
                fault = proxy._next()
                kind = fault[0] if fault else None
                if kind == "429":
                    assert fault is not None
                    error = b'{"error": {"message": "slow down", "code": 429}}'
                    headers = {"Content-Type": "application/json"}
                    headers["Retry-After"] = f"{fault[1]:g}"
                    return self._answer(429, error, headers)
                if kind == "hang":
                    assert fault is not None
                    proxy._closing.wait(fault[1])
                    self.close_connection = True
                    return None
                if kind is not None:
                    error = b'{"error": {"message": "injected failure"}}'
                    return self._answer(int(kind), error, {"Content-Type": "application/json"})
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "authorization", "accept")
                }
                with proxy._lock:
                    proxy.bodies[hashlib.sha256(body).hexdigest()] += 1
                if proxy.delay:
                    proxy._closing.wait(proxy.delay)
                try:
                    answer = proxy._http.request(
                        method, proxy.upstream + self.path, content=body, headers=headers
                    )
                except httpx.TransportError:  # the server is down: so is the proxy's answer
                    self.close_connection = True
                    return None
                content = answer.content
                if proxy.model_version is not None and answer.status_code == 200:
                    content = proxy.redeployed(content)
                kept = {"Content-Type": answer.headers.get("content-type", "application/json")}
                return self._answer(answer.status_code, content, kept)

            def do_POST(self) -> None:
                self._handle("POST")

            def do_GET(self) -> None:
                self._handle("GET")

        return Handler


@pytest.fixture
def fault_proxy(vllm_server: Served) -> Iterator[FaultProxy]:
    """A fresh :class:`FaultProxy` in front of the session's server."""
    proxy = FaultProxy(vllm_server.base_url)
    try:
        yield proxy
    finally:
        proxy.close()


def wait_for(predicate: Any, timeout: float = 30.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return bool(predicate())
