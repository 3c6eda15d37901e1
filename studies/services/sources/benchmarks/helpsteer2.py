"""HelpSteer2 (Wang et al., NeurIPS 2024 Datasets and Benchmarks; HelpSteer2-Preference,
ICLR 2025): 21,362 responses (two per prompt) rated 0-4 on five attributes by 3-5 Scale AI
annotators, the individual ratings, and pairwise preferences between the two responses.

Layout (https://huggingface.co/datasets/nvidia/HelpSteer2, dataset card, commit 990b271):
``train.jsonl.gz`` and ``validation.jsonl.gz``, one object per response: ``prompt``,
``response``, ``helpfulness``, ``correctness``, ``coherence``, ``complexity``,
``verbosity`` (integers 0-4: the mean of the three annotators who agree most, rounded);
consecutive lines share a prompt. ``disagreements/disagreements.jsonl.gz``: the same
fields with each attribute a list of the individual annotators' ratings (2-5 of them).
``preference/preference.jsonl.gz``: ``split``, ``prompt``, ``response_1``, ``response_2``,
``preference_strength`` (-3: response 1 much better ... 3: response 2 much better),
``preference_statement``, ``preference_elaboration``, ``three_most_similar_preferences``,
``all_preferences_unprocessed`` (``[{"strength", "justification"}]``, one per annotator).

Emits one record per rated response: ``doc_id`` ``p-<digest of the prompt>``,
``system_id`` ``r-<digest of the response>`` (the release names no models, and the digest
ties a response's ratings to its preference pairs), ``human`` the released labels,
``annotators`` ``a1``..``aN`` from the disagreements file (anonymous, numbered per
response), ``context.split``; and one pair line per annotator in
``all_preferences_unprocessed`` (aspect ``preference``, sign of ``strength`` for the
winner, ``strength`` its magnitude).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import digest, in_order, pair, record
from studies.services.sources.readers import fail, find_file, iter_jsonl
from studies.services.sources.spec import Benchmark, Conversion, HubRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row, SourceError

CARD = "HelpSteer2 dataset card (nvidia/HelpSteer2), 'Dataset Description'"
ATTRIBUTES = {
    "helpfulness": "Overall helpfulness of the response to the prompt.",
    "correctness": "Inclusion of all pertinent facts without errors.",
    "coherence": "Consistency and clarity of expression.",
    "complexity": "Intellectual depth required to write the response (whether it could be "
    "written by anyone with basic language competency or requires deep domain expertise).",
    "verbosity": "Amount of detail included in the response, relative to what is asked for "
    "in the prompt.",
}
ASPECTS = (
    *(AspectSpec.scale(name, 0, 4, text, CARD) for name, text in ATTRIBUTES.items()),
    AspectSpec.categorical(
        "preference",
        ("a", "b", "tie"),
        "Which of the two responses to the prompt the annotator prefers (the strength from "
        "-3, response 1 much better, to 3, response 2 much better; 0 about the same).",
        source="HelpSteer2 dataset card, 'Preferences'",
    ),
)
SPLITS = {"train": "train.jsonl.gz", "validation": "validation.jsonl.gz"}


def system_of(response: str) -> str:
    return f"r-{digest(response, 10)}"


def read(path: Path, options: dict[str, Any]) -> Conversion:
    splits = tuple(SPLITS) if options["split"] == "both" else (options["split"],)

    def records() -> Iterator[Row]:
        individual = _individual(path) if options["annotators"] else {}
        for split in splits:
            file = find_file(path, SPLITS[split], f"**/{SPLITS[split]}")
            for number, obj in iter_jsonl(file):
                where = f"line {number}"
                prompt, response = _texts(file, where, obj, ("prompt", "response"))
                human = {name: _rating(file, where, name, obj.get(name)) for name in ATTRIBUTES}
                ratings = individual.get(digest(prompt + "\0" + response, 20), {})
                yield record(
                    f"p-{digest(prompt)}",
                    system_of(response),
                    prompt,
                    response,
                    human=human,
                    annotators={
                        name: {f"a{k}": v for k, v in enumerate(values, start=1)}
                        for name, values in ratings.items()
                    },
                    context={"split": split},
                )

    def pairs() -> Iterator[Row]:
        if not options["preference"]:
            return
        try:
            file = find_file(path, "preference/preference.jsonl.gz", "**/preference.jsonl.gz")
        except SourceError:
            return  # the ratings alone were downloaded
        for number, obj in iter_jsonl(file):
            where = f"line {number}"
            if obj.get("split") not in splits:
                continue
            prompt, first, second = _texts(file, where, obj, ("prompt", "response_1", "response_2"))
            votes = obj.get("all_preferences_unprocessed")
            if not isinstance(votes, list):
                raise fail(file, where, "all_preferences_unprocessed", "expected a list")
            for k, vote in enumerate(votes, start=1):
                strength = vote.get("strength") if isinstance(vote, dict) else None
                if (
                    not isinstance(strength, int)
                    or isinstance(strength, bool)
                    or not -3 <= strength <= 3
                ):
                    raise fail(
                        file,
                        where,
                        f"all_preferences_unprocessed[{k - 1}].strength",
                        f"expected an integer from -3 to 3, got {strength!r}",
                    )
                yield in_order(
                    pair(
                        f"p-{digest(prompt)}",
                        prompt,
                        system_of(first),
                        first,
                        system_of(second),
                        second,
                        aspect="preference",
                        annotator=f"a{k}",
                        winner="a" if strength < 0 else "b" if strength > 0 else "tie",
                        extra={"strength": abs(strength), "split": obj["split"]},
                    )
                )

    return Conversion(records, pairs, aspects=ASPECTS)


def _individual(path: Path) -> dict[str, dict[str, list[int]]]:
    """Each response's individual ratings by (prompt, response) digest; empty without
    the disagreements file."""
    try:
        file = find_file(path, "disagreements/disagreements.jsonl.gz", "**/disagreements.jsonl.gz")
    except SourceError:
        return {}
    found: dict[str, dict[str, list[int]]] = {}
    for number, obj in iter_jsonl(file):
        where = f"line {number}"
        prompt, response = _texts(file, where, obj, ("prompt", "response"))
        ratings: dict[str, list[int]] = {}
        for name in ATTRIBUTES:
            values = obj.get(name)
            if not isinstance(values, list):
                raise fail(file, where, name, "expected a list of ratings")
            ratings[name] = [_rating(file, where, f"{name}[{i}]", v) for i, v in enumerate(values)]
        found[digest(prompt + "\0" + response, 20)] = ratings
    return found


def _texts(file: Path, where: str, obj: Any, names: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(obj, dict):
        raise fail(file, where, "", "expected an object")
    for name in names:
        if not isinstance(obj.get(name), str):
            raise fail(file, where, name, "missing, or not text")
    return tuple(obj[name] for name in names)


def _rating(file: Path, where: str, field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 4:
        raise fail(file, where, field, f"expected an integer from 0 to 4, got {value!r}")
    return value


BENCHMARK = Benchmark(
    name="helpsteer2",
    title="HelpSteer2 (5 attributes, individual ratings, preferences)",
    task="custom",
    licence=Licence("CC-BY-4.0", "https://huggingface.co/datasets/nvidia/HelpSteer2", True),
    citation=(
        "@inproceedings{wang2024helpsteer2, title={HelpSteer2: Open-source dataset for "
        "training top-performing reward models}, author={Wang, Zhilin and Dong, Yi and "
        "Delalleau, Olivier and Zeng, Jiaqi and Shen, Gerald and Egert, Daniel and Zhang, "
        "Jimmy J. and Sreedhar, Makesh Narsimhan and Kuchaiev, Oleksii}, booktitle={NeurIPS "
        "Datasets and Benchmarks Track}, year={2024}}"
    ),
    homepage="https://huggingface.co/datasets/nvidia/HelpSteer2",
    release=HubRelease(
        "nvidia/HelpSteer2",
        "990b2711a36180dd19d9c94b8627844866f8982a",
        ("*.jsonl.gz", "disagreements/*", "preference/*"),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(
        Option("split", str, "both", "train, validation or both", ("train", "validation", "both")),
        Option("annotators", bool, True, "add the individual ratings (disagreements file)"),
        Option("preference", bool, True, "emit the pairwise preferences (preference file)"),
    ),
)
