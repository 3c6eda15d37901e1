"""SummEval (Fabbri et al., TACL 2021): 16 systems' summaries of 100 CNN/DailyMail test
articles, each rated 1-5 by 3 experts and 5 crowd workers on four aspects.

Layout (https://github.com/Yale-LILY/SummEval, README "Human annotations" and
``data_processing/pair_data.py`` at commit 81b59ad): ``model_annotations.aligned.jsonl``,
one JSON object per summary: ``id`` (the CNN/DM document, ``dm-test-<sha1>``),
``model_id`` (``M0``..``M23``), ``decoded`` (the summary), ``references`` (11: the CNN/DM
highlights, then 10 crowd-written summaries), ``expert_annotations`` (3 objects of
``coherence, consistency, fluency, relevance``), ``turker_annotations`` (5 such objects),
``filepath`` (the CNN/DM story file). The release ships without article text:
``pair_data.py`` adds it as ``text`` (the story before its first ``@highlight``, lines
stripped and joined by spaces) and writes ``model_annotations.aligned.paired.jsonl``. This
loader reads either file; for the unpaired one give ``stories=DIR`` (the unpacked CNN/DM
stories) and it pairs the same way.

Emits: per summary ``annotators`` for the chosen group (``expert1``..``expert3``, the
i-th entry of ``expert_annotations``; crowd workers, anonymous, ``turker1``..``turker5``
per summary) and ``human`` = their mean, which for the experts is what
``shared/data/summeval.jsonl`` holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import human_from, record
from studies.services.sources.readers import fail, find_file, iter_jsonl
from studies.services.sources.spec import Benchmark, Conversion, UrlRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row

PAPER = "Fabbri et al. 2021, SummEval, section 4 (annotation protocol)"
ASPECTS = (
    AspectSpec.scale(
        "coherence",
        1,
        5,
        "The collective quality of all sentences. The summary should be well-structured and "
        "well-organized; it should not just be a heap of related information, but should "
        "build from sentence to sentence to a coherent body of information about a topic.",
        PAPER,
    ),
    AspectSpec.scale(
        "consistency",
        1,
        5,
        "The factual alignment between the summary and the summarized source. A factually "
        "consistent summary contains only statements that are entailed by the source "
        "document. Annotators were also asked to penalize summaries that contained "
        "hallucinated facts.",
        PAPER,
    ),
    AspectSpec.scale(
        "fluency",
        1,
        5,
        "The quality of individual sentences. Sentences in the summary should have no "
        "formatting problems, capitalization errors or obviously ungrammatical sentences "
        "(e.g., fragments, missing components) that make the text difficult to read.",
        PAPER,
    ),
    AspectSpec.scale(
        "relevance",
        1,
        5,
        "Selection of important content from the source. The summary should include only "
        "important information from the source document. Annotators were instructed to "
        "penalize summaries which contained redundancies and excess information.",
        PAPER,
    ),
)
_BY_NAME = {spec.name: spec for spec in ASPECTS}
FILES = (
    "model_annotations.aligned.paired.jsonl",
    "model_annotations.aligned.jsonl",
    "**/model_annotations.aligned.paired.jsonl",
    "**/model_annotations.aligned.jsonl",
)
GROUPS = {"expert": ("expert_annotations", "expert"), "turker": ("turker_annotations", "turker")}


def read(path: Path, options: dict[str, Any]) -> Conversion:
    file = find_file(path, *FILES)
    stories = Path(options["stories"]) if options["stories"] else None
    groups = ("expert", "turker") if options["annotators"] == "both" else (options["annotators"],)

    def records() -> Iterator[Row]:
        for number, obj in iter_jsonl(file):
            yield _record(file, number, obj, groups, stories)

    return Conversion(records, aspects=ASPECTS)


def _record(
    file: Path, number: int, obj: Any, groups: tuple[str, ...], stories: Path | None
) -> Row:
    where = f"line {number}"
    if not isinstance(obj, dict):
        raise fail(file, where, "", "expected a JSON object")
    for name in ("id", "model_id", "decoded"):
        if not isinstance(obj.get(name), str):
            raise fail(file, where, name, "missing, or not text")
    source = obj.get("text")
    if not isinstance(source, str):
        source = _story(file, where, obj, stories)
    annotators: dict[str, dict[str, Any]] = {spec.name: {} for spec in ASPECTS}
    for group in groups:
        key, prefix = GROUPS[group]
        ratings = obj.get(key)
        if not isinstance(ratings, list):
            raise fail(file, where, key, "expected a list of rating objects")
        for i, rating in enumerate(ratings, start=1):
            for spec in ASPECTS:
                value = rating.get(spec.name) if isinstance(rating, dict) else None
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise fail(file, where, f"{key}[{i - 1}].{spec.name}", "expected a number")
                if not spec.low <= value <= spec.high:  # type: ignore[operator]
                    raise fail(
                        file, where, f"{key}[{i - 1}].{spec.name}", f"{value} is outside 1-5"
                    )
                annotators[spec.name][f"{prefix}{i}"] = value
    references = obj.get("references")
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        raise fail(file, where, "references", "expected a list of strings")
    return record(
        obj["id"],
        obj["model_id"],
        source,
        obj["decoded"],
        references=references,
        human=human_from(_BY_NAME, annotators),
        annotators=annotators,
    )


def _story(file: Path, where: str, obj: dict[str, Any], stories: Path | None) -> str:
    """The article for an unpaired line, read as ``pair_data.py`` reads it."""
    relative = obj.get("filepath")
    if stories is None:
        raise fail(
            file,
            where,
            "text",
            "no article text: this is the unpaired release; give stories=DIR (the CNN/DM "
            "stories) or the file pair_data.py writes",
        )
    if not isinstance(relative, str):
        raise fail(file, where, "filepath", "missing, so the article cannot be found")
    parts = Path(relative).parts
    for start in range(len(parts)):  # the stories folder may sit at any level of filepath
        candidate = stories.joinpath(*parts[start:])
        if candidate.is_file():
            content = candidate.read_text(encoding="utf-8").split("@highlight")[0]
            return " ".join(line.strip() for line in content.split("\n") if line.strip())
    raise fail(file, where, "filepath", f"{relative} not found under {stories}")


BENCHMARK = Benchmark(
    name="summeval",
    title="SummEval (CNN/DM summaries, expert and crowd ratings)",
    task="summarization",
    licence=Licence(
        "MIT",
        "https://github.com/Yale-LILY/SummEval/blob/master/LICENSE",
        True,
        "the CNN/DailyMail articles are not part of the release",
    ),
    citation=(
        "@article{fabbri2021summeval, title={SummEval: Re-evaluating Summarization Evaluation}, "
        "author={Fabbri, Alexander R and Kry{\\'s}ci{\\'n}ski, Wojciech and McCann, Bryan and "
        "Xiong, Caiming and Socher, Richard and Radev, Dragomir}, journal={Transactions of the "
        "Association for Computational Linguistics}, volume={9}, pages={391--409}, year={2021}}"
    ),
    homepage="https://github.com/Yale-LILY/SummEval",
    release=UrlRelease(
        "https://storage.googleapis.com/sfr-summarization-repo-research",
        "81b59ad",  # the README commit that links this (unversioned) object
        ("model_annotations.aligned.jsonl",),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(
        Option(
            "annotators",
            str,
            "expert",
            "whose ratings: expert, turker or both",
            ("expert", "turker", "both"),
        ),
        Option("stories", str, "", "folder of CNN/DM story files, to pair the unpaired release"),
    ),
)
