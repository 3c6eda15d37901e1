"""The upload size limit holds while the body arrives: a Content-Length over it is refused
before the body is read, a streamed (chunked) body or a file is cut off as soon as it
passes it, and the page and the API answer 413 with one message. Checked with Django's
test client and against a real gunicorn server."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import encode_multipart
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.parsers import MultiPartParser
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from studies.forms import body_too_large, upload_too_large
from studies.models import Dataset, ImportJob, TaskKind
from studies.services.tokens import token_for
from studies.views.uploads import FORM_ALLOWANCE, UPLOAD_ROUTES

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4096
LINE = b'{"doc_id": "d1", "system_id": "s1", "source": "S", "output": "O"}\n'


@pytest.fixture(autouse=True)
def small_limit(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_FILE_BYTES": LIMIT}
    settings.MEDIA_ROOT = tmp_path / "media"


def jsonl_of(size: int) -> bytes:
    """A valid JSONL file of exactly ``size`` bytes (the last line padded)."""
    lines = LINE * (size // len(LINE) - 1)
    pad = size - len(lines) - len(LINE)
    return lines + LINE.replace(b'"O"', b'"O' + b"x" * pad + b'"')


def page_post(client, size: int):  # type: ignore[no-untyped-def]
    upload = SimpleUploadedFile("big.jsonl", jsonl_of(size))
    return client.post(
        reverse("studies:upload"), {"dataset": "big", "task": "summarization", "file": upload}
    )


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user).key}")
    return client


def nothing_stored(tmp_path: Path) -> bool:
    media = tmp_path / "media"
    return ImportJob.objects.count() == 0 and not any(p.is_file() for p in media.rglob("*"))


def test_the_page_refuses_a_body_over_the_limit_with_its_form_and_413(client, cast, tmp_path):
    client.force_login(cast["owner"])
    response = page_post(client, LIMIT + FORM_ALLOWANCE + 1)
    assert response.status_code == 413
    assert response.templates[0].name == "studies/upload.html"
    page = response.content.decode()
    assert (
        "The file is larger than the import limit of 4,096 bytes (4 KiB, IMPORT_MAX_FILE_BYTES)"
        in page
    )
    assert '<p class="error">' in page and 'name="dataset"' in page
    assert nothing_stored(tmp_path)


def test_a_file_one_byte_past_the_limit_is_cut_off_while_streaming(client, cast, tmp_path):
    """Within the body's allowance for the form's other fields, so the Content-Length
    passes; the multipart parser is stopped when the file passes the limit."""
    client.force_login(cast["owner"])
    response = page_post(client, LIMIT + 1)
    assert response.status_code == 413 and upload_too_large(LIMIT) in response.content.decode()
    assert response.context["form"]["dataset"].value() == "big"  # the fields before the file
    assert nothing_stored(tmp_path)
    accepted = page_post(client, LIMIT)
    assert accepted.status_code == 302 and ImportJob.objects.count() == 1


@pytest.mark.parametrize("route", ["imports", "dataset-upload"])
def test_the_api_answers_413_in_its_error_shape(cast, tmp_path, route):
    dataset = Dataset.objects.create(
        name="into", owner=cast["owner"], task=TaskKind.objects.get(code="summarization")
    )
    url = "/api/imports/" if route == "imports" else f"/api/datasets/{dataset.pk}/upload/"
    for size in (LIMIT + 1, LIMIT + FORM_ALLOWANCE + 1):
        upload = SimpleUploadedFile("big.jsonl", jsonl_of(size))
        response = api(cast["owner"]).post(
            url, {"file": upload, "dataset": "big", "task": "summarization"}, format="multipart"
        )
        assert response.status_code == 413, response.content
        message = upload_too_large(LIMIT)
        assert response.json() == {"detail": message, "errors": {"file": [message]}}
    assert nothing_stored(tmp_path)


def test_an_oversized_upload_from_anyone_else_gets_a_plain_413(client, cast):
    """Refused on its Content-Length before anything else; a body within it is never read
    where the usual answer needs no body (a non-researcher's 403)."""
    response = page_post(client, LIMIT + FORM_ALLOWANCE + 1)
    assert response.status_code == 413 and response["Content-Type"].startswith("text/plain")
    client.force_login(cast["annotator"])
    assert page_post(client, LIMIT + FORM_ALLOWANCE + 1).status_code == 413
    assert page_post(client, LIMIT + 1).status_code == 403


class Trickle(io.RawIOBase):
    """A request body that counts what the server read of it."""

    def __init__(self, data: bytes) -> None:
        self.data, self.read_bytes = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        chunk = self.data[self.read_bytes : self.read_bytes + min(len(buffer), 8192)]
        buffer[: len(chunk)] = chunk
        self.read_bytes += len(chunk)
        return len(chunk)


def chunked_post(client, size: int) -> tuple[object, Trickle]:  # type: ignore[no-untyped-def]
    """An upload without Content-Length, as gunicorn hands a chunked body to the app."""
    boundary = "BoUnDaRy"
    body = encode_multipart(
        boundary,
        {
            "dataset": "streamed",
            "task": "summarization",
            "file": SimpleUploadedFile("s.jsonl", jsonl_of(size)),
        },
    )
    stream = Trickle(body)
    response = client.generic(
        "POST",
        reverse("studies:upload"),
        b"",
        f"multipart/form-data; boundary={boundary}",
        CONTENT_LENGTH="",
        CONTENT_TYPE=f"multipart/form-data; boundary={boundary}",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": stream, "wsgi.input_terminated": True},
    )
    return response, stream


def test_a_chunked_body_is_read_only_up_to_the_limit(client, cast, tmp_path):
    client.force_login(cast["owner"])
    response, stream = chunked_post(client, 10 * (LIMIT + FORM_ALLOWANCE))
    assert response.status_code == 413  # type: ignore[attr-defined]
    assert stream.read_bytes <= LIMIT + FORM_ALLOWANCE + 64 * 1024 < len(stream.data) / 4
    assert nothing_stored(tmp_path)
    response, stream = chunked_post(client, LIMIT)
    assert response.status_code == 302  # type: ignore[attr-defined]
    assert ImportJob.objects.get().dataset_name == "streamed"


NO_FILES = {"api:token"}  # DRF's token view takes its credentials as form fields too


def test_every_route_taking_files_is_limited():
    """DRF routes whose POST declares the multipart parser, and page forms that send
    files, are the limit's routes."""
    found = set()

    def walk(patterns: list[object], namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, ":".join(n for n in (namespace, p.namespace) if n))
            elif isinstance(p, URLPattern):
                view = p.callback
                cls = getattr(view, "cls", None)
                action = (getattr(view, "actions", None) or {}).get("post")
                if cls is None or (action is None and "post" not in dir(cls)):
                    continue
                handler = getattr(cls, action or "post")
                parsers = getattr(handler, "kwargs", {}).get("parser_classes", cls.parser_classes)
                if MultiPartParser in parsers and parsers != api_settings.DEFAULT_PARSER_CLASSES:
                    found.add(f"{namespace}:{p.name}")

    walk(get_resolver().url_patterns, "")
    forms = sorted(
        p.name
        for p in (ROOT / "templates").rglob("*.html")
        if "multipart/form-data" in p.read_text(encoding="utf-8")
    )
    assert forms == ["run_batch.html", "upload.html"]  # the import page, a run's results file
    pages = {"studies:upload", "studies:run-batch-results"}
    assert (found - NO_FILES) | pages == UPLOAD_ROUTES


# --- a real server ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_data(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """The data folder of the server below (its uploads' temporary folder: media/upload-tmp)."""
    return Path(tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="module")
def server(server_data) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """gunicorn with one sync worker on a free port (the socket is bound here and handed
    over), a 1 MiB import limit, the default 5 MiB limit on other bodies and a 60 s worker
    timeout; shared by the tests below, so each also shows that the worker is free for
    the next."""
    data = server_data
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    env = {
        **os.environ,
        "CONCORDIA_DATA_DIR": str(data),
        "IMPORT_MAX_FILE_BYTES": str(2**20),
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{data}/db.sqlite3",
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    proc = subprocess.Popen(
        [
            str(gunicorn),
            "evalsite.wsgi:application",
            "--bind",
            f"fd://{listener.fileno()}",
            "--workers",
            "1",
            "--timeout",
            "60",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        pass_fds=[listener.fileno()],
    )
    listener.close()
    try:
        deadline = time.monotonic() + 180  # a loaded machine imports slowly
        while status_of(port, "GET /login/") != 200:
            assert proc.poll() is None and time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.5)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def status_of(port: int, line: str) -> int | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(
                f"{line} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
            )
            return int(sock.recv(64).split()[1])
    except (OSError, IndexError, ValueError):
        return None


def send_until_answered(port: int, head: bytes, body: Iterator[bytes]) -> tuple[bytes, int, float]:
    """Send ``head``, then ``body`` for as long as the server does not answer: (the
    answer, body bytes sent, seconds until the answer began). It never sends more once an
    answer is readable, so the server is not made to read what it refused."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    started = time.monotonic()
    sock.sendall(head)
    sent, pending, answer = 0, b"", b""
    while True:
        readable, writable, _ = select.select([sock], [sock], [], 30)
        if readable:
            break
        assert writable, "the server neither read nor answered for 30 s"
        pending = pending or next(body, b"")
        if not pending:
            readable, _, _ = select.select([sock], [], [], 30)
            break
        try:
            n = sock.send(pending)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent, pending = sent + n, pending[n:]
    seconds = time.monotonic() - started
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass  # it closed with our unread bytes: the answer came first
    sock.close()
    return answer, sent, seconds


def upload_head(path: str, framing: str) -> bytes:
    """A multipart upload's request head; a CSRF cookie whose token the body sends first,
    as a browser's form does."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: csrftoken={CSRF}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n{framing}\r\n\r\n"
    ).encode()


def upload_body(megabytes: int, chunked: bool) -> Iterator[bytes]:
    """The token field, then a file part of ``megabytes`` MiB (never closed: the server
    must answer before it ends), optionally in HTTP chunks."""
    fields = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"'
        f"\r\n\r\n{CSRF}\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; "
        'name="file"; filename="a.jsonl"\r\n\r\n'
    ).encode()
    data = LINE * (65536 // len(LINE))
    for piece in [fields] + [data] * (megabytes * 16):
        yield b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece


BOUNDARY = "BoUnDaRy"
CSRF = "a" * 32


@pytest.mark.parametrize("path", ["/datasets/upload/", "/api/imports/"])
def test_a_real_server_refuses_an_announced_300_mb_at_once(server, path):
    """Before reading the body, and before authentication: the server answers with the
    client still sending."""
    answer, sent, seconds = send_until_answered(
        server, upload_head(path, "Content-Length: 300000000"), upload_body(300, False)
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"import limit of 1,048,576 bytes (1 MiB" in answer
    if path.startswith("/api/"):
        assert b'"errors": {"file": ["The file is larger' in answer
    assert sent < 16 * 2**20 and seconds < 5, (sent, seconds)
    assert_worker_free(server)


def test_a_real_server_cuts_off_a_chunked_stream_past_the_limit(server):
    answer, sent, seconds = send_until_answered(
        server,
        upload_head("/datasets/upload/", "Transfer-Encoding: chunked"),
        upload_body(300, True),
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"import limit of 1,048,576 bytes (1 MiB" in answer
    assert sent < 16 * 2**20 and seconds < 10, (sent, seconds)
    assert_worker_free(server)


def assert_worker_free(port: int) -> None:
    """The one sync worker answers the next request at once."""
    started = time.monotonic()
    assert status_of(port, "GET /login/") == 200 and time.monotonic() - started < 5


# --- every other route: REQUEST_MAX_BODY_BYTES ---------------------------------------------


def test_an_anonymous_login_body_over_the_body_limit_is_refused_unread(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048  # REQUEST_MAX_BODY_BYTES
    response = client.post(reverse("login"), {"username": "x" * 4096, "password": "p"})
    assert response.status_code == 413 and response["Content-Type"].startswith("text/plain")
    assert "larger than the limit of 2,048 bytes (2 KiB, REQUEST_MAX_BODY_BYTES)" in (
        response.content.decode()
    )
    assert client.post(reverse("login"), {"username": "x", "password": "p"}).status_code == 200


def chunked_json(client, url: str, body: bytes):  # type: ignore[no-untyped-def]
    """A JSON body without Content-Length, as gunicorn hands a chunked body to the app."""
    return client.generic(
        "POST",
        url,
        b"",
        "application/json",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True},
    )


def test_a_chunked_api_body_is_read_up_to_the_body_limit(cast, settings):
    """Within the limit a chunked JSON body is read as any other (before, Django read
    none of it); past it, 413 in the API's error shape."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    dataset = Dataset.objects.create(
        name="chunks", owner=cast["owner"], task=TaskKind.objects.get(code="summarization")
    )
    client = api(cast["owner"])
    small = json.dumps({"name": "By chunks", "dataset": dataset.pk}).encode()
    made = chunked_json(client, "/api/studies/", small)
    assert made.status_code == 201, made.content
    big = json.dumps({"name": "x" * 8000, "dataset": dataset.pk}).encode()
    refused = chunked_json(client, "/api/studies/", big)
    assert refused.status_code == 413
    assert refused.json() == {"detail": body_too_large(4096), "errors": {}}
    assert dataset.studies.count() == 1


def spooled(folder: Path) -> list[Path]:
    return [p for p in folder.glob("upload.*") if p.is_file()]


@pytest.mark.parametrize("framing", ["Content-Length: 200000000", "Transfer-Encoding: chunked"])
def test_a_real_server_refuses_an_anonymous_200_mb_login_before_reading_it(
    server, server_data, framing
):
    """Issue 36: a 200 MB POST to /login/ held a worker 120 s and left 165 MB on disk. Now
    an announced one is answered at once, a chunked one once it passes 5 MiB; nothing is
    left in the uploads' temporary folder."""
    chunked = framing.startswith("Transfer")
    answer, sent, seconds = send_until_answered(
        server, upload_head("/login/", framing), upload_body(200, chunked)
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"larger than the limit of 5,242,880 bytes (5 MiB, REQUEST_MAX_BODY_BYTES)" in answer
    assert sent < 16 * 2**20 and seconds < 10, (sent, seconds)
    assert_worker_free(server)
    assert spooled(server_data / "media" / "upload-tmp") == []


def start_upload(port: int, megabytes: float) -> socket.socket:
    """A login form (a 4.5 MiB body, within the 5 MiB limit) sent up to ``megabytes`` MiB
    of its file part, then left waiting: the server spools the part to a temporary file."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(upload_head("/login/", f"Content-Length: {int(4.5 * 2**20)}"))
    body = upload_body(5, chunked=False)
    sent = 0
    while sent < megabytes * 2**20:
        piece = next(body)
        sock.sendall(piece)
        sent += len(piece)
    return sock


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_worker_killed_mid_upload_leaves_no_temporary_file(server, server_data):
    """The worker is killed (SIGKILL: nothing of it runs) while it spools a file part;
    the worker that replaces it removes the file its predecessor left."""
    folder = server_data / "media" / "upload-tmp"
    sock = start_upload(server, 3)
    wait_until(
        lambda: any(p.stat().st_size > 2 * 2**20 for p in spooled(folder)), 30, "not spooled"
    )
    (left,) = spooled(folder)
    # upload.<host>.<pid>.<random>.upload.jsonl
    pid = int(left.name.removeprefix(f"upload.{socket.gethostname()}.").split(".")[0])
    os.kill(pid, signal.SIGKILL)
    sock.close()
    wait_until(lambda: not left.exists(), 120, f"{left} is still there")
    assert_worker_free(server)


def test_a_client_gone_mid_upload_leaves_no_temporary_file(server, server_data):
    folder = server_data / "media" / "upload-tmp"
    sock = start_upload(server, 3)
    wait_until(
        lambda: any(p.stat().st_size > 2 * 2**20 for p in spooled(folder)), 30, "not spooled"
    )
    sock.close()  # the rest never comes
    wait_until(lambda: spooled(folder) == [], 60, "the temporary file is still there")
    assert_worker_free(server)
