"""Ids as people mean them. A ``doc_id`` or ``system_id``, and a score's name, is read
Unicode-normalised (NFC) with the white space around it removed: ``"café"`` typed on a
Mac (NFD) and on Windows (NFC), or ``"sys1 "`` exported by a spreadsheet, are the ids the
people who wrote them meant, so spellings that read alike are one id, never two documents
or two systems that look the same on every page.

Where two spellings meet they are merged, and the import summary says what was merged:

- in one file (:class:`Spellings`): the lines are one document (or system); if they then
  disagree (another source, another output for the same system) the usual located error
  names the line, and the spelling it was written with;
- with the rows already in the dataset (:func:`stored_spellings`), which may hold
  spellings from before this rule: a stored id that reads as one of the file's is renamed
  to the normalised spelling, dataset-wide for a system. When two stored ids read as the
  same one (a document stored twice, a system twice in one document) there is nothing to
  merge into: an error names both, and nothing is written.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from studies.models import Dataset, Document, Output
from studies.services.imports.records import LineError, Record, normal_id

MAX_NOTES = 20  # merges listed one by one in the summary; the rest are counted
# Stored ids that may not be normalised: a space at either end, or a character outside
# printable ASCII (ASCII text is its own NFC form). SQLite's REGEXP and PostgreSQL's ~ agree.
_MAYBE_UNNORMALISED = r"^ | $|[^ -~]"


LABELS = {"doc_id": "doc_id", "system_id": "system_id", "human": "human score", "metrics": "metric"}


@dataclass
class Spellings:
    """How a file spelled its ids and score names, for those written in more than one
    way or not in their normal form: (where, id) → {spelling: first line}."""

    found: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    # systems and names written as they are (few; documents are many, and the validator
    # already keeps each one's first line): (where, id) → first line
    clean: dict[tuple[str, str], int] = field(default_factory=dict)

    def see(self, item: Record, doc_first: tuple[int, bool] | None) -> None:
        """Note ``item``'s spellings; ``doc_first``: the line of its document's first
        record and whether that spelled the doc_id as is (None: this is the first)."""
        if not item.spelled and not self.found:  # the common case: all written as read
            clean, line = self.clean, item.line
            clean.setdefault(("system_id", item.system_id), line)
            for name in item.human:
                clean.setdefault(("human", name), line)
            for name in item.metrics:
                clean.setdefault(("metrics", name), line)
            return
        respelled = {(where, normal): raw for where, raw, normal in item.spelled}
        keys = [("doc_id", item.doc_id), ("system_id", item.system_id)]
        keys += [(group, name) for group in ("human", "metrics") for name in getattr(item, group)]
        for key in keys:
            raw = respelled.get(key)
            spellings = self.found.get(key)
            if raw is None:  # written as it is
                if spellings is not None:
                    spellings.setdefault(key[1], item.line)
                elif key[0] != "doc_id":
                    self.clean.setdefault(key, item.line)
                continue
            if spellings is None:
                spellings = self.found[key] = {}
                if key[0] == "doc_id" and doc_first and doc_first[1]:
                    spellings[key[1]] = doc_first[0]
                elif key in self.clean:
                    spellings[key[1]] = self.clean[key]
            spellings.setdefault(raw, item.line)

    def notes(self) -> list[str]:
        """What the summary says: each merge of two spellings or more, then how many ids
        were read in their normal form."""
        merged, normalised = [], []
        for (where, key), spellings in sorted(self.found.items()):
            written = sorted(spellings.items(), key=lambda s: s[1])
            if len(written) > 1:
                ways = ", ".join(f"{s!r} (line {line})" for s, line in written)
                merged.append(
                    f"{LABELS[where]} {key!r} was written {len(written)} ways, merged: {ways}"
                )
            else:
                spelling, line = written[0]
                normalised.append(f"line {line}: {LABELS[where]} {spelling!r} read as {key!r}")
        notes = merged[:MAX_NOTES]
        if len(merged) > MAX_NOTES:
            notes.append(f"... and {len(merged) - MAX_NOTES} more merged ids")
        if normalised:
            notes.append(
                f"{len(normalised)} id{'s' if len(normalised) != 1 else ''} or name"
                f"{'s' if len(normalised) != 1 else ''} trimmed or Unicode-normalised (NFC), "
                f"e.g. {normalised[0]}"
            )
        return notes


@dataclass
class StoredRenames:
    """Stored ids to rename to their normal spelling before the file is written."""

    documents: dict[int, tuple[str, str]] = field(default_factory=dict)  # pk -> (was, now)
    systems: dict[str, str] = field(default_factory=dict)  # stored spelling -> normal

    def notes(self) -> list[str]:
        return [
            f"doc_id {was!r} already in the dataset renamed {now!r}, merged with the file's"
            for was, now in sorted(self.documents.values())
        ] + [
            f"system_id {was!r} already in the dataset renamed {now!r}, merged with the file's"
            for was, now in sorted(self.systems.items())
        ]

    def apply(self, dataset: Dataset) -> None:
        """Rename the stored rows (inside the import's transaction)."""
        for pk, (_was, now) in self.documents.items():
            Document.objects.filter(pk=pk).update(doc_key=now)
        for was, now in self.systems.items():
            Output.objects.filter(document__dataset=dataset, system_id=was).update(system_id=now)


def stored_spellings(
    dataset: Dataset | None, doc_ids: set[str], system_ids: set[str]
) -> tuple[StoredRenames, list[LineError]]:
    """The renames that merge the dataset's stored spellings with the file's ids (only
    ids the file names), or the errors where two stored ids read as one."""
    renames, errors = StoredRenames(), []
    if dataset is None:
        return renames, errors
    documents = Document.objects.filter(dataset=dataset, doc_key__regex=_MAYBE_UNNORMALISED)
    stored: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for pk, key in documents.values_list("pk", "doc_key").order_by():
        if normal_id(key) != key and normal_id(key) in doc_ids:
            stored[normal_id(key)].append((pk, key))
    taken = set(
        Document.objects.filter(dataset=dataset, doc_key__in=list(stored)).values_list(
            "doc_key", flat=True
        )
    )
    for key, rows in sorted(stored.items()):
        if len(rows) > 1 or key in taken:
            spellings = sorted([k for _pk, k in rows] + ([key] if key in taken else []))
            errors.append(_ambiguous("doc_id", key, spellings, "documents"))
        else:
            renames.documents[rows[0][0]] = (rows[0][1], key)
    outputs = Output.objects.filter(document__dataset=dataset)
    systems: dict[str, list[str]] = defaultdict(list)
    found = outputs.filter(system_id__regex=_MAYBE_UNNORMALISED).values_list("system_id", flat=True)
    for spelling in sorted(set(found)):
        if normal_id(spelling) != spelling and normal_id(spelling) in system_ids:
            systems[normal_id(spelling)].append(spelling)
    for key, spellings in sorted(systems.items()):
        twice = (
            outputs.filter(system_id__in=[key, *spellings])
            .values("document_id")
            .annotate(n=Count("pk"))
            .filter(n__gt=1)
            .order_by("document__doc_key")
            .values_list("document__doc_key", flat=True)
            .first()
        )
        if twice is not None:
            errors.append(_ambiguous("system_id", key, [key, *spellings], f"outputs of {twice!r}"))
        else:
            renames.systems.update(dict.fromkeys(spellings, key))
    return renames, errors


def _ambiguous(where: str, key: str, spellings: list[str], what: Any) -> LineError:
    listed = " and ".join(repr(s) for s in spellings)
    return LineError(
        0,
        where,
        f"{key!r} matches {len(spellings)} {what} already in the dataset ({listed}), which "
        "read alike once trimmed and Unicode-normalised: delete the extra one (or the "
        "dataset) before importing into it",
    )
