"""What the tuning commands (``tune_judge``, ``jury``) look up from their options: an
aspect by name or code among a run's owner's, and an optional study; a LookupError
names the option when one is missing."""

from __future__ import annotations

from typing import Any

from studies.models import Aspect, Study
from studies.services.lookup import aspect_names, find_aspect


def aspect_and_study(owner: Any, aspect: str, study_id: int | None) -> tuple[Aspect, Study | None]:
    """The aspect named ``aspect`` (the owner's or a shared one) and the study ``study_id``."""
    found = find_aspect(aspect_names(owner), aspect)
    if found is None:
        raise LookupError(f"--aspect: no aspect {aspect!r}")
    if study_id is None:
        return found, None
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        raise LookupError(f"--study: no study {study_id}")
    return found, study
