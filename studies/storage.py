"""The file storage of uploads (``STORAGES["default"]``): Django's file system storage,
except that a write that fails part-way (a full disk, a quota) removes what it wrote. A
truncated file left behind would hold the space a later upload needs, and no import job
points at it, so nothing would ever remove it.

A spooled upload (a temporary file, ``FILE_UPLOAD_TEMP_DIR``, by default on the same file
system as ``MEDIA_ROOT``) is renamed into place: no copy, no second helping of space.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from django.core.files.storage import FileSystemStorage

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


class UploadStorage(FileSystemStorage):
    """Saves a file whole or not at all (see the module)."""

    def _save(self, name: str, content: Any) -> str:
        os.makedirs(os.path.dirname(self.path(name)), exist_ok=True)
        while True:  # the name was free when chosen; another writer may take it first
            try:
                fd = os.open(self.path(name), _NEW_FILE, 0o666)
            except FileExistsError:
                name = self.get_available_name(name)
            else:
                break
        full_path = self.path(name)
        try:
            with os.fdopen(fd, "wb") as target:
                if not _renamed(content, full_path):
                    for chunk in content.chunks():
                        target.write(chunk)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(full_path)  # ours: made above with O_EXCL
            raise
        if self.file_permissions_mode is not None:
            os.chmod(full_path, self.file_permissions_mode)
        return os.path.relpath(full_path, self.location).replace("\\", "/")


def _renamed(content: Any, target: str) -> bool:
    """Move a spooled upload onto ``target`` (the empty file made for it) when both are on
    one file system; False when it must be copied instead."""
    source = getattr(content, "temporary_file_path", None)
    if source is None:
        return False
    try:
        os.rename(source(), target)
    except OSError:  # another file system: copy it
        return False
    return True
