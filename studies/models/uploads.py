"""Resumable uploads: a large import file sent in chunks, resumed after a dropped
connection from the offset the server holds (studies/services/uploads.py)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from studies.models.aspects import TaskKind
from studies.models.jobs import ImportJob


class UploadSession(models.Model):
    """An upload under way: its declared size, the bytes received so far (``offset``: the
    file under the media folder holds exactly these, synced to disk), the import it
    becomes once complete (``job``, created once), and when it is given up (``expires_at``,
    moved forward by each chunk; the sweeper removes it and its file after that)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="upload_sessions"
    )
    file_name = models.CharField(max_length=255)
    file_format = models.CharField(max_length=16)
    size = models.BigIntegerField(help_text="The declared size of the whole file, in bytes.")
    offset = models.BigIntegerField(default=0, help_text="Bytes received and synced to disk.")
    sha256 = models.CharField(
        max_length=64, blank=True, help_text="The file's SHA-256, checked once it is complete."
    )
    path = models.CharField(max_length=255, help_text="The file, relative to the media folder.")
    # the import options, as the upload page and ImportJob hold them
    dataset_name = models.SlugField(max_length=100)
    task = models.ForeignKey(TaskKind, on_delete=models.PROTECT, related_name="+")
    create_aspects = models.BooleanField(default=False)
    scale_options = models.JSONField(default=dict, blank=True)
    job = models.OneToOneField(
        ImportJob,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="upload_session",
        help_text="The import the complete file became (created exactly once).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(offset__gte=0, offset__lte=models.F("size")),
                name="upload_offset_within_size",
            ),
        ]

    def __str__(self) -> str:
        return f"upload of {self.file_name} ({self.offset} of {self.size} bytes)"

    @property
    def status(self) -> str:
        """receiving (bytes missing), received (all bytes in), completed (an import job)."""
        if self.job_id is not None:
            return "completed"
        return "received" if self.offset >= self.size else "receiving"
