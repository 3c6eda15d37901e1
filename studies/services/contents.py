"""What a dataset holds, for the pages' empty states: how many human judgments on which
aspects, and how many metric runs, so a page can say what is there and what to do next."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from studies.models import Dataset, Judgment, MetricRun


@dataclass(frozen=True)
class DatasetContents:
    """Counts read from the rows (nothing is kept as a running total)."""

    n_judgments: int
    aspects: tuple[str, ...]  # the judged aspects' names, by code
    n_runs: int
    n_runs_unfinished: int

    @property
    def aspect_list(self) -> str:
        """``Coherence``, ``Coherence and Fluency``, ``Coherence, Fluency and Relevance``."""
        if len(self.aspects) < 2:
            return "".join(self.aspects)
        return f"{', '.join(self.aspects[:-1])} and {self.aspects[-1]}"


def dataset_contents(dataset: Dataset) -> DatasetContents:
    """The dataset's judgments per aspect and its metric runs (two queries)."""
    per_aspect = (
        Judgment.objects.filter(output__document__dataset=dataset)
        .values("aspect__code", "aspect__name")
        .annotate(n=Count("id"))
        .order_by("aspect__code")
    )
    rows = list(per_aspect)
    unfinished = Q(
        status__in=[
            MetricRun.Status.PENDING,
            MetricRun.Status.RUNNING,
            MetricRun.Status.WAITING,  # for batch answers
        ]
    )
    runs = MetricRun.objects.filter(dataset=dataset).aggregate(
        n=Count("id"), unfinished=Count("id", filter=unfinished)
    )
    return DatasetContents(
        n_judgments=sum(row["n"] for row in rows),
        aspects=tuple(row["aspect__name"] for row in rows),
        n_runs=runs["n"],
        n_runs_unfinished=runs["unfinished"],
    )
