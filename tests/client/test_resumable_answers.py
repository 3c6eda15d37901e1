"""The client's resumable upload on a scripted transport (no server): each answer a chunk
can get leads where it should. A 409 moves it to the server's offset, a dropped
connection is retried from the offset the server then reports, a refusal (the session
gone) is raised as such, and a full disk or retries run out raise UploadInterrupted with
what is needed to resume."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from concordia_client import Client, NotFound, UploadInterrupted
from concordia_client import _uploads as uploads_layer

SESSION = {
    "id": "5f0c7a52-1111-4222-8333-944455556666",
    "file_name": "f.jsonl",
    "file_format": "jsonl",
    "size": 10,
    "offset": 0,
    "sha256": "",
    "dataset": "d",
    "task": "summarization",
    "create_aspects": False,
    "status": "receiving",
    "job": None,
    "chunk_max": 4,
    "created_at": "2026-01-02T03:04:05Z",
    "expires_at": "2026-01-03T03:04:05Z",
}


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    pauses: list[float] = []
    monkeypatch.setattr(uploads_layer.time, "sleep", pauses.append)
    return pauses


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"0123456789")
    return path


class Server:
    """Answers GET with the session at ``offset`` and PATCH with ``patches`` in turn."""

    def __init__(self, *patches: Callable[[httpx.Request], httpx.Response]) -> None:
        self.patches = list(patches)
        self.offset = 0
        self.sent: list[tuple[int, bytes]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        if request.method == "GET":
            return httpx.Response(200, json={**SESSION, "offset": self.offset})
        if request.method == "PATCH":
            return self.patches.pop(0)(request)
        raise AssertionError(request)

    def take(self, request: httpx.Request, keep: int | None = None) -> httpx.Response:
        start = int(request.headers["Upload-Offset"])
        body = request.content[:keep]
        self.sent.append((start, body))
        self.offset = start + len(body)
        return httpx.Response(204, headers={"Upload-Offset": str(self.offset)})


def client(server: Server) -> Client:
    return Client("http://concordia.test", "t0k3n", transport=httpx.MockTransport(server))


def test_a_409_moves_the_client_to_the_servers_offset(source, slept):
    server = Server()
    server.patches = [
        lambda r: httpx.Response(409, json={"detail": "elsewhere", "errors": {}, "offset": 4}),
        server.take,
        server.take,
    ]
    server.offset = 4
    client(server)._send_chunks(
        uploads_layer.build(uploads_layer.UploadSession, SESSION), source, None, 3, None
    )
    assert server.sent == [(4, b"4567"), (8, b"89")] and slept == []


def test_a_dropped_chunk_is_retried_from_the_offset_the_server_kept(source, slept):
    server = Server()

    def dropped(request: httpx.Request) -> httpx.Response:
        server.take(request, keep=1)  # one byte arrived before the connection broke
        raise httpx.RemoteProtocolError("peer closed connection")

    server.patches = [server.take, dropped, server.take, server.take]
    seen: list[int] = []
    client(server)._send_chunks(
        uploads_layer.build(uploads_layer.UploadSession, SESSION),
        source,
        None,
        3,
        lambda received, total: seen.append(received),
    )
    assert server.sent == [(0, b"0123"), (4, b"4"), (5, b"5678"), (9, b"9")]
    assert seen == [4, 5, 9, 10] and slept == [0.5]


@pytest.mark.parametrize(
    ("answer", "raised"),
    [
        (httpx.Response(404, json={"detail": "No such upload.", "errors": {}}), NotFound),
        (httpx.Response(507, json={"detail": "No space left.", "errors": {}}), UploadInterrupted),
        (httpx.Response(502, text="bad gateway"), UploadInterrupted),
    ],
)
def test_a_refusal_is_raised_and_a_lasting_failure_says_how_to_resume(
    source, slept, answer, raised
):
    server = Server(*([lambda r: answer] * 4))
    with pytest.raises(raised) as caught:
        client(server)._send_chunks(
            uploads_layer.build(uploads_layer.UploadSession, SESSION), source, None, 2, None
        )
    if raised is UploadInterrupted:
        assert caught.value.session == SESSION["id"] and caught.value.offset == 0
        assert f"resume_upload({SESSION['id']!r}, path)" in str(caught.value)
        assert slept == ([] if answer.status_code == 507 else [0.5, 1.0])
