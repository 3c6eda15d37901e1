"""Request bodies are limited while they arrive, not after, on every route.

Django reads a body (a form's fields, a multipart upload spooled to disk, DRF's JSON)
when the CSRF check, a view or a parser first asks for it, and then to its end.
:class:`BodyLimitMiddleware` runs before anything has asked, and refuses with 413:

- a ``Content-Length`` above the route's limit: at once, before a byte of the body is
  read (and before authentication: nothing is revealed, nothing is read);
- a chunked body (no ``Content-Length``; gunicorn decodes it) as soon as it passes the
  limit (:class:`CappedInput` stops the reader);
- on the upload routes, a file that passes the import limit while the multipart parser
  streams it (:class:`FileLimitHandler` stops the parser; the rest is never read).

The limit is ``IMPORT_MAX_FILE_BYTES`` plus :data:`FORM_ALLOWANCE` (the form's other
fields and the multipart headers) on the three upload routes, ``REQUEST_MAX_BODY_BYTES``
(Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``) on every other route, anonymous ones included.
The body is read where it always was, so a request refused for other reasons first is
never read at all. A cut-off upload reaches its view without its file, which the view
refuses without writing anything; the middleware then answers 413 instead.

Temporary files. A file part larger than ``FILE_UPLOAD_MAX_MEMORY_SIZE`` is spooled to
``FILE_UPLOAD_TEMP_DIR`` by :class:`SpoolHandler`, under a name that says which host and
process wrote it. The request removes it when it ends, however it ends; a process that
dies mid-request (killed at a timeout) cannot, so each process removes at start, and
before each upload, those its dead predecessors left (:func:`remove_orphans`). A write
that fails (a full disk) removes the file at once and answers 507 naming the cause, so
no truncated file keeps the space the next upload needs.
"""

from __future__ import annotations

import io
import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import (
    FileUploadHandler,
    StopUpload,
    TemporaryFileUploadHandler,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve

from studies.forms import UploadForm, body_too_large, upload_too_large
from studies.permissions import is_researcher
from studies.services.imports import upload_not_stored

# The routes that take an import file or a batch run's results file, limited by
# IMPORT_MAX_FILE_BYTES (tests/studies/test_upload_limit.py checks that every route
# accepting multipart files is one of them).
UPLOAD_ROUTES = frozenset(
    {
        "studies:upload",
        "studies:run-batch-results",
        "api:import-list",
        "api:dataset-upload",
        "api:run-batch-results",
    }
)
FORM_ALLOWANCE = 64 * 1024  # the other fields (dataset, task, rescale…) and part headers
NOT_STORED = "concordia_upload_not_stored"  # the request attribute saying why


def file_limit() -> int:
    """The largest import file, in bytes (``IMPORT_MAX_FILE_BYTES``)."""
    return int(settings.CONCORDIA["IMPORT_MAX_FILE_BYTES"])


def body_limit() -> int:
    """The largest body of every other route, in bytes (``REQUEST_MAX_BODY_BYTES``)."""
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


class FileLimitHandler(FileUploadHandler):
    """First of the upload handlers: passes each chunk on, and stops the multipart parser
    (without reading the rest of the body) when a file passes ``limit`` bytes."""

    def __init__(self, request: HttpRequest, limit: int) -> None:
        super().__init__(request)
        self.limit = limit
        self.tripped = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > self.limit:
            self.tripped = True
            raise StopUpload(connection_reset=True)  # True: the parser reads no further
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler makes the file


def spool_prefix() -> str:
    """What this process's temporary upload files are named with."""
    return f"upload.{socket.gethostname()}.{os.getpid()}."


class SpooledUpload(TemporaryUploadedFile):
    """Django's temporary upload file, named after the host and process writing it."""

    def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
        file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed with the upload)
            prefix=spool_prefix(),
            suffix=".upload" + os.path.splitext(name)[1][:20],
            dir=settings.FILE_UPLOAD_TEMP_DIR,
        )
        UploadedFile.__init__(self, file, name, *args, **kwargs)


class SpoolHandler(TemporaryFileUploadHandler):
    """Spools a large file part to a :class:`SpooledUpload`; a write that fails (a full
    disk) removes the file, stops the parser and records why on the request."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        FileUploadHandler.new_file(self, *args, **kwargs)
        self.file = SpooledUpload(
            self.file_name, self.content_type, 0, self.charset, self.content_type_extra
        )

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        try:
            self.file.write(raw_data)
        except OSError as exc:
            self.upload_interrupted()  # closes and removes the truncated file
            setattr(self.request, NOT_STORED, upload_not_stored(exc))
            raise StopUpload(connection_reset=True) from exc


def remove_orphans() -> list[Path]:
    """Remove the temporary upload files this host's dead processes left; what it removed."""
    folder = Path(settings.FILE_UPLOAD_TEMP_DIR or tempfile.gettempdir())
    host = f"upload.{socket.gethostname()}."
    removed = []
    for path in folder.glob(f"{host}*"):
        pid = path.name[len(host) :].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


class CappedInput(io.RawIOBase):
    """A chunked request body (the server marks its end), read through as the reader asks
    for it, that stops the reader once more than ``limit`` bytes have come: the multipart
    parser with StopUpload, any other reader with RequestDataTooBig."""

    def __init__(self, stream: Any, limit: int, multipart: bool) -> None:
        super().__init__()
        self.stream = stream
        self.limit = limit
        self.multipart = multipart
        self.received = 0
        self.tripped = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        wanted = self.limit + 1 - self.received  # one byte past the limit tells
        data: bytes = self.stream.read(wanted if size is None or size < 0 else min(size, wanted))
        self.received += len(data)
        if self.received > self.limit:
            self.tripped = True
            if self.multipart:
                raise StopUpload(connection_reset=True)  # caught by the multipart parser
            raise RequestDataTooBig(body_too_large(self.limit))
        return data


class BodyLimitMiddleware:
    """Guards every route's body (see the module). After the authentication middleware,
    so that the upload page's refusal knows its user; before anything reads a body (the
    CSRF check reads it in ``process_view``, after every middleware's ``__call__``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        remove_orphans()  # a process starting, maybe in place of one that died mid-upload

    def __call__(self, request: HttpRequest) -> HttpResponse:
        upload = request.method == "POST" and _is_upload(request)
        limit = file_limit() + FORM_ALLOWANCE if upload else body_limit()
        length = request.META.get("CONTENT_LENGTH") or ""
        if length.isdigit() and int(length) > limit:
            return _too_large(request, upload, parsed=False)
        stream = None
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not length and chunked and request.META.get("wsgi.input_terminated"):
            multipart = request.content_type == "multipart/form-data"
            stream = CappedInput(request.META["wsgi.input"], limit, multipart)
            # WSGIRequest reads its body from _stream, and Django reads a body only up to
            # its length: the most it may be (CappedInput ends it, or stops it)
            request._stream = stream  # type: ignore[attr-defined]
            request.META["CONTENT_LENGTH"] = str(limit)
        handler = None
        if upload:
            remove_orphans()
            handler = FileLimitHandler(request, file_limit())
            request.upload_handlers.insert(0, handler)
        response = self.get_response(request)
        if getattr(request, NOT_STORED, None):
            return _not_stored(request, getattr(request, NOT_STORED))
        if (handler is not None and handler.tripped) or (stream is not None and stream.tripped):
            return _too_large(request, upload, parsed=True)
        return response


def _is_upload(request: HttpRequest) -> bool:
    if request.content_type != "multipart/form-data":
        return False
    try:
        return resolve(request.path_info).view_name in UPLOAD_ROUTES
    except Resolver404:
        return False


def _too_large(request: HttpRequest, upload: bool, parsed: bool) -> HttpResponse:
    """413 with the limit's message (see :func:`refusal`)."""
    if upload:
        message = upload_too_large(file_limit())
        return refusal(request, message, 413, parsed=parsed)
    message = body_too_large(body_limit())
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": {}}, status=413)
    return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")


def _not_stored(request: HttpRequest, message: str) -> HttpResponse:
    """507: the upload could not be written (its partial file is gone)."""
    if _is_upload(request):
        return refusal(request, message, 507, parsed=True)
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": {}}, status=507)
    return HttpResponse(message, status=507, content_type="text/plain; charset=utf-8")


def refusal(request: HttpRequest, message: str, status: int, parsed: bool) -> HttpResponse:
    """An upload refused with ``message``: the API's error body under ``/api/``, else the
    upload page with the message on its file field (plain text for a non-researcher)."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": {"file": [message]}}, status=status)
    if not is_researcher(request.user) or request.path_info.startswith("/runs/"):
        # a run page's results file: no import form to show it on
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    kept = request.POST.dict() if parsed else {}  # the fields that came before the file
    form = UploadForm(
        user=request.user, initial={"dataset": request.GET.get("dataset", ""), **kept}
    )
    form.errors["file"] = form.error_class([message])
    return render(request, "studies/upload.html", {"form": form}, status=status)
