"""A resumable upload through the client against a live server and a real worker, with a
proxy between them that drops the connection: in the middle of a chunk at half the file
(the client retries from the offset the server kept, a chunk cut in part included), then
for good at three quarters (the client gives up saying how to resume, and
``resume_upload`` finishes it once the network is back). The file is imported exactly
once, byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from concordia_client import Client, UploadInterrupted

from studies.models import Dataset, ImportJob, Output, UploadSession
from studies.services.tokens import token_for
from studies.services.uploads import file_path
from tests.conftest import record
from tests.dropproxy import DropProxy

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]
CHUNK = 128 * 1024
N_RECORDS = 400


@pytest.fixture
def proxy(live_server: Any) -> Iterator[DropProxy]:
    address = urlsplit(live_server.url)
    dropping = DropProxy((str(address.hostname), int(address.port or 80)))
    yield dropping
    dropping.close()


def test_an_upload_cut_mid_chunk_then_for_good_resumes_and_imports_once(
    proxy, cast, settings, celery_worker_process, tmp_path
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = CHUNK
    path = tmp_path / "large.jsonl"
    lines = [
        json.dumps(record(f"d{i // 4}", f"s{i % 4}", output=f"Output {i}: " + "word " * 900))
        for i in range(N_RECORDS)
    ]
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    seen: list[int] = []

    def progress(received: int, size: int) -> None:
        seen.append(received)
        if received >= 0.75 * size and not proxy.down and proxy.cuts == 1:
            proxy.go_down()  # the network goes away for longer than the retries last

    token = token_for(cast["owner"]).key
    # max_retries=0: the client's own GET retries would only lengthen the outage
    with Client(proxy.url, token, poll_interval=0.1, timeout=30, max_retries=0) as api:
        proxy.cut_after(len(data) // 2)
        with pytest.raises(UploadInterrupted) as stopped:
            api.upload(path, dataset="resumed", resumable=True, max_retries=2, progress=progress)
    assert proxy.cuts == 1
    # the cut chunk kept what arrived: the client went on from an offset between chunks
    assert any(offset % CHUNK for offset in seen), seen
    session = UploadSession.objects.get()
    assert stopped.value.session == str(session.pk) and stopped.value.offset == session.offset
    assert 0.75 * len(data) <= session.offset < len(data) and session.job is None

    proxy.go_up()
    with Client(proxy.url, token, poll_interval=0.1, timeout=30) as api:
        job = api.resume_upload(stopped.value.session, path, timeout=120)
        assert job.status == "succeeded" and job.summary["outputs"]["created"] == N_RECORDS
        again = api.resume_upload(stopped.value.session, path, wait=False)
        assert again.id == job.id  # completed once: resuming again answers the same job
    session.refresh_from_db()
    assert session.job_id == job.id and file_path(session).read_bytes() == data
    assert ImportJob.objects.count() == 1
    dataset = Dataset.objects.get(name="resumed", owner=cast["owner"])
    assert Output.objects.filter(document__dataset=dataset).count() == N_RECORDS


def test_resuming_with_another_file_is_refused_before_a_byte_is_sent(
    live_server, cast, tmp_path: Path
):
    with Client(live_server.url, token_for(cast["owner"]).key) as api:
        first = tmp_path / "a.jsonl"
        first.write_text(json.dumps(record()) + "\n")
        session = api.start_upload(first, dataset="a")
        assert session.offset == 0 and len(session.sha256) == 64
        other = tmp_path / "b.jsonl"
        other.write_text(json.dumps(record("d2")) + "\n\n")
        with pytest.raises(ValueError, match="bytes, but upload"):
            api.resume_upload(session, other)
        api.cancel_upload(session)
    assert not UploadSession.objects.exists()
