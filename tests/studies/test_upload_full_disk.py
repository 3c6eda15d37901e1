"""A full disk: an upload that cannot be written is removed at once (no truncated file
keeps the space), the page and the API answer 507 naming the cause, nothing is queued,
and the next upload that fits works.

The disk is the upload folders (the temporary folder and the media folder) with a
capacity: a write into them that would pass it writes what fits and fails with ENOSPC, as
a full file system does, at the two places an upload is written: the spool of a large
file part (Django's ``TemporaryUploadedFile.write``) and the copy of a small one into the
media folder (``os.fdopen``'s file, as Django's storage opens it). Without the fixes the
truncated file stayed, and every later upload failed (500) on the space it held.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from studies.models import ImportJob
from studies.services.tokens import token_for

pytestmark = pytest.mark.django_db
LINE = b'{"doc_id": "d1", "system_id": "s1", "source": "S", "output": "O"}\n'
KIB = 1024


class Disk:
    """The upload folders as one small disk of ``capacity`` bytes."""

    def __init__(self, folders: list[Path], capacity: int) -> None:
        self.folders, self.capacity, self.refusals = folders, capacity, 0

    def used(self) -> int:
        return sum(p.stat().st_size for f in self.folders for p in f.rglob("*") if p.is_file())

    def files(self) -> list[Path]:
        return [p for f in self.folders for p in f.rglob("*") if p.is_file()]

    def write(self, file: Any, data: bytes) -> int:
        room = self.capacity - self.used()
        if len(data) > room:  # what fits is written, as on a real file system
            if room > 0:
                file.write(data[:room])
                file.flush()
            self.refusals += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = file.write(data)
        file.flush()
        return int(written)

    def holds(self, fd: int) -> bool:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        return any(path.is_relative_to(f) for f in self.folders)


class OnDisk:
    """A file opened by ``os.fdopen`` whose writes go through the disk."""

    def __init__(self, file: Any, disk: Disk) -> None:
        self._file, self._disk = file, disk

    def write(self, data: bytes) -> int:
        return self._disk.write(self._file, data)

    def __enter__(self) -> OnDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


@pytest.fixture
def small_disk(settings, tmp_path, monkeypatch) -> Callable[[int], Disk]:  # type: ignore[no-untyped-def]
    """A disk of the given capacity under the upload folders, from then on."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "media" / "upload-tmp")
    Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True)
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_FILE_BYTES": 8 * 2**20}

    def make(capacity: int) -> Disk:
        disk = Disk([tmp_path / "media"], capacity)
        monkeypatch.setattr(
            TemporaryUploadedFile, "write", property(lambda f: lambda b: disk.write(f.file, b))
        )
        fdopen = os.fdopen

        def opened(fd: int, *args: Any, **kwargs: Any) -> Any:
            file = fdopen(fd, *args, **kwargs)
            return OnDisk(file, disk) if disk.holds(fd) else file

        monkeypatch.setattr(os, "fdopen", opened)
        return disk

    return make


def jsonl(size: int) -> bytes:
    return (LINE * (size // len(LINE) + 1))[:size].rsplit(b"\n", 1)[0] + b"\n"


def page_upload(client, size: int, name: str = "big") -> Any:  # type: ignore[no-untyped-def]
    upload = SimpleUploadedFile(f"{name}.jsonl", jsonl(size))
    return client.post(
        reverse("studies:upload"), {"dataset": name, "task": "summarization", "file": upload}
    )


def test_a_disk_full_while_spooling_removes_the_upload_and_the_next_one_works(
    client, cast, small_disk
):
    disk = small_disk(3 * 2**20)
    client.force_login(cast["owner"])
    refused = page_upload(client, 4 * 2**20)  # spooled (over 2 MiB): the disk fills at 3
    assert disk.refusals == 1
    assert refused.status_code == 507, refused.content[:300]
    page = refused.content.decode()
    assert "The server could not store the file: No space left on device (ENOSPC)" in page
    assert refused.templates[0].name == "studies/upload.html"
    assert disk.files() == [] and ImportJob.objects.count() == 0  # nothing left, nothing queued
    accepted = page_upload(client, int(2.5 * 2**20), "fits")  # spooled too, then moved
    assert accepted.status_code == 302, accepted.content[:300]
    job = ImportJob.objects.get()
    assert [p.name for p in disk.files()] == [Path(job.upload.name).name]


def test_a_disk_full_while_storing_a_small_upload_removes_it_and_the_api_says_why(cast, small_disk):
    disk = small_disk(300 * KIB)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(cast['owner']).key}")

    def api_upload(size: int) -> Any:
        upload = SimpleUploadedFile("small.jsonl", jsonl(size))
        body = {"file": upload, "dataset": "small", "task": "summarization"}
        return client.post("/api/imports/", body, format="multipart")

    refused = api_upload(500 * KIB)  # kept in memory, then written to the media folder
    assert disk.refusals == 1
    assert refused.status_code == 507, refused.content[:300]
    message = refused.json()["detail"]
    assert message.startswith("The server could not store the file: No space left on device")
    assert refused.json()["errors"] == {"file": [message]}
    assert disk.files() == [] and ImportJob.objects.count() == 0
    accepted = api_upload(200 * KIB)
    assert accepted.status_code == 201, accepted.content[:300]
    assert len(disk.files()) == 1 and ImportJob.objects.count() == 1
