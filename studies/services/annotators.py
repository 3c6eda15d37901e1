"""Who made a judgment, as every analysis tells annotators apart (the one place that
says it).

An annotator is either an **account** (answers given in a campaign) or an **imported
annotator**: a rater an import file names (a JSONL line's ``annotators``, a CSV's
``human_<aspect>@<rater>`` columns, a pairs file's ``annotator``), or, where the file
gives one value per output (``human``), the file itself. Imported annotators have no
account: they are the pair (import file, rater), so the same rater name in two files is
two annotators (files number anonymous raters alike: ``a1``, ``a2``), and a rater is
shown by name with the file beside it.

The ceiling, the report card's agreement and alternative-annotator test, MACE, the
pairwise judge's human preferences, the frames' aggregation and the output browser all
read identities from here, so one file with three raters counts exactly as three files
with one annotator each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Imported:
    """An imported annotator: ``rater`` of ``file`` (``rater`` empty: the file)."""

    file: str
    rater: str = ""

    @property
    def name(self) -> str:
        """How pages and exports name it: ``rater3 (wmt.jsonl)``, or ``file wmt.jsonl``."""
        return f"{self.rater} ({self.file})" if self.rater else f"file {self.file}"


def key(annotator_id: int | None, import_file: str, rater: str) -> str:
    """A string that tells the annotator of a judgment apart from every other:
    ``user:<id>`` for an account, ``file:<name>`` for a file as one annotator,
    ``rater:<length of name>:<name>:<rater>`` for a rater of a file (the length keeps
    any file name and rater apart)."""
    if annotator_id is not None:
        return f"user:{annotator_id}"
    return f"rater:{len(import_file)}:{import_file}:{rater}" if rater else f"file:{import_file}"


def name(annotator_id: int | None, import_file: str, rater: str, username: str = "") -> str:
    """How pages name the annotator of a judgment (an account by ``username``)."""
    if annotator_id is not None:
        return username or f"user {annotator_id}"
    return Imported(import_file, rater).name


def sorted_imported(found: Iterable[tuple[str, str]]) -> list[Imported]:
    """The distinct imported annotators among (file, rater) pairs, in their one order
    (by file, then rater): the order codes and rows follow everywhere."""
    return sorted({Imported(f, r) for f, r in found})
