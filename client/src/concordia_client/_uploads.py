"""Uploads: a file in one request, or resumable, in chunks appended at the offset the
server holds (so a dropped connection costs at most the chunk under way), and the import
job that follows. :class:`~concordia_client.client.Client` takes these methods."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from concordia_client import operations as ops
from concordia_client._http import Http
from concordia_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    ImportFailed,
    RateLimited,
    ServerError,
    Timeout,
    TransportError,
    UploadInterrupted,
)
from concordia_client.models import ImportJob, UploadSession, build

log = logging.getLogger("concordia_client")

StrPath = str | os.PathLike[str]
UploadProgress = Callable[[int, int], None]  # (bytes the server holds, the file's size)
SERVER_MAX_WAIT = 300.0  # the longest ?wait= an upload may ask for
RESUMABLE_ABOVE = 16 * 2**20  # upload(resumable=None) sends larger files in chunks
MAX_BACKOFF = 30.0  # seconds between two attempts at most
NOT_STORED = 507  # the server's disk is full: waiting seconds will not help


def _transient(exc: Exception) -> bool:
    """A failure another attempt may get past: the connection, a timeout, a busy session
    (423), a rate limit, a server error other than a full disk."""
    if isinstance(exc, TransportError | Timeout | RateLimited):
        return True
    if isinstance(exc, ServerError):
        return exc.status != NOT_STORED
    return isinstance(exc, ApiError) and exc.status == 423


def _offset_in(exc: ApiError) -> int | None:
    body = exc.body if isinstance(exc.body, dict) else {}
    offset = body.get("offset")
    return offset if isinstance(offset, int) else None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


class Uploads:
    """The upload methods of the client."""

    _http: Http
    timeout: float
    _pause: Callable[[float | None, float | None, str, object], None]

    def upload(
        self,
        path: StrPath,
        *,
        dataset: str,
        task: str | None = None,
        create_aspects: bool = False,
        wait: bool = True,
        timeout: float = 600.0,
        resumable: bool | None = None,
        chunk_size: int | None = None,
        max_retries: int = 8,
        progress: UploadProgress | None = None,
    ) -> ImportJob:
        """Upload a JSONL or CSV file (the import formats) into a new or existing dataset
        of yours, named ``dataset``. With ``wait``, return once it is imported (a small
        file is imported in the request, a larger one by a worker; ``timeout`` bounds the
        wait for the import); a refused file raises ImportFailed naming each problem's
        line and field, and nothing is written.

        ``resumable`` (default: for files above 16 MiB) sends the file in chunks of at
        most ``chunk_size`` bytes (default and most: the server's ``chunk_max``), each
        retried after a dropped connection from the offset the server holds, at most
        ``max_retries`` failures in a row (waiting 0.5, 1, 2 … 30 s); then
        UploadInterrupted says how to resume it. ``progress(received, size)`` is called
        after each chunk."""
        path = Path(path)
        if resumable is None:
            resumable = path.stat().st_size > RESUMABLE_ABOVE
        if resumable:
            session = self.start_upload(
                path, dataset=dataset, task=task, create_aspects=create_aspects
            )
            return self.resume_upload(
                session,
                path,
                wait=wait,
                timeout=timeout,
                chunk_size=chunk_size,
                max_retries=max_retries,
                progress=progress,
            )
        deadline = time.monotonic() + timeout
        server_wait = min(timeout, SERVER_MAX_WAIT) if wait else None
        form = {"dataset": dataset, "create_aspects": "true" if create_aspects else "false"}
        if task is not None:
            form["task"] = task
        with path.open("rb") as handle:
            try:
                response = self._http.send(
                    ops.UPLOAD,
                    query={"wait": server_wait},
                    form=form,
                    files={"file": (path.name, handle)},
                    timeout=self.timeout + (server_wait or 0.0),
                )
            except BadRequest as exc:
                if isinstance(exc.body, dict) and isinstance(exc.body.get("job"), dict):
                    raise ImportFailed(build(ImportJob, exc.body["job"])) from None
                raise
        job = build(ImportJob, response.json())
        if not wait:
            return job
        return self.wait_for_import(job, timeout=max(0.0, deadline - time.monotonic()))

    def start_upload(
        self,
        path: StrPath,
        *,
        dataset: str,
        task: str | None = None,
        create_aspects: bool = False,
        checksum: bool = True,
    ) -> UploadSession:
        """Start a resumable upload of the file (nothing of it is sent yet): the server
        checks its name, its size against the import limit and the options. With
        ``checksum`` its SHA-256 goes too, and the server checks the bytes it received
        against it before importing them."""
        path = Path(path)
        body: dict[str, object] = {
            "file_name": path.name,
            "size": path.stat().st_size,
            "dataset": dataset,
            "create_aspects": create_aspects,
        }
        if task is not None:
            body["task"] = task
        if checksum:
            body["sha256"] = file_sha256(path)
        return build(UploadSession, self._http.send(ops.START_UPLOAD, json=body).json())

    def upload_session(self, session: str | UploadSession) -> UploadSession:
        """A resumable upload as the server holds it (its ``offset``)."""
        key = session if isinstance(session, str) else session.id
        return build(UploadSession, self._http.send(ops.UPLOAD_SESSION, {"id": key}).json())

    def cancel_upload(self, session: str | UploadSession) -> None:
        """Give up a resumable upload; the server removes what it received."""
        key = session if isinstance(session, str) else session.id
        self._http.send(ops.CANCEL_UPLOAD, {"id": key})

    def resume_upload(
        self,
        session: str | UploadSession,
        path: StrPath,
        *,
        wait: bool = True,
        timeout: float = 600.0,
        chunk_size: int | None = None,
        max_retries: int = 8,
        progress: UploadProgress | None = None,
    ) -> ImportJob:
        """Send the rest of a resumable upload from the offset the server holds (after a
        dropped connection, a crash, another day before it expires), complete it and,
        with ``wait``, wait for its import (see :meth:`upload`). Completing is done once
        on the server, so resuming a completed upload answers its job."""
        path = Path(path)
        current = self.upload_session(session)
        size = path.stat().st_size
        if size != current.size:
            raise ValueError(
                f"{path} has {size:,} bytes, but upload {current.id} is of {current.size:,}"
            )
        if current.job is not None:
            job = self.import_job(current.job)
        else:
            self._send_chunks(current, path, chunk_size, max_retries, progress)
            job = self._complete(current, max_retries)
        if not wait:
            return job
        return self.wait_for_import(job, timeout=timeout)

    def _send_chunks(
        self,
        session: UploadSession,
        path: Path,
        chunk_size: int | None,
        max_retries: int,
        progress: UploadProgress | None,
    ) -> None:
        step = min(chunk_size or session.chunk_max, session.chunk_max)
        offset, failures = session.offset, 0
        with path.open("rb") as handle:
            while offset < session.size:
                handle.seek(offset)
                chunk = handle.read(min(step, session.size - offset))
                try:
                    answer = self._http.send(
                        ops.UPLOAD_CHUNK,
                        {"id": session.id},
                        content=chunk,
                        headers={"Upload-Offset": str(offset)},
                    )
                except Conflict as exc:  # the server holds another offset: go on from it
                    known = _offset_in(exc)
                    if known is None:
                        raise
                    offset = known
                except (ApiError, TransportError, Timeout) as exc:
                    failures += 1
                    if not _transient(exc) and not isinstance(exc, ServerError):
                        raise  # refused (the session gone, the file changed): not resumable
                    if not _transient(exc) or failures > max_retries:
                        raise UploadInterrupted(session.id, offset, exc) from exc
                    offset = self._offset_after(session, offset, failures, exc)
                else:
                    offset, failures = int(answer.headers["Upload-Offset"]), 0
                if progress is not None:
                    progress(offset, session.size)

    def _offset_after(
        self, session: UploadSession, offset: int, failures: int, exc: Exception
    ) -> int:
        """After a failed chunk: wait (longer each time), then ask the server's offset
        (the chunk may have arrived in part, or whole); the last known if that fails too."""
        delay = min(MAX_BACKOFF, 0.5 * 2 ** (failures - 1))
        log.info("upload %s at byte %s: %s; retrying in %.1f s", session.id, offset, exc, delay)
        time.sleep(delay)
        try:
            return self.upload_session(session).offset
        except (TransportError, Timeout, ServerError, RateLimited):
            return offset

    def _complete(self, session: UploadSession, max_retries: int) -> ImportJob:
        """Complete the upload (the server does it once: a retry answers the same job)."""
        failures = 0
        while True:
            try:
                answer = self._http.send(ops.COMPLETE_UPLOAD, {"id": session.id})
            except (ApiError, TransportError, Timeout) as exc:
                failures += 1
                if not _transient(exc) or failures > max_retries:
                    raise
                time.sleep(min(MAX_BACKOFF, 0.5 * 2 ** (failures - 1)))
            else:
                return build(ImportJob, answer.json())

    def import_job(self, job: int | ImportJob) -> ImportJob:
        key = job if isinstance(job, int) else job.id
        return build(ImportJob, self._http.send(ops.IMPORT, {"id": key}).json())

    def wait_for_import(
        self, job: int | ImportJob, *, timeout: float = 600.0, poll_interval: float | None = None
    ) -> ImportJob:
        """The job once finished; raises ImportFailed if the server refused the file."""
        current = job if isinstance(job, ImportJob) else self.import_job(job)
        deadline = time.monotonic() + timeout
        while not current.finished:
            self._pause(deadline, poll_interval, f"import job {current.id}", current)
            current = self.import_job(current)
        if current.status == "failed":
            raise ImportFailed(current)
        return current
