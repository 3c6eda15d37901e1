"""The upload routes' size limit, enforced while the body arrives, not after.

Django reads a multipart body to its end (spooling the file to disk) before a view or a
form can look at its size. :class:`UploadLimitMiddleware` guards the upload page and the
API's upload endpoints, and refuses with 413 and the same message on both:

- a ``Content-Length`` above the limit: at once, before a byte of the body is read (and
  before authentication: nothing is revealed, nothing is read);
- a file that passes the limit while the multipart parser streams it
  (:class:`FileLimitHandler` stops the parser; the rest of the body is never read);
- a chunked body (no ``Content-Length``; gunicorn decodes it) as soon as it passes the
  limit (:class:`CappedInput` stops the parser the same way).

The body is read where it always was (the CSRF check, DRF's parser after authentication),
so a request that is refused for other reasons first is never read at all. A cut-off
upload reaches its view without its file, which the view refuses without writing
anything; the middleware then answers 413 instead.

The limit is ``IMPORT_MAX_FILE_BYTES`` for the file, plus :data:`FORM_ALLOWANCE` for the
form's other fields and the multipart headers around them.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve

from studies.forms import UploadForm, upload_too_large
from studies.permissions import is_researcher

# The routes that take an import file (tests/studies/test_upload_limit.py checks that
# every route accepting multipart files is one of them).
UPLOAD_ROUTES = frozenset({"studies:upload", "api:import-list", "api:dataset-upload"})
FORM_ALLOWANCE = 64 * 1024  # the other fields (dataset, task, rescale…) and part headers


def file_limit() -> int:
    """The largest import file, in bytes (``IMPORT_MAX_FILE_BYTES``)."""
    return int(settings.CONCORDIA["IMPORT_MAX_FILE_BYTES"])


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


class CappedInput(io.RawIOBase):
    """A chunked request body (the server marks its end), read through as the parser asks
    for it, that stops the parser once more than ``limit`` bytes have come."""

    def __init__(self, stream: Any, limit: int) -> None:
        super().__init__()
        self.stream = stream
        self.limit = limit
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
            raise StopUpload(connection_reset=True)  # caught by the multipart parser
        return data


class UploadLimitMiddleware:
    """Guards the upload routes (see the module). After the authentication middleware, so
    that the refusal page knows its user; before anything reads a body."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST" or not _is_upload(request):
            return self.get_response(request)
        limit = file_limit()
        body_limit = limit + FORM_ALLOWANCE
        length = request.META.get("CONTENT_LENGTH") or ""
        if length.isdigit() and int(length) > body_limit:
            return _refusal(request, parsed=False)
        stream = None
        if not length and request.META.get("wsgi.input_terminated"):
            stream = CappedInput(request.META["wsgi.input"], body_limit)
            # WSGIRequest reads its body from _stream, and Django parses a multipart body
            # only with a length: the most it may be (CappedInput ends it, or stops it)
            request._stream = stream  # type: ignore[attr-defined]
            request.META["CONTENT_LENGTH"] = str(body_limit)
        handler = FileLimitHandler(request, limit)
        request.upload_handlers.insert(0, handler)
        response = self.get_response(request)
        if handler.tripped or (stream is not None and stream.tripped):
            return _refusal(request, parsed=True)
        return response


def _is_upload(request: HttpRequest) -> bool:
    if request.content_type != "multipart/form-data":
        return False
    try:
        return resolve(request.path_info).view_name in UPLOAD_ROUTES
    except Resolver404:
        return False


def _refusal(request: HttpRequest, parsed: bool) -> HttpResponse:
    """413 with the limit's message: the API's error body under ``/api/``, else the upload
    page with the message on its file field (plain text for a non-researcher)."""
    message = upload_too_large(file_limit())
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": {"file": [message]}}, status=413)
    if not is_researcher(request.user):
        return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
    kept = request.POST.dict() if parsed else {}  # the fields that came before the file
    form = UploadForm(
        user=request.user, initial={"dataset": request.GET.get("dataset", ""), **kept}
    )
    form.errors["file"] = form.error_class([message])
    return render(request, "studies/upload.html", {"form": form}, status=413)
