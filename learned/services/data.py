"""Training data from a study's rows: the tasks (dataset × aspect) of a setup, each
task's outputs with their aggregated human scores, and preference pairs from Likert
judgments and pairwise answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from annotation.models import PairwiseJudgment
from annotation.services.gold import flagged_for_dataset
from annotation.services.preferences import pairwise_answers
from scoring.learned.inputs import instruction
from scoring.learned.pairs import Pair, PairCounts, answer_pairs, likert_pairs
from studies.models import Aspect, Dataset, Judgment, Output
from studies.services.analysis.dashboards import frame_for
from studies.services.analysis.params import MatrixParams


class TrainingError(ValueError):
    """A training job that cannot be created as asked; the message says why and ``field``
    names the request's field to blame (``None``: the request as a whole)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Task:
    """One dataset × aspect, with the instruction its inputs start with."""

    dataset: Dataset
    aspect: Aspect

    @property
    def key(self) -> str:
        return f"{self.dataset.name}:{self.aspect.code}"

    @property
    def instruction(self) -> str:
        version = self.aspect.current_version()
        return instruction(self.dataset.task.description, version.name, version.definition)

    def frozen(self) -> dict[str, object]:
        version = self.aspect.current_version()
        return {
            "key": self.key,
            "dataset": self.dataset.name,
            "dataset_id": self.dataset.pk,
            "aspect": self.aspect.code,
            "aspect_version": version.version,
            "instruction": self.instruction,
        }


@dataclass
class TaskData:
    """A task's outputs (aligned lists), human scores and preference pairs.

    Item keys are ``(task key, output id)``: in multi-task training one output is an
    input once per aspect, each with its own instruction. Documents are named
    ``dataset/doc_key`` so that a split spans datasets.
    """

    task: Task
    output_ids: list[int] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)
    human: list[float] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    counts: PairCounts = field(default_factory=PairCounts)
    likert_counts: PairCounts = field(default_factory=PairCounts)
    answer_counts: PairCounts = field(default_factory=PairCounts)


def doc_name(dataset: Dataset, doc_key: str) -> str:
    return f"{dataset.name}/{doc_key}"


def judged_aspects(dataset: Dataset) -> list[Aspect]:
    """Aspects with at least one Likert judgment or pairwise answer on the dataset."""
    ids = set(
        Judgment.objects.filter(output__document__dataset=dataset)
        .values_list("aspect_id", flat=True)
        .distinct()
    )
    ids |= set(
        PairwiseJudgment.objects.filter(item__campaign__study__dataset=dataset)
        .values_list("aspect_id", flat=True)
        .distinct()
    )
    return list(Aspect.objects.filter(pk__in=ids).order_by("code"))


def tasks_for(
    setup: str, dataset: Dataset, aspect: Aspect, datasets: Sequence[Dataset] = ()
) -> tuple[list[Task], list[Task]]:
    """(training tasks, the target task) of a setup: ``single`` the target alone; ``multi``
    every judged aspect of the datasets (the target's included); ``cross`` the same less
    the target aspect. The target task is always evaluated on its test documents."""
    target = Task(dataset, aspect)
    pool = list(dict.fromkeys([dataset, *datasets]))
    if setup == "single":
        return [target], target
    every = [Task(d, a) for d in pool for a in judged_aspects(d)]
    if setup == "multi":
        return every, target
    if setup == "cross":
        return [t for t in every if t.aspect.pk != aspect.pk], target
    raise TrainingError(f"Unknown setup {setup!r}; use single, multi or cross.", field="setup")


def load_task(task: Task, *, margin: float, exclude_flagged: bool = False) -> TaskData:
    """The task's outputs, their aggregated Likert scores (as the dashboards aggregate
    them; flagged annotators left out when asked) and its pairs from both sources."""
    frame = frame_for(task.dataset, MatrixParams(exclude_flagged=exclude_flagged))
    column = next((i for i, a in enumerate(frame.aspects) if a.pk == task.aspect.pk), None)
    human = frame.human[:, column] if column is not None else np.full(frame.n_outputs, np.nan)
    docs = [doc_name(task.dataset, frame.doc_keys[c]) for c in frame.doc_codes]
    ids = [int(i) for i in frame.output_ids]
    keys = [(task.key, i) for i in ids]
    pairs, likert = likert_pairs(task.key, docs, keys, [float(v) for v in human], margin=margin)
    answers = pairwise_answers(
        dataset=task.dataset,
        aspect=task.aspect,
        exclude_annotators=flagged_for_dataset(task.dataset) if exclude_flagged else (),
    )
    more, answered = answer_pairs(
        task.key,
        (
            (
                doc_name(task.dataset, x.doc_key),
                (task.key, x.output_a_id),
                (task.key, x.output_b_id),
                x.choice,
            )
            for x in answers
        ),
    )
    if likert.candidates == 0:
        likert = PairCounts()  # nothing judged on a Likert scale: no unjudged outputs to report
    return TaskData(
        task,
        ids,
        docs,
        [float(v) for v in human],
        pairs + more,
        likert + answered,
        likert,
        answered,
    )


def outputs_by_id(ids: Sequence[int]) -> dict[int, Output]:
    return Output.objects.select_related("document").in_bulk(list(ids))
