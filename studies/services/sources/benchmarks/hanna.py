"""HANNA (Chhun et al., COLING 2022; TACL 2024): 1,056 stories (96 WritingPrompts prompts,
10 story generation systems plus the human story) each rated 1-5 by 3 Mechanical Turk
workers on six criteria.

Layout (https://github.com/dig-team/hanna-benchmark-asg, README "Data", commit 282f275):
``hanna_stories_annotations.csv``, one row per (story, worker): ``Story ID`` (0-1055),
``Prompt``, ``Human`` (the human story for the prompt), ``Story`` (the rated story),
``Model``, ``Relevance``, ``Coherence``, ``Empathy``, ``Surprise``, ``Engagement``,
``Complexity``, ``Worker ID``, ``Assignment ID``, ``Work time in seconds``, ``Name``.

Emits one record per story (its rows gathered wherever they are in the file):
``doc_id`` ``p-<digest of the prompt>``, ``system_id`` the ``Model``, the human story as
reference (none for the ``Human`` system's own story), ``annotators`` keyed by ``Worker
ID`` (the same worker throughout the file) and ``human`` their mean.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import digest, human_from, record
from studies.services.sources.readers import fail, find_file, grouped, iter_delimited
from studies.services.sources.spec import Benchmark, Conversion, UrlRelease
from studies.services.sources.types import AspectSpec, Licence, Row

PAPER = "Chhun et al. 2022, HANNA, Table 1 (the six criteria)"
CRITERIA = {
    "relevance": ("Relevance", "How well the story matches its prompt."),
    "coherence": ("Coherence", "How much the story makes sense."),
    "empathy": ("Empathy", "How well the reader understood the character's emotions."),
    "surprise": ("Surprise", "How surprising the end of the story was."),
    "engagement": ("Engagement", "How much the reader engaged with the story."),
    "complexity": ("Complexity", "How elaborate the story is."),
}
ASPECTS = tuple(AspectSpec.scale(name, 1, 5, text, PAPER) for name, (_c, text) in CRITERIA.items())
_BY_NAME = {spec.name: spec for spec in ASPECTS}
REQUIRED = ("Story ID", "Prompt", "Human", "Story", "Model", "Worker ID") + tuple(
    column for column, _t in CRITERIA.values()
)
HUMAN_SYSTEM = "Human"


def read(path: Path, options: dict[str, Any]) -> Conversion:
    file = find_file(path, "hanna_stories_annotations.csv", "**/hanna_stories_annotations.csv")

    def rows() -> Iterator[tuple[str, Any]]:
        for number, row in iter_delimited(file):
            missing = [c for c in REQUIRED if c not in row]
            if missing:
                raise fail(file, f"line {number}", missing[0], "missing column")
            ratings = {}
            for name, (column, _text) in CRITERIA.items():
                ratings[name] = _rating(file, number, column, row[column])
            if not row["Worker ID"].strip():
                raise fail(file, f"line {number}", "Worker ID", "empty")
            yield (
                row["Story ID"].strip(),
                {
                    "line": number,
                    "prompt": row["Prompt"],
                    "human": row["Human"],
                    "story": row["Story"],
                    "model": row["Model"].strip(),
                    "worker": row["Worker ID"].strip(),
                    "ratings": ratings,
                },
            )

    def records() -> Iterator[Row]:
        for story_id, ratings in grouped(rows()):
            first = ratings[0]
            for other in ratings[1:]:
                if (other["story"], other["model"], other["prompt"]) != (
                    first["story"],
                    first["model"],
                    first["prompt"],
                ):
                    raise fail(
                        file,
                        f"line {other['line']}",
                        "Story",
                        f"Story ID {story_id} names another story than on line {first['line']}",
                    )
            annotators: dict[str, dict[str, Any]] = {name: {} for name in CRITERIA}
            for row in ratings:
                for name, value in row["ratings"].items():
                    annotators[name][row["worker"]] = value
            yield record(
                f"p-{digest(first['prompt'], 10)}",
                first["model"],
                first["prompt"],
                first["story"],
                references=[] if first["model"] == HUMAN_SYSTEM else [first["human"]],
                human=human_from(_BY_NAME, annotators),
                annotators=annotators,
                context={"story_id": story_id},
            )

    return Conversion(records, aspects=ASPECTS)


def _rating(file: Path, number: int, column: str, text: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise fail(file, f"line {number}", column, f"expected a rating 1-5, got {text!r}") from None
    if not 1 <= value <= 5:
        raise fail(file, f"line {number}", column, f"{text} is outside 1-5")
    return int(value) if value.is_integer() else value


BENCHMARK = Benchmark(
    name="hanna",
    title="HANNA (story generation, 6 criteria, 3 raters)",
    task="custom",
    licence=Licence(
        "MIT", "https://github.com/dig-team/hanna-benchmark-asg/blob/main/LICENSE", True
    ),
    citation=(
        "@inproceedings{chhun2022human, title={Of Human Criteria and Automatic Metrics: A "
        "Benchmark of the Evaluation of Story Generation}, author={Chhun, Cyril and Colombo, "
        "Pierre and Suchanek, Fabian M. and Clavel, Chlo{\\'e}}, booktitle={Proceedings of "
        "COLING}, pages={5794--5836}, year={2022}}"
    ),
    homepage="https://github.com/dig-team/hanna-benchmark-asg",
    release=UrlRelease(
        "https://raw.githubusercontent.com/dig-team/hanna-benchmark-asg/{revision}",
        "282f27536a5d05ad4ce14298abcd70c45668fed2",
        ("hanna_stories_annotations.csv",),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
)
