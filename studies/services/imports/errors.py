"""The errors of an import: a located problem in a file (:class:`LineError`) and a line
that cannot be read (:class:`RecordError`), shared by every layout's reader."""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


@dataclass(frozen=True)
class LineError:
    """A located problem in an input file."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        # the job's errors keep this text; the Python client reads line and field back
        # from it (client/src/concordia_client/models.py, ImportProblem.parse)
        where = f"line {self.line}" if self.line else "file"
        text = (
            f"{where}, field '{self.field}': {self.message}"
            if self.field
            else f"{where}: {self.message}"
        )
        # a message quotes the file's own text, which may hold what no database column
        # (the job's error list) can store
        return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class RecordError(Exception):
    """A line that cannot be turned into a record."""

    def __init__(self, errors: list[LineError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors
