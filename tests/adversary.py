"""Adversarial HTTP servers for the served-endpoint security tests: small threaded servers
a test starts on purpose, playing the researcher's own server turned against the site.

Loaded as a pytest plugin (``pytest_plugins`` in tests/conftest.py). An
:class:`AdversarialServer` logs every request's headers (who sent what key where), counts
the connections it holds at once, and answers as its :attr:`mode` says:

* ``"forge"``: an OpenAI-compatible server of its own making. ``/v1/completions`` with
  ``echo`` answers the prompt's tokens (words, so they spell the text) each with
  :attr:`logprob` (a number, ``nan``, ``inf`` or a string) and the usage
  :attr:`usage` (reported as given, ``None``: none); ``/v1/models`` names
  :attr:`version` as the model's root; everything else is refused (400), so its probe
  finds echo log-probabilities only;
* ``"drip"``: a 200 whose body comes one byte every :attr:`drip_seconds`, for ever;
* ``"huge"``: a 200 whose body streams :attr:`huge_bytes` of JSON with no length given;
  :attr:`sent_bytes` tells how much the client read before it hung up;
* ``"redirect"``: 302 to :attr:`redirect_to`;
* ``"leak"``: 500 and 400 answers whose bodies hold :data:`LEAK` (a body no
  researcher may see echoed);
* ``"garbage"``: no HTTP at all (what another service's open port says);
* ``"refuse"``: 400 to every request (a server that gives nothing a metric needs).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

LEAK = "internal-secret-body-7d1f"  # what a hostile answer body holds
# the one variable a shared endpoint may read its key from: the tests' workers have it
# (tests/conftest.py: worker_env), with this value
TEST_KEY_ENV = "CONCORDIA_TEST_JUDGE_KEY"
TEST_KEY_VALUE = "sk-operators-judge-key-3b9e61"


class AdversarialServer:
    """A threaded HTTP server on 127.0.0.1 (a free port), playing :attr:`mode`."""

    def __init__(self, mode: str = "forge", *, model: str = "judge") -> None:
        self.mode = mode
        self.model = model
        self.version = "judge-v1"
        self.logprob: Any = -0.5
        self.usage: dict[str, Any] | None = {"prompt_tokens": 10, "completion_tokens": 0}
        self.drip_seconds = 0.5
        self.huge_bytes = 100 * 1024 * 1024
        self.redirect_to = ""
        self.sent_bytes = 0
        self.requests: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers_seen(self, name: str) -> list[str]:
        """Every value of the request header ``name`` received so far."""
        with self._lock:
            return [r["headers"][name] for r in self.requests if name in r["headers"]]

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    # -- what it answers ---------------------------------------------------------------

    def forged(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path == "/v1/models":
            return 200, {"data": [{"id": self.model, "root": self.version}]}
        if path != "/v1/completions" or not body.get("echo") or body.get("n"):
            return 400, {"error": {"message": "not supported here"}}
        text = str(body.get("prompt", ""))
        tokens = re.findall(r"\s*\S+|\s+", text)
        offsets = [sum(len(t) for t in tokens[:k]) for k in range(len(tokens))]
        values = [None] + [self.logprob] * (len(tokens) - 1)
        answer: dict[str, Any] = {
            "id": "forged",
            "object": "text_completion",
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "text": text,
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": values,
                        "text_offset": offsets,
                        "top_logprobs": None,
                    },
                }
            ],
        }
        if self.usage is not None:
            answer["usage"] = self.usage
        return 200, answer

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(
                self, status: int, content: bytes, extra: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def _stream(self, chunks: Iterator[bytes]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        with server._lock:
                            server.sent_bytes += len(chunk)
                except OSError:  # the client hung up: what a bounded client does
                    pass

            def _drip(self) -> Iterator[bytes]:
                yield b'{"choices": ['
                while not server._closing.wait(server.drip_seconds):
                    yield b" "

            def _huge(self) -> Iterator[bytes]:
                yield b'{"padding": "'
                block = b"x" * 65536
                for _ in range(server.huge_bytes // len(block)):
                    yield block
                yield b'"}'

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {}
                with server._lock:
                    server.requests.append(
                        {"method": method, "path": self.path, "headers": dict(self.headers.items())}
                    )
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    mode = server.mode
                    if mode == "drip":
                        return self._stream(self._drip())
                    if mode == "huge":
                        return self._stream(self._huge())
                    if mode == "garbage":
                        self.close_connection = True
                        self.wfile.write(b"SSH-2.0-OpenSSH_9.6\r\n")
                        return None
                    if mode == "refuse" and method == "POST":
                        return self._send(400, b'{"error": {"message": "no"}}')
                    if mode == "redirect":
                        return self._send(302, b"{}", {"Location": server.redirect_to})
                    if mode == "leak":
                        status = 500 if "chat" in self.path else 400
                        error = {"error": {"message": f"stack trace: {LEAK}"}}
                        return self._send(status, json.dumps(error).encode())
                    status, answer = server.forged(self.path.split("?")[0], body)
                    return self._send(status, json.dumps(answer).encode())  # NaN as NaN
                finally:
                    with server._lock:
                        server.active -= 1

            def do_POST(self) -> None:
                self._handle("POST")

            def do_GET(self) -> None:
                self._handle("GET")

        return Handler


@pytest.fixture
def adversary() -> Iterator[Any]:
    """A factory of :class:`AdversarialServer` s, each closed after the test."""
    started: list[AdversarialServer] = []

    def start(mode: str = "forge", **kw: Any) -> AdversarialServer:
        started.append(AdversarialServer(mode, **kw))
        return started[-1]

    try:
        yield start
    finally:
        for server in started:
            server.close()


def wait_for(predicate: Any, timeout: float) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds pass (short: these servers
    answer at once, and every bound under test is a few seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())
