"""The aspect a run request names, among those a run on its dataset may use."""

from __future__ import annotations

from studies.models import Aspect, Dataset
from studies.permissions import dataset_aspects
from studies.services.runs.types import RunError


def find_aspect(name: str, dataset: Dataset) -> Aspect:
    """The aspect of that code or name among those a run on ``dataset`` may use: the
    shared ones and the dataset owner's (another researcher's never match)."""
    usable = dataset_aspects(dataset)
    aspect = usable.filter(code__iexact=name).first() or usable.filter(name__iexact=name).first()
    if aspect is None:
        raise RunError(f"Unknown aspect {name!r}.")
    return aspect
