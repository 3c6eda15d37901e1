"""Upload jobs: a file saved by the upload page, imported later by a worker."""

from __future__ import annotations

import errno
import logging

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from studies.models import ImportJob
from studies.services import dbsessions, queue
from studies.services.imports.converted import import_any, load_benchmark
from studies.services.imports.options import ImportOptions, ImportValidationError
from studies.services.imports.validate import owned_dataset
from studies.services.sources import BENCHMARKS, LicenceNotAccepted

log = logging.getLogger(__name__)


class UploadNotStored(Exception):
    """The upload could not be written (a full disk, a quota); nothing was kept."""


def upload_not_stored(exc: OSError) -> str:
    """Why an upload could not be written, for its 507 (page, API, upload middleware)."""
    code = errno.errorcode.get(exc.errno or 0, "")
    cause = f"{exc.strerror or exc}{f' ({code})' if code else ''}"
    return (
        f"The server could not store the file: {cause}. Nothing was kept; upload it again "
        "once an administrator has freed space."
    )


def create_import_job(
    *,
    upload,
    original_name: str,
    file_format: str,
    dataset_name: str,
    task,
    create_aspects: bool,
    user,
    rescale: dict[str, list[float]] | None = None,
    widen_aspects: bool = False,
) -> ImportJob:  # type: ignore[no-untyped-def]
    """Save the upload as a PENDING job and enqueue its import once the row is committed.
    Raises :class:`UploadNotStored` when the file cannot be written (what was written of
    it is removed: studies/storage.py)."""
    try:
        job = ImportJob.objects.create(
            upload=upload,
            original_name=original_name,
            file_format=file_format,
            dataset_name=dataset_name,
            task=task,
            create_aspects=create_aspects,
            scale_options={"rescale": rescale or {}, "widen_aspects": widen_aspects},
            created_by=user,
            heartbeat_at=timezone.now(),
        )
    except OSError as exc:
        log.warning("upload %s not stored: %s", original_name, exc)
        raise UploadNotStored(upload_not_stored(exc)) from exc
    queue.send_on_commit(queue.IMPORT_UPLOAD, job.pk)
    return job


BENCHMARK = "benchmark"  # an ImportJob's file_format for a benchmark to load (no upload)


def create_benchmark_job(
    *,
    name: str,
    dataset_name: str,
    task,
    user,
    revision: str = "",
    accept_licence: bool = False,
) -> ImportJob:  # type: ignore[no-untyped-def]
    """A PENDING job that loads benchmark ``name`` (fetched at ``revision``, default the
    pinned one) into the user's dataset, enqueued once committed: the download and the
    import run in the worker, never in the request. LicenceNotAccepted now for a
    non-commercial licence not accepted (the worker checks again)."""
    spec = BENCHMARKS[name]
    if spec.licence.restricted and not accept_licence:
        raise LicenceNotAccepted(
            f"{name} is released under {spec.licence.describe()}; accept its licence to load it"
        )
    job = ImportJob.objects.create(
        upload="",
        original_name=f"{name}.jsonl",
        file_format=BENCHMARK,
        dataset_name=dataset_name,
        task=task,
        create_aspects=True,
        scale_options={
            "benchmark": {"name": name, "revision": revision, "accept_licence": accept_licence}
        },
        created_by=user,
        heartbeat_at=timezone.now(),
    )
    queue.send_on_commit(queue.IMPORT_UPLOAD, job.pk)
    return job


def run_import_job(job_id: int) -> str:
    """Claim the job (PENDING → RUNNING) and import its file; a second call does nothing.

    The claim names this worker's database session, so that the sweeper takes the job
    back as soon as that session is gone. A lost connection (a database restart) is not
    the file's fault: the job goes back to PENDING to be imported again (by the sweeper,
    once the database answers, if it cannot be put back now), and fails, saying why, only
    after ``IMPORT_MAX_RECOVERIES`` recoveries.
    """
    claimed = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.PENDING).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=timezone.now(), session=dbsessions.current()
    )
    if not claimed:
        return "not pending"
    try:
        return _import_claimed(job_id)
    except (OperationalError, InterfaceError) as exc:
        if not connection_lost(exc):
            raise
        log.warning("import job %s lost its database connection: %s", job_id, exc)
        return _retry_later(job_id, f"the database connection was lost: {exc}".strip())


def connection_lost(exc: DatabaseError) -> bool:
    """Whether a database error is the connection's (the server restarting or shutting
    down, a connection cut or refused), not the statement's: PostgreSQL's SQLSTATE
    classes 08 and 57P, or no SQLSTATE at all from a driver that lost its socket."""
    if connection.vendor != "postgresql":  # SQLite has no server to lose
        return False
    state = getattr(exc.__cause__, "sqlstate", None) or getattr(exc.__cause__, "pgcode", None)
    return state is None or state.startswith(("08", "57P"))


def _retry_later(job_id: int, reason: str) -> str:
    """Put a job whose connection was lost back to PENDING and send it again, or fail it
    with the reason after ``IMPORT_MAX_RECOVERIES``; when the database does not answer yet,
    the sweeper does it once it does (the job's session is gone)."""
    connection.close()  # a broken connection; the next query opens a new one
    job = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.RUNNING)
    now = timezone.now()
    entry = {"at": now.isoformat(), "was": "running", "reason": reason[:500], "connection": True}
    try:
        row = job.values("recovery_log").first()
        if row is None:
            return "lost its database connection"
        lost = sum(1 for e in row["recovery_log"] if e.get("connection"))
        if lost >= settings.CONCORDIA["IMPORT_MAX_RECOVERIES"]:
            job.update(
                status=ImportJob.Status.FAILED,
                errors=[
                    f"The import lost its database connection {lost + 1} times, the last "
                    f"time: {reason}. Nothing was imported; upload the file again."
                ],
                finished_at=now,
                session="",
            )
            return ImportJob.Status.FAILED
        with transaction.atomic():
            job.update(
                status=ImportJob.Status.PENDING,
                heartbeat_at=now,
                session="",
                recoveries=F("recoveries") + 1,
                recovery_log=[*row["recovery_log"], entry],
            )
            queue.send_on_commit(queue.IMPORT_UPLOAD, job_id)
    except DatabaseError as exc:
        log.warning(
            "import job %s: the database is still away (%s); the sweeper retries", job_id, exc
        )
        return "lost its database connection"
    return "pending again"


def _import_claimed(job_id: int) -> str:
    job = ImportJob.objects.select_related("task", "created_by", "dataset").get(pk=job_id)
    if job.dataset_id is not None and job.dataset.owner_id != job.created_by_id:
        # names are per owner, so a job only ever writes into its creator's dataset
        job.status = ImportJob.Status.FAILED
        job.errors = [
            f"dataset #{job.dataset_id} does not belong to {job.created_by}; nothing was imported"
        ]
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "errors", "finished_at"])
        return job.status
    options = ImportOptions(
        dataset=job.dataset_name,
        task=job.task.code,
        file_format=job.file_format,
        file_name=job.original_name,
        create_aspects=job.create_aspects,
        owner=job.created_by,
        rescale={k: (low, high) for k, (low, high) in job.scale_options.get("rescale", {}).items()},
        widen_aspects=bool(job.scale_options.get("widen_aspects")),
    )
    try:
        benchmark = job.scale_options.get("benchmark") if job.file_format == BENCHMARK else None
        if benchmark:
            summary = load_benchmark(
                benchmark["name"],
                options,
                revision=benchmark.get("revision") or None,
                accept_licence=bool(benchmark.get("accept_licence")),
            )
        else:
            summary = import_any(job.upload.path, options)
    except LicenceNotAccepted as exc:
        job.status = ImportJob.Status.FAILED
        job.errors = [str(exc)]
    except ImportValidationError as exc:
        job.status = ImportJob.Status.FAILED
        job.errors = [str(e) for e in exc.errors] + (
            [f"... and {exc.more} more problems"] if exc.more else []
        )
    except Exception as exc:  # an unexpected failure is reported on the job page, then re-raised
        if isinstance(exc, OperationalError | InterfaceError) and connection_lost(exc):
            raise  # not the file's: run_import_job puts the job back
        log.exception("import job %s failed", job_id)
        job.status = ImportJob.Status.FAILED
        job.errors = [f"internal error: {exc}"]
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "errors", "finished_at"])
        raise
    else:
        job.status = ImportJob.Status.SUCCEEDED
        job.summary = summary.as_dict()
        job.dataset = owned_dataset(job.dataset_name, job.created_by)
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "errors", "summary", "dataset", "finished_at"])
    return job.status
