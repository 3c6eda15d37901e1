"""Resumable uploads: a large import file sent in chunks, each appended at the offset the
server holds, so that a dropped connection costs at most the chunk under way.

The protocol follows the core of tus 1.0 (https://tus.io/protocols/resumable-upload):
an upload is created with its declared size (checked against ``IMPORT_MAX_FILE_BYTES``
before a byte is sent) and the import options of the upload page; each ``PATCH`` says
the offset it starts at (``Upload-Offset``), and one starting anywhere but at the bytes
received so far is refused (409, with the offset to resume from); ``HEAD``/``GET`` give
that offset. Each chunk is one request body, so ``REQUEST_MAX_BODY_BYTES`` bounds it
before it is read, and the declared size bounds the whole: a chunk that would pass it is
refused and nothing of it kept. Creating the import (``complete``) is done once: a second
call, or two at the same moment, answer the same job.

Durability: the bytes go to a file under the media folder and are synced to disk
(``fsync``) before the offset that counts them is written to the database, so the
database's offset never counts a byte the disk may lose; bytes the file holds beyond it
(a process killed mid-chunk) are cut off by the next chunk. A chunk cut off by a dropped
connection keeps what arrived. One request writes a session at a time (a lock on its
file): another gets 423 and asks for the offset again.

The sweeper removes sessions that received nothing for ``UPLOAD_SESSION_SECONDS``
(:func:`remove_expired`), with their files unless an import holds them, and files of this
folder that no session or import names (a session deleted with its owner).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from studies.models import ImportJob, TaskKind, UploadSession
from studies.services.imports import create_import_job, upload_not_stored

log = logging.getLogger(__name__)

FOLDER = "uploads/resumable"  # under the media folder
PIECE = 256 * 1024  # bytes read from the request body at a time
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL


class UploadRefused(Exception):
    """A request the upload cannot take: its HTTP status, message, and the offset to
    resume from where it helps (409)."""

    status = 400

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class OffsetMismatch(UploadRefused):
    status = 409


class NotComplete(UploadRefused):
    status = 409


class AlreadyCompleted(UploadRefused):
    status = 409


class PastDeclaredSize(UploadRefused):
    status = 413


class ChecksumMismatch(UploadRefused):
    status = 400


class UploadGone(UploadRefused):
    status = 410


class UploadBusy(UploadRefused):
    status = 423


class NotStored(UploadRefused):
    status = 507


def lifetime() -> timedelta:
    """How long a session waits for its next chunk (``UPLOAD_SESSION_SECONDS``)."""
    return timedelta(seconds=settings.CONCORDIA["UPLOAD_SESSION_SECONDS"])


def chunk_limit() -> int:
    """The largest chunk: one request body (``REQUEST_MAX_BODY_BYTES``)."""
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


def file_path(session: UploadSession) -> Path:
    return Path(default_storage.path(session.path))


def start_upload(
    *,
    user: Any,
    file_name: str,
    file_format: str,
    size: int,
    dataset_name: str,
    task: TaskKind,
    sha256: str = "",
    create_aspects: bool = False,
    rescale: dict[str, list[float]] | None = None,
    widen_aspects: bool = False,
) -> UploadSession:
    """A new session and its empty file. The size and options are checked by the caller
    (``UploadSessionForm``); a disk without room for the declared size refuses at once
    (:class:`NotStored`) rather than after half the file."""
    session_id = uuid.uuid4()
    name = f"{FOLDER}/{session_id}.{file_format}"
    path = Path(default_storage.path(name))
    path.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path.parent).free
    if free < size:
        error = OSError(errno.ENOSPC, f"{free:,} bytes free for {size:,}")
        raise NotStored(upload_not_stored(error))
    os.close(os.open(path, _NEW_FILE, 0o666))
    try:
        return UploadSession.objects.create(
            id=session_id,
            owner=user,
            file_name=file_name,
            file_format=file_format,
            size=size,
            sha256=sha256,
            path=name,
            dataset_name=dataset_name,
            task=task,
            create_aspects=create_aspects,
            scale_options={"rescale": rescale or {}, "widen_aspects": widen_aspects},
            expires_at=timezone.now() + lifetime(),
        )
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def check_alive(session: UploadSession, now: datetime | None = None) -> None:
    """:class:`UploadGone` for a session past its expiry that never became an import."""
    if session.job_id is None and session.expires_at < (now or timezone.now()):
        raise UploadGone(
            f"This upload received nothing for {lifetime().total_seconds():.0f} s "
            "(UPLOAD_SESSION_SECONDS) and was given up; start it again."
        )


@contextlib.contextmanager
def _locked(session: UploadSession) -> Iterator[int]:
    """The session's file, open for writing and locked against every other request."""
    try:
        fd = os.open(file_path(session), os.O_RDWR)
    except FileNotFoundError:
        raise UploadGone("This upload's file is gone; start it again.") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UploadBusy(
                "Another request is writing this upload (a connection that broke may still "
                "be closing); ask for its offset again in a moment.",
                offset=session.offset,
            ) from None
        yield fd
    finally:
        os.close(fd)  # releases the lock


def append_chunk(
    session: UploadSession, offset: int, read: Callable[[int], bytes], announced: int | None
) -> int:
    """Append one request body (``read``, ``announced`` bytes when its length is known) at
    ``offset``; the offset after it. Refusals: another offset than the session's
    (:class:`OffsetMismatch`), a chunk passing the declared size (:class:`PastDeclaredSize`,
    nothing kept), a completed session, a full disk (:class:`NotStored`, nothing of the
    chunk kept). A body that ends early (a dropped connection) keeps what arrived."""
    if session.job_id is not None:
        raise AlreadyCompleted("This upload is complete and imported; nothing more is taken.")
    check_alive(session)
    with _locked(session) as fd:
        session.refresh_from_db(fields=["offset", "expires_at", "job"])
        if session.job_id is not None:
            raise AlreadyCompleted("This upload is complete and imported; nothing more is taken.")
        if offset != session.offset:
            raise OffsetMismatch(
                f"This upload has {session.offset:,} bytes; send the chunk that starts there "
                f"(Upload-Offset: {session.offset}), not at {offset:,}.",
                offset=session.offset,
            )
        room = session.size - offset
        if announced is not None and announced > room:
            raise _past_size(session, announced)
        os.ftruncate(fd, offset)  # bytes beyond the offset were never counted
        os.lseek(fd, offset, os.SEEK_SET)
        written = _copy(session, fd, read, room, offset)
        os.fsync(fd)
        end = offset + written
        moved = UploadSession.objects.filter(pk=session.pk, offset=offset, job=None).update(
            offset=end, expires_at=timezone.now() + lifetime()
        )
        if not moved:  # removed (cancelled, swept) while the chunk came
            raise UploadGone("This upload was removed while the chunk arrived.")
    session.offset = end
    return end


def _copy(
    session: UploadSession, fd: int, read: Callable[[int], bytes], room: int, offset: int
) -> int:
    """Copy the body into the file at its offset: the bytes written. More than ``room``
    bytes, or a body past the request limit: cut back to ``offset``, refused."""
    written = 0
    while True:
        try:
            piece = read(min(PIECE, room - written + 1))  # one byte past the room tells
        except RequestDataTooBig as exc:  # a chunked body past REQUEST_MAX_BODY_BYTES
            os.ftruncate(fd, offset)
            raise PastDeclaredSize(str(exc)) from exc
        except Exception as exc:  # the server's: an OSError, gunicorn's parse errors…
            # the connection broke: keep what arrived
            log.info("upload %s: the body broke off after %s bytes: %s", session.pk, written, exc)
            return written
        if not piece:
            return written
        if written + len(piece) > room:
            os.ftruncate(fd, offset)
            raise _past_size(session, written + len(piece))
        try:
            _write(fd, piece)
        except OSError as exc:
            os.ftruncate(fd, offset)
            message = upload_not_stored(exc).replace(
                "Nothing was kept; upload it again",
                f"Nothing of this chunk was kept; the upload resumes at byte {offset:,}",
            )
            raise NotStored(message, offset=offset) from exc
        written += len(piece)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _past_size(session: UploadSession, sent: int) -> PastDeclaredSize:
    return PastDeclaredSize(
        f"The chunk passes the declared size of {session.size:,} bytes: {sent:,} bytes sent "
        f"at {session.offset:,}, {session.size - session.offset:,} left. Nothing of it was "
        "kept.",
        offset=session.offset,
    )


def complete_upload(session: UploadSession) -> tuple[ImportJob, bool]:
    """The import job of a fully received upload, and whether this call created it: the
    first call creates it (queued on commit), every later one, or one racing it, answers
    the same job. Refused while bytes are missing, or when the file's SHA-256 differs from
    the one declared."""
    if session.job_id is not None:
        return session.job, False  # type: ignore[return-value]
    check_alive(session)
    if session.offset < session.size:
        raise NotComplete(
            f"{session.offset:,} of {session.size:,} bytes received; send the rest first.",
            offset=session.offset,
        )
    if session.sha256 and _sha256(session) != session.sha256:
        raise ChecksumMismatch(
            "The received file's SHA-256 is not the one declared: the bytes differ from "
            "the file's. Cancel this upload and send the file again."
        )
    with transaction.atomic():
        # the one UPDATE that claims it: a racing call waits on this row, then finds the job
        claimed = UploadSession.objects.filter(pk=session.pk, job=None).update(
            expires_at=timezone.now() + lifetime()
        )
        if not claimed:
            session.refresh_from_db(fields=["job"])
            if session.job is None:
                raise UploadGone("This upload was removed.")
            return session.job, False
        options = session.scale_options
        job = create_import_job(
            upload=session.path,  # the received file itself: no copy
            original_name=session.file_name,
            file_format=session.file_format,
            dataset_name=session.dataset_name,
            task=session.task,
            create_aspects=session.create_aspects,
            user=session.owner,
            rescale=options.get("rescale") or {},
            widen_aspects=bool(options.get("widen_aspects")),
        )
        UploadSession.objects.filter(pk=session.pk).update(job=job)
    session.job = job
    log.info("upload %s complete: import job %s", session.pk, job.pk)
    return job, True


def _sha256(session: UploadSession) -> str:
    digest = hashlib.sha256()
    with file_path(session).open("rb") as handle:
        while block := handle.read(1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


def cancel_upload(session: UploadSession) -> None:
    """Remove an upload and what it received (refused once it became an import: the file
    is the import's)."""
    if session.job_id is not None:
        raise AlreadyCompleted("This upload is complete; its file belongs to its import job.")
    with _locked(session):
        removed, _ = UploadSession.objects.filter(pk=session.pk, job=None).delete()
        if removed:
            file_path(session).unlink(missing_ok=True)


def remove_expired(now: datetime | None = None) -> int:
    """Remove the sessions past their expiry (their files too, unless an import holds
    them) and the files of the folder that nothing names; how many sessions went."""
    now = now or timezone.now()
    removed = 0
    for session in UploadSession.objects.filter(expires_at__lt=now):
        if UploadSession.objects.filter(pk=session.pk, expires_at__lt=now).delete()[0]:
            removed += 1
            if session.job_id is None:
                file_path(session).unlink(missing_ok=True)
    _remove_unnamed(now)
    if removed:
        log.info("removed %s expired uploads", removed)
    return removed


def _remove_unnamed(now: datetime) -> None:
    """Files of the folder older than a session's lifetime that no session or import
    names (their session was deleted with its owner, or its row never committed)."""
    folder = Path(default_storage.path(FOLDER))
    if not folder.is_dir():
        return
    before = (now - lifetime()).timestamp()
    old = {f"{FOLDER}/{p.name}": p for p in folder.iterdir() if p.stat().st_mtime < before}
    if not old:
        return
    named = set(UploadSession.objects.filter(path__in=old).values_list("path", flat=True))
    named |= set(ImportJob.objects.filter(upload__in=old).values_list("upload", flat=True))
    for name, path in old.items():
        if name not in named:
            path.unlink(missing_ok=True)
