"""Upload jobs: a file saved by the upload page, imported later by a worker."""

from __future__ import annotations

import logging

from django.utils import timezone

from studies.models import ImportJob
from studies.services import queue
from studies.services.imports.options import ImportOptions, ImportValidationError
from studies.services.imports.validate import owned_dataset
from studies.services.imports.write import import_file

log = logging.getLogger(__name__)


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
    """Save the upload as a PENDING job and enqueue its import once the row is committed."""
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
    queue.send_on_commit(queue.IMPORT_UPLOAD, job.pk)
    return job


def run_import_job(job_id: int) -> str:
    """Claim the job (PENDING → RUNNING) and import its file; a second call does nothing."""
    claimed = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.PENDING).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=timezone.now()
    )
    if not claimed:
        return "not pending"
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
        summary = import_file(job.upload.path, options)
    except ImportValidationError as exc:
        job.status = ImportJob.Status.FAILED
        job.errors = [str(e) for e in exc.errors] + (
            [f"... and {exc.more} more problems"] if exc.more else []
        )
    except Exception as exc:  # an unexpected failure is reported on the job page, then re-raised
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
