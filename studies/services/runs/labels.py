"""Run labels that tell runs apart: where two runs of a dataset share a label (a template
edited between them, another aspect definition, a run over fewer documents), each
is shown with what differs, "[template v2]", "[3 docs]", and else its id, "[run 17]"."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from django.db import IntegrityError, transaction

from studies.models import MetricRun

MAX_LABEL = 200


class RenameError(ValueError):
    """A new label that cannot be taken (empty, too long, another run's: ``taken``)."""

    def __init__(self, message: str, *, taken: bool = False) -> None:
        super().__init__(message)
        self.taken = taken


def _coverage(run: MetricRun) -> str:
    config = run.config or {}
    if config.get("doc_keys"):
        return f"{len(config['doc_keys'])} docs"
    if config.get("limit_docs"):
        return f"{config['limit_docs']} docs"
    return "all docs"


# what may tell two runs with one label apart, in the order a reader cares about
TRAITS: tuple[Callable[[MetricRun], str], ...] = (
    lambda run: f"template v{run.template_version.version}" if run.template_version else "",
    lambda run: f"{run.aspect_version}" if run.aspect_version else "",
    lambda run: f"steps v{run.steps.version}" if run.steps else "",
    _coverage,
)


def distinct_labels(runs: Iterable[MetricRun]) -> dict[int, str]:
    """Each run's label, with what tells it apart from the others of the same label
    (as many traits as differ within its group; the run id when none does)."""
    groups: dict[str, list[MetricRun]] = defaultdict(list)
    for run in runs:
        groups[run.label].append(run)
    shown: dict[int, str] = {}
    for label, group in groups.items():
        if len(group) == 1:
            shown[group[0].pk] = label
            continue
        differing = [t for t in TRAITS if len({t(run) for run in group}) > 1]
        for run in group:
            parts = [t(run) for t in differing if t(run)]
            shown[run.pk] = f"{label} [{', '.join(parts)}]" if parts else label
        counts: dict[str, int] = defaultdict(int)
        for run in group:
            counts[shown[run.pk]] += 1
        for run in group:  # still alike: the id tells them apart
            if counts[shown[run.pk]] > 1:
                shown[run.pk] = f"{shown[run.pk]} [run {run.pk}]"
    return shown


def with_traits(queryset: Any) -> Any:
    """The runs with what :func:`distinct_labels` reads, in one query."""
    return queryset.select_related("template_version", "aspect_version__aspect", "steps")


def rename_run(run: MetricRun, label: str) -> MetricRun:
    """Give the run a new label (tables, exports and the API name it so from now on);
    no other run of its dataset may have it. Bumps the data version: cached tables show
    the new name."""
    label = " ".join(label.split())
    if not label:
        raise RenameError("The new name is empty.")
    if len(label) > MAX_LABEL:
        raise RenameError(f"The new name is {len(label)} characters long; at most {MAX_LABEL}.")
    taken = MetricRun.objects.filter(dataset_id=run.dataset_id, label=label).exclude(pk=run.pk)
    if taken.exists():
        raise RenameError(f"Another run of this dataset is named {label!r}.", taken=True)
    try:
        with transaction.atomic():
            MetricRun.objects.filter(pk=run.pk).update(label=label)
    except IntegrityError as exc:  # an imported run with that label, added meanwhile
        raise RenameError(f"Another run of this dataset is named {label!r}.", taken=True) from exc
    run.label = label
    run.dataset.bump_data_version()
    return run
