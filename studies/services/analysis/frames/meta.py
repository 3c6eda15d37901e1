"""What a frame's columns say about its runs and aspects, read from their rows (a few
dozen, whichever path reads the numbers)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from studies.models import Aspect, Dataset, MetricRun, label_text
from studies.services.analysis.frames.types import AspectInfo, RunInfo
from studies.services.runs.labels import distinct_labels, with_traits


def run_infos(dataset: Dataset, only_runs: Collection[int] | None = None) -> list[RunInfo]:
    """The dataset's runs (only these ids when given), by label then id, each labelled so
    that runs sharing a label show what differs."""
    found = MetricRun.objects.filter(dataset=dataset)
    if only_runs is not None:
        found = found.filter(pk__in=list(only_runs))
    rows = list(with_traits(found).order_by("label", "pk"))
    names = distinct_labels(rows)
    return [replace(RunInfo.of(r), label=names[r.pk]) for r in rows]


def aspect_infos(pks: Collection[int]) -> list[AspectInfo]:
    """These aspects, by code."""
    return [
        AspectInfo(
            a.pk,
            a.code,
            a.name,
            a.scale_min,
            a.scale_max,
            kind=a.kind,
            labels=tuple(label_text(v) for v in a.labels or ()) if a.is_labelled else (),
            positive=label_text(a.positive) if a.positive else "",
            ordered=bool(a.ordered),
        )
        for a in Aspect.objects.filter(pk__in=list(pks)).order_by("code")
    ]
