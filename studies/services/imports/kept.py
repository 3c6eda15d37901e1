"""The items an import validated, kept for its write.

The validation pass reads and parses every line of the file; the write needs the same
records again. Reading and parsing the file a second time cost as much as the validation
itself, so the validator keeps each valid item as it goes: chunks of items pickled into a
spooled temporary file (in memory while small, then on disk in the data folder, beside
the uploads), read back chunk by chunk by the write. Memory stays bounded by a chunk,
whatever the file's size, and what is written is exactly what was validated, even if the
file changes on disk in between. The lines of one document that follow each other share
its source and references (pickled once per chunk, not once per line).

The file is private to this import (created and read by the same call, never shared), so
:mod:`pickle` reads back only what this process wrote.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings

from studies.services.imports.records import Record

CHUNK = 1000  # items pickled together: one chunk's items in memory at a time
IN_MEMORY = 16 * 2**20  # bytes kept in memory before the spool moves to a file


class Kept:
    """Valid items (records or pairs), added in the file's order and given back in it.

    Once the validator finds a problem nothing will be written, so :meth:`drop` frees
    what was kept and later items are not kept."""

    def __init__(self, chunk: int = CHUNK, in_memory: int = IN_MEMORY) -> None:
        self.chunk = chunk
        self.in_memory = in_memory
        self.count = 0
        self._pending: list[Any] = []
        self._file: Any = None
        self._dropped = False
        self._previous: Record | None = None

    def add(self, item: Any) -> None:
        if self._dropped:
            return
        if item.__class__ is Record:
            self._share(item)
        self._pending.append(item)
        self.count += 1
        if len(self._pending) >= self.chunk:
            self._flush()

    def _share(self, record: Record) -> None:
        """Point ``record``'s source and references at the previous line's when that line
        is of the same document and they are equal (the same text, one object)."""
        previous = self._previous
        self._previous = record
        if previous is None or record.doc_id != previous.doc_id:
            return
        # a frozen record's field set to an equal value: nothing a reader could see changes
        if record.source == previous.source:
            object.__setattr__(record, "source", previous.source)
        if record.references == previous.references:
            object.__setattr__(record, "references", previous.references)

    def _flush(self) -> None:
        if not self._pending:
            return
        if self._file is None:
            folder = Path(settings.DATA_DIR) / "tmp"
            folder.mkdir(parents=True, exist_ok=True)
            self._file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 -- closed by close()
                max_size=self.in_memory, prefix="import-", dir=str(folder)
            )
        pickle.dump(self._pending, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._pending = []

    def drop(self) -> None:
        """Keep nothing more, and free what was kept (the file has a problem)."""
        self._dropped = True
        self._pending = []
        self._previous = None
        self.close()

    def __iter__(self) -> Iterator[Any]:
        """The kept items in the order they were added (once all are added)."""
        if self._dropped:
            raise RuntimeError("the validated items were dropped: the file has problems")
        if self._file is None:  # fewer items than one chunk: never pickled
            yield from self._pending
            return
        self._flush()
        self._file.seek(0)
        while True:
            try:
                items = pickle.load(self._file)
            except EOFError:
                return
            yield from items

    def close(self) -> None:
        """Remove the spool (its temporary file, if it grew into one)."""
        if self._file is not None:
            self._file.close()
            self._file = None
