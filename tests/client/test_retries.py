"""The client's HTTP layer on a scripted transport (no server): 429 and 503 are retried
as Retry-After says, a bounded number of times; errors carry the server's message; the
client refuses to send what its operations table does not list."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from concordia_client import (
    BadRequest,
    Client,
    Conflict,
    NotFound,
    RateLimited,
    ServerError,
    Timeout,
    TransportError,
)
from concordia_client import _http as http_layer
from concordia_client import operations as ops

DATASET = {
    "id": 3,
    "name": "d",
    "task": "summarization",
    "description": "",
    "owner": "owner",
    "data_version": 1,
    "created_at": "2026-01-02T03:04:05.678901Z",
    "n_documents": 2,
}
Answer = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's pauses, recorded instead of slept."""
    pauses: list[float] = []
    monkeypatch.setattr(http_layer.time, "sleep", pauses.append)
    return pauses


def scripted(*answers: httpx.Response) -> tuple[Client, list[httpx.Request]]:
    """A client whose requests get these answers in turn (the last one repeats)."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        request.read()
        return answers[min(len(seen), len(answers)) - 1]

    client = Client("http://concordia.test", "t0k3n", transport=httpx.MockTransport(answer))
    return client, seen


def error(status: int, detail: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"detail": detail, "errors": {}}, headers=headers)


def test_a_503_is_retried_after_the_seconds_retry_after_says(slept):
    client, seen = scripted(
        error(503, "Busy.", {"Retry-After": "2"}), httpx.Response(200, json=DATASET)
    )
    dataset = client.dataset(3)
    assert dataset.id == 3 and dataset.created_at == datetime(
        2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC
    )
    assert slept == [2.0] and len(seen) == 2
    assert seen[0].headers["Authorization"] == "Token t0k3n"
    assert seen[0].headers["User-Agent"].startswith("concordia-client/")


def test_a_429_with_an_http_date_waits_until_that_date(slept):
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=30), True)
    client, _ = scripted(
        error(429, "Slow down.", {"Retry-After": when}), httpx.Response(200, json=DATASET)
    )
    client.dataset(3)
    assert len(slept) == 1 and 27 < slept[0] <= 30


def test_retries_are_bounded_and_the_last_429_is_raised_with_its_retry_after(slept):
    client, seen = scripted(error(429, "Too many failed authentications.", {"Retry-After": "1"}))
    with pytest.raises(RateLimited) as raised:
        client.datasets()
    assert len(seen) == 4 and slept == [1.0, 1.0, 1.0]  # max_retries=3
    assert raised.value.status == 429 and raised.value.retry_after == 1.0
    assert raised.value.detail == "Too many failed authentications."


def test_a_retry_after_longer_than_the_client_waits_is_not_waited_for(slept):
    client, seen = scripted(error(503, "Maintenance.", {"Retry-After": "3600"}))
    with pytest.raises(ServerError, match="503 Maintenance."):
        client.dataset(3)
    assert slept == [] and len(seen) == 1


def test_without_retry_after_the_client_backs_off_exponentially(slept):
    client, _ = scripted(
        error(503, "Busy."), error(503, "Busy."), httpx.Response(200, json=DATASET)
    )
    client.dataset(3)
    assert slept == [0.5, 1.0]


def test_an_upload_retried_sends_the_whole_file_again(slept, tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"doc_id": "d1"}\n')
    job = {
        "id": 9,
        "status": "succeeded",
        "original_name": "x.jsonl",
        "file_format": "jsonl",
        "dataset_name": "x",
        "dataset": 4,
        "task": "summarization",
        "create_aspects": False,
        "summary": {"outputs": 1},
        "errors": [],
        "created_at": "2026-01-02T03:04:05Z",
        "finished_at": "2026-01-02T03:04:06Z",
    }
    client, seen = scripted(
        error(429, "Later.", {"Retry-After": "0"}), httpx.Response(201, json=job)
    )
    assert client.upload(path, dataset="x").dataset == 4
    assert [r.content.count(b'{"doc_id": "d1"}') for r in seen] == [1, 1]
    assert seen[1].url.params["wait"] == "300.0" and slept == [0.0]


def test_a_refused_connection_is_retried_for_a_read_and_raised_for_a_write(slept):
    calls = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        raise httpx.ConnectError("refused", request=request)

    client = Client("http://concordia.test", "t", transport=httpx.MockTransport(refuse))
    with pytest.raises(TransportError, match="refused"):
        client.run(1)
    assert calls == ["GET"] * 4 and slept == [0.5, 1.0, 2.0]
    with pytest.raises(TransportError):
        client.cancel_run(1)
    assert calls[4:] == ["POST"]


@pytest.mark.parametrize(
    ("status", "cls"), [(400, BadRequest), (404, NotFound), (409, Conflict), (500, ServerError)]
)
def test_an_error_answer_is_its_exception_with_the_servers_message_and_fields(slept, status, cls):
    body = {"detail": "Invalid input: no.", "errors": {"metric": ["no.", "really."]}}
    client, _ = scripted(httpx.Response(status, json=body))
    with pytest.raises(cls) as raised:
        client.start_run(3, "nope")
    assert raised.value.status == status and raised.value.detail == "Invalid input: no."
    assert raised.value.errors == {"metric": ["no.", "really."]}
    assert "really." in str(raised.value) and "POST http://concordia.test/api/runs/" in str(
        raised.value
    )


def test_the_client_refuses_to_send_what_its_table_does_not_list():
    client, seen = scripted(httpx.Response(200, json=DATASET))
    with pytest.raises(ValueError, match="no query parameter"):
        client._http.send(ops.DATASET, {"id": 1}, query={"include": "all"})
    with pytest.raises(ValueError, match="no field"):
        client._http.send(ops.START_RUNS, json={"dataset": 1, "temperature": 0})
    assert seen == []


def test_start_run_sends_only_the_options_given_and_resolves_aspect_codes(slept):
    answers = iter(
        [
            httpx.Response(200, json={"count": 1, "next": None, "results": [aspect(7, "COH")]}),
            httpx.Response(201, json=[]),
        ]
    )
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return next(answers)

    client = Client("http://x.test", "t", transport=httpx.MockTransport(answer))
    assert client.start_run(3, "gptscore", aspects=["COH", 8], model="default", limit_docs=2) == []
    assert sent[0].url.params["code"] == "COH"
    assert json.loads(sent[1].content) == {
        "dataset": 3,
        "metric": "gptscore",
        "aspects": [7, 8],
        "model": "default",
        "limit_docs": 2,
    }


def aspect(pk: int, code: str) -> dict[str, object]:
    return {"id": pk, "code": code, "name": code, "key": code.lower(), "version": 1}


def test_a_request_that_takes_too_long_is_a_timeout():
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    client = Client("http://x.test", "t", transport=httpx.MockTransport(slow))
    started = time.monotonic()
    with pytest.raises(Timeout) as raised:
        client.run(1)
    assert isinstance(raised.value, TimeoutError) and time.monotonic() - started < 1
