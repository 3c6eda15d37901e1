"""Finding a dataset from what an operator types on the shell (an id, ``owner/name``, or
a name when only one owner has a dataset of that name), and an aspect from a name as an
import file or a command gives it (its code, name, stable key or an earlier name)."""

from __future__ import annotations

from typing import Any

from django.db.models import F

from studies.models import Aspect, Dataset, aspect_key
from studies.permissions import owned_aspects


class DatasetNotFound(LookupError):
    """No dataset, or several (``ambiguous``), match; the message says which."""

    def __init__(self, message: str, *, ambiguous: bool = False) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


def find_dataset(ref: str) -> Dataset:
    """The dataset ``ref`` names: ``12``, ``alice/summeval`` or ``summeval`` (unambiguous).

    An unowned dataset (imported without ``--owner``) is ``-/name``.
    """
    query = Dataset.objects.select_related("task", "owner")
    ref = ref.strip()
    if ref.isdigit():
        found = query.filter(pk=int(ref)).first()
        if found is None:
            raise DatasetNotFound(f"no dataset with id {ref}")
        return found
    if "/" in ref:
        owner, name = ref.split("/", 1)
        by_owner = (
            query.filter(owner__isnull=True)
            if owner == "-"
            else query.filter(owner__username=owner)
        )
        found = by_owner.filter(name=name).first()
        if found is None:
            raise DatasetNotFound(f"no dataset {name!r} owned by {owner!r}")
        return found
    matches = list(query.filter(name=ref).order_by("pk")[:20])
    if not matches:
        raise DatasetNotFound(f"no dataset named {ref!r}")
    if len(matches) > 1:
        names = ", ".join(f"{qualified_name(d)} (id {d.pk})" for d in matches)
        raise DatasetNotFound(
            f"several datasets are named {ref!r}: {names}; give an id or owner/name",
            ambiguous=True,
        )
    return matches[0]


def qualified_name(dataset: Dataset) -> str:
    """``owner/name`` (``-/name`` for an unowned dataset)."""
    owner = dataset.owner.get_username() if dataset.owner_id else "-"
    return f"{owner}/{dataset.name}"


def aspect_names(owner: Any) -> dict[str, Aspect]:
    """Name (lower-cased) → aspect, among the shared aspects and ``owner``'s own: codes,
    names, stable keys and earlier names (aliases) all match; the owner's own first, so a
    shared aspect's alias never hides them. What imports and ``judge_gate`` accept."""
    names: dict[str, Aspect] = {}
    for aspect in owned_aspects(owner).order_by(F("owner").asc(nulls_last=True), "pk"):
        for name in sorted(aspect.file_names()):
            names.setdefault(name, aspect)
    return names


def find_aspect(names: dict[str, Aspect], name: str) -> Aspect | None:
    """The aspect ``name`` means in ``names`` (:func:`aspect_names`), as typed or as its
    key (``"Semantic Coverage"`` → ``semantic_coverage``); None when none."""
    return names.get(name.strip().lower()) or names.get(aspect_key(name))
