"""Resumable uploads through the API (studies/services/uploads.py): a file sent in chunks
at the offset the server holds, refused when a chunk starts elsewhere or passes the
declared size, resumed after a dropped connection, completed into one import job however
often (or however concurrently) it is completed, its owner's alone, and swept once it
expires."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from studies.models import ImportJob, UploadSession
from studies.services import queue, uploads
from studies.services.recovery import sweep_stale_work
from studies.services.tokens import token_for
from tests.conftest import record

pytestmark = pytest.mark.django_db
OCTET = "application/offset+octet-stream"
DATA = "".join(
    json.dumps(record(f"d{i}", f"s{i % 3}", output=f"Output {i} " + "word " * 40)) + "\n"
    for i in range(60)
).encode()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """Tasks sent through studies.services.queue (on commit)."""
    messages: list[tuple[object, ...]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args: messages.append((name, *args)))
    return messages


def api(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user).key}")
    return client


def start(client: APIClient, data: bytes = DATA, **fields: Any) -> dict[str, Any]:
    body = {"file_name": "big.jsonl", "size": len(data), "dataset": "big", **fields}
    response = client.post("/api/uploads/", body, format="json")
    assert response.status_code == 201, response.content
    assert response["Location"] == f"/api/uploads/{response.json()['id']}/"
    return dict(response.json())


def patch(client: APIClient, session: dict[str, Any], offset: int, chunk: bytes) -> Any:
    return client.generic(
        "PATCH",
        f"/api/uploads/{session['id']}/",
        chunk,
        content_type=OCTET,
        HTTP_UPLOAD_OFFSET=str(offset),
    )


def send_all(client: APIClient, session: dict[str, Any], data: bytes, size: int) -> None:
    offset = 0
    while offset < len(data):
        response = patch(client, session, offset, data[offset : offset + size])
        assert response.status_code == 204, response.content
        assert int(response["Upload-Offset"]) == min(len(data), offset + size)
        offset = int(response["Upload-Offset"])


def stored(session: dict[str, Any]) -> Path:
    return uploads.file_path(UploadSession.objects.get(pk=session["id"]))


def test_a_file_sent_in_chunks_is_completed_into_one_import_job_and_imported(
    cast, sent, django_capture_on_commit_callbacks
):
    owner = api(cast["owner"])
    session = start(owner, create_aspects=True)
    assert session["offset"] == 0 and session["status"] == "receiving"
    assert session["chunk_max"] == 5 * 1024 * 1024 and stored(session).stat().st_size == 0
    send_all(owner, session, DATA, 1000)
    head = owner.head(f"/api/uploads/{session['id']}/")
    assert head.status_code == 200 and head["Upload-Offset"] == str(len(DATA))
    assert head["Upload-Length"] == str(len(DATA)) and head["Cache-Control"] == "no-store"
    assert owner.get(f"/api/uploads/{session['id']}/").json()["status"] == "received"
    with django_capture_on_commit_callbacks(execute=True):
        first = owner.post(f"/api/uploads/{session['id']}/complete/")
    assert first.status_code == 201, first.content
    job = ImportJob.objects.get()
    assert first.json()["id"] == job.pk and job.status == "pending" and job.create_aspects
    assert Path(job.upload.path).read_bytes() == DATA  # the received file itself
    assert (job.original_name, job.dataset_name, job.created_by) == (
        "big.jsonl",
        "big",
        cast["owner"],
    )
    with django_capture_on_commit_callbacks(execute=True):
        again = owner.post(f"/api/uploads/{session['id']}/complete/")
    assert again.status_code == 200 and again.json()["id"] == job.pk
    assert ImportJob.objects.count() == 1 and sent == [(queue.IMPORT_UPLOAD, job.pk)]
    assert owner.get(f"/api/uploads/{session['id']}/").json()["job"] == job.pk
    # no more bytes, and its file is the import's now
    assert patch(owner, session, len(DATA), b"x").status_code == 409
    assert owner.delete(f"/api/uploads/{session['id']}/").status_code == 409


def test_a_chunk_at_another_offset_is_refused_with_the_offset_to_resume_from(cast):
    owner = api(cast["owner"])
    session = start(owner)
    assert patch(owner, session, 0, DATA[:100]).status_code == 204
    for wrong in (0, 50, 200):
        response = patch(owner, session, wrong, DATA[wrong : wrong + 100])
        assert response.status_code == 409, wrong
        assert response.json()["offset"] == 100 and response["Upload-Offset"] == "100"
        assert "Upload-Offset: 100" in response.json()["detail"]
    assert stored(session).read_bytes() == DATA[:100]


def test_a_declared_size_above_the_import_limit_is_refused_before_any_byte(cast, settings):
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_FILE_BYTES": 4096}
    response = api(cast["owner"]).post(
        "/api/uploads/", {"file_name": "big.jsonl", "size": 4097, "dataset": "big"}, format="json"
    )
    assert response.status_code == 413
    assert "import limit of 4,096 bytes" in response.json()["errors"]["size"][0]
    assert not UploadSession.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"file_name": "notes.txt"}, "file_name", "use a .jsonl or .csv file"),
        ({"size": 0}, "size", "greater than or equal to 1"),
        ({"dataset": "no spaces"}, "dataset", "slug"),
        ({"sha256": "abc"}, "sha256", "does not match the required pattern"),
        ({"rescale": "coherence=5:1"}, "rescale", "coherence"),
        ({"size": "12"}, "size", "whole number"),
    ],
)
def test_bad_start_fields_are_refused_naming_the_field(cast, fields, field, message):
    body = {"file_name": "a.jsonl", "size": 10, "dataset": "a", **fields}
    response = api(cast["owner"]).post("/api/uploads/", body, format="json")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()["errors"][field]), response.json()
    assert not UploadSession.objects.exists()


def test_a_chunk_passing_the_declared_size_is_refused_and_nothing_of_it_kept(cast):
    owner = api(cast["owner"])
    session = start(owner, data=DATA[:300])
    assert patch(owner, session, 0, DATA[:200]).status_code == 204
    response = patch(owner, session, 200, DATA[200:301])
    assert response.status_code == 413 and "passes the declared size of 300" in str(response.json())
    assert stored(session).read_bytes() == DATA[:200]
    assert owner.get(f"/api/uploads/{session['id']}/").json()["offset"] == 200


def test_a_chunk_above_the_request_limit_is_refused_before_it_is_read(cast, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    owner = api(cast["owner"])
    session = start(owner)
    assert session["chunk_max"] == 1024
    assert patch(owner, session, 0, DATA[:1025]).status_code == 413
    assert patch(owner, session, 0, DATA[:1024]).status_code == 204
    assert stored(session).read_bytes() == DATA[:1024]


def test_only_the_owner_reaches_a_session(cast):
    owner = api(cast["owner"])
    session = start(owner)
    url = f"/api/uploads/{session['id']}/"
    for who in ("outsider", "admin"):
        other = api(cast[who])
        assert other.get(url).status_code == 404, who
        assert patch(other, session, 0, DATA[:10]).status_code == 404, who
        assert other.post(url + "complete/").status_code == 404, who
        assert other.delete(url).status_code == 404, who
        assert other.get("/api/uploads/").json()["results"] == [], who
    assert api(cast["annotator"]).get(url).status_code == 403
    assert APIClient().get(url).status_code == 401
    assert stored(session).read_bytes() == b""
    assert [s["id"] for s in owner.get("/api/uploads/").json()["results"]] == [session["id"]]


def test_completing_before_every_byte_arrived_says_how_many_did(cast):
    owner = api(cast["owner"])
    session = start(owner)
    patch(owner, session, 0, DATA[:500])
    response = owner.post(f"/api/uploads/{session['id']}/complete/")
    assert response.status_code == 409 and response.json()["offset"] == 500
    assert not ImportJob.objects.exists()


def test_a_declared_sha256_is_checked_on_completion(cast):
    owner = api(cast["owner"])
    wrong = start(owner, sha256="0" * 64)
    send_all(owner, wrong, DATA, 4096)
    response = owner.post(f"/api/uploads/{wrong['id']}/complete/")
    assert response.status_code == 400 and "SHA-256" in response.json()["detail"]
    right = start(owner, sha256=hashlib.sha256(DATA).hexdigest().upper())
    send_all(owner, right, DATA, 4096)
    assert owner.post(f"/api/uploads/{right['id']}/complete/").status_code == 201
    assert ImportJob.objects.count() == 1


def test_a_body_cut_off_keeps_what_arrived_and_the_next_chunk_resumes_there(cast):
    owner = api(cast["owner"])
    session = start(owner)
    row = UploadSession.objects.get(pk=session["id"])
    pieces = [DATA[:700]]

    def dropped(size: int) -> bytes:  # 700 bytes, then the connection breaks
        if pieces:
            return pieces.pop()
        raise OSError("connection reset by peer")

    assert uploads.append_chunk(row, 0, dropped, announced=4000) == 700
    assert owner.get(f"/api/uploads/{session['id']}/")["Upload-Offset"] == "700"
    send_rest = patch(owner, session, 700, DATA[700:])
    assert send_rest.status_code == 204 and stored(session).read_bytes() == DATA


def test_bytes_beyond_the_recorded_offset_are_cut_off_by_the_next_chunk(cast):
    """A process killed after writing part of a chunk, before recording it."""
    owner = api(cast["owner"])
    session = start(owner)
    patch(owner, session, 0, DATA[:100])
    with stored(session).open("ab") as handle:
        handle.write(b"garbage that was never counted")
    assert patch(owner, session, 100, DATA[100:]).status_code == 204
    assert stored(session).read_bytes() == DATA


def test_a_session_being_written_answers_another_writer_423(cast):
    owner = api(cast["owner"])
    session = start(owner)
    with stored(session).open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another request is writing it
        response = patch(owner, session, 0, DATA[:100])
        assert response.status_code == 423 and response["Retry-After"] == "1"
        assert owner.delete(f"/api/uploads/{session['id']}/").status_code == 423
    assert patch(owner, session, 0, DATA[:100]).status_code == 204


def test_a_full_disk_keeps_nothing_of_the_chunk(cast, monkeypatch):
    owner = api(cast["owner"])
    session = start(owner)
    patch(owner, session, 0, DATA[:100])
    real = uploads._write

    def full(fd: int, data: bytes) -> None:
        real(fd, data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(uploads, "_write", full)
    response = patch(owner, session, 100, DATA[100:400])
    assert response.status_code == 507 and "No space left on device (ENOSPC)" in str(
        response.json()
    )
    assert "resumes at byte 100" in response.json()["detail"]
    assert stored(session).read_bytes() == DATA[:100]
    monkeypatch.setattr(uploads, "_write", real)
    assert patch(owner, session, 100, DATA[100:400]).status_code == 204


def test_a_chunk_needs_its_type_and_offset(cast):
    owner = api(cast["owner"])
    session = start(owner)
    url = f"/api/uploads/{session['id']}/"
    wrong_type = owner.generic("PATCH", url, b"abc", content_type="application/json")
    assert wrong_type.status_code == 415
    no_offset = owner.generic("PATCH", url, b"abc", content_type=OCTET)
    assert no_offset.status_code == 400 and "Upload-Offset" in no_offset.json()["errors"]
    assert stored(session).read_bytes() == b""


def test_a_cancelled_upload_leaves_nothing(cast):
    owner = api(cast["owner"])
    session = start(owner)
    patch(owner, session, 0, DATA[:100])
    path = stored(session)
    assert owner.delete(f"/api/uploads/{session['id']}/").status_code == 204
    assert not path.exists() and not UploadSession.objects.exists()
    assert owner.get(f"/api/uploads/{session['id']}/").status_code == 404


def test_an_expired_session_is_gone_and_swept_with_its_file(cast, settings):
    owner = api(cast["owner"])
    lapsed, done = start(owner), start(owner, data=DATA[:100])
    patch(owner, lapsed, 0, DATA[:100])
    send_all(owner, done, DATA[:100], 100)
    job = owner.post(f"/api/uploads/{done['id']}/complete/").json()["id"]
    later = timezone.now() + timedelta(seconds=settings.CONCORDIA["UPLOAD_SESSION_SECONDS"] + 1)
    UploadSession.objects.update(expires_at=later - timedelta(seconds=2))
    kept, gone = stored(done), stored(lapsed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timezone, "now", lambda: later)
        assert owner.get(f"/api/uploads/{lapsed['id']}/").status_code == 410
        assert patch(owner, lapsed, 100, DATA[100:200]).status_code == 410
        assert owner.post(f"/api/uploads/{lapsed['id']}/complete/").status_code == 410
        assert sweep_stale_work(later)["expired_uploads"] == 2
    assert not UploadSession.objects.exists() and not gone.exists()
    assert kept.read_bytes() == DATA[:100] and ImportJob.objects.get().pk == job


def test_the_sweeper_removes_old_files_nothing_names(cast, settings):
    owner = api(cast["owner"])
    session = start(owner)
    orphan = stored(session).with_name("orphan.jsonl")
    orphan.write_bytes(b"left by a deleted session")
    old = (timezone.now() - timedelta(days=2)).timestamp()
    for path in (orphan, stored(session)):
        os.utime(path, (old, old))
    uploads.remove_expired()
    assert not orphan.exists() and stored(session).exists()  # a live session's file stays


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
def test_two_completes_at_once_create_one_job(cast, sent, monkeypatch):
    owner = api(cast["owner"])
    session = start(owner)
    send_all(owner, session, DATA, 5000)
    # both requests have read the session (no job yet) before either creates the job
    both_read = threading.Barrier(2, timeout=30)
    alive = uploads.check_alive
    monkeypatch.setattr(uploads, "check_alive", lambda s: (alive(s), both_read.wait()))
    answers: list[Any] = []

    def complete() -> None:
        try:
            answers.append(api(cast["owner"]).post(f"/api/uploads/{session['id']}/complete/"))
        finally:
            connection.close()

    threads = [threading.Thread(target=complete) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(a.status_code for a in answers) == [200, 201], [a.content for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1
    assert ImportJob.objects.count() == 1 and len(sent) == 1
