"""RoSE (Liu et al., ACL 2023, "Revisiting the Gold Standard"): system summaries of
CNN/DailyMail, XSum and SamSum documents scored with the ACU protocol: the reference
summary is split into atomic content units (ACUs) and annotators mark which ACUs each
system summary contains; a summary's ACU score is the fraction it contains.

Subsets (the Hugging Face configurations of https://huggingface.co/datasets/Salesforce/rose,
statistics from the README of https://github.com/Yale-LILY/ROSE, commit 8b93128):
``cnndm_test`` (500 documents x 12 systems), ``cnndm_validation`` (1,000 x 8), ``xsum``
(500 x 8), ``samsum`` (500 x 8).

Layout assumed: one file per subset, ``<subset>.json`` (a JSON array) or
``<subset>.jsonl`` (JSON Lines), found anywhere under the given folder or as a member of
the release's archive ``rose_data.tar.gz``, holding the examples as the dataset's loading
script (``rose.py``) yields them. The field names are those the project's demo notebook
(``demo.ipynb`` of Yale-LILY/ROSE) prints for ``load_dataset("Salesforce/rose",
"cnndm_test")["data"]``; the member names inside the archive were not checked against a
download (no network here), so ``--from`` a folder of ``<subset>.json`` files written by
``load_dataset(...)["data"].to_json(...)`` is the layout this loader is tested on. Each
example: ``source`` (the document), ``reference`` (the reference summary),
``reference_acus`` (its ACUs, a list of strings), ``count_id`` (the example's position),
``example_id`` (the document's id), ``annotations`` ({system: {``acu_labels``: 0/1 per
reference ACU, ``acu``: their mean, ``normalized_acu``: the length-normalised score}}) and
``system_outputs`` ({system: the summary text}).

Emits one record per (example, system): ``doc_id`` the ``example_id`` (``count_id`` when it
has none), ``system_id`` the system, ``source``, the reference as the only reference (none
for an output whose text is the reference itself), ``human`` ``acu`` and
``normalized_acu`` (the protocol's scores, 0-1: one value per summary, the annotators'
agreed labels, so no per-annotator values), and ``context`` the reference's ACUs and the
example's ``count_id``. ``acu`` must be the mean of ``acu_labels`` where both are given.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from studies.services.sources.build import record
from studies.services.sources.readers import (
    fail,
    find_files,
    iter_json_array,
    iter_jsonl,
    tar_member,
)
from studies.services.sources.spec import Benchmark, Conversion, HubRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row, SourceError

PAPER = "Liu et al. 2023, Revisiting the Gold Standard, section 2 (the ACU protocol)"
ASPECTS = (
    AspectSpec.scale(
        "acu",
        0,
        1,
        "The fraction of the reference summary's atomic content units (elementary facts "
        "that need no further splitting) that annotators found in the system summary.",
        PAPER,
    ),
    AspectSpec.scale(
        "normalized_acu",
        0,
        1,
        "The ACU score discounted for summaries longer than the reference, so that a long "
        "summary cannot score well by length alone (the paper's length-normalised ACU).",
        PAPER,
    ),
)
SUBSETS = ("cnndm_test", "cnndm_validation", "xsum", "samsum")
ARCHIVE = "rose_data.tar.gz"
TOLERANCE = 1e-4  # acu is stored as a float32 mean of the labels


def read(path: Path, options: dict[str, Any]) -> Conversion:
    subset = options["subset"]

    def records() -> Iterator[Row]:
        with ExitStack() as stack:
            file = _subset_file(path, subset, stack)
            for where, item in _examples(file):
                yield from _records(file, where, item)

    return Conversion(records, aspects=ASPECTS)


def _subset_file(path: Path, subset: str, stack: ExitStack) -> Path:
    """The subset's file: ``path`` itself, a ``<subset>.json[l]`` under it, or the
    member of that name in the release's archive (unpacked for the time of reading)."""
    if path.is_file() and not path.name.endswith(".tar.gz"):
        return path
    names = (f"{subset}.jsonl", f"{subset}.json")
    if path.is_dir():
        found = [p for name in names for p in sorted(path.rglob(name))]
        if found:
            return found[0]
    archive = path if path.is_file() else find_files(path, ARCHIVE, f"**/{ARCHIVE}")[0]
    try:
        return stack.enter_context(tar_member(archive, f"{subset}.json"))
    except SourceError:
        return stack.enter_context(tar_member(archive, f"{subset}.jsonl"))


def _examples(file: Path) -> Iterator[tuple[str, Any]]:
    if file.suffix == ".jsonl":
        for number, item in iter_jsonl(file):
            yield f"line {number}", item
        return
    with file.open("rb") as fh:
        first = fh.read(64).lstrip()
    if first.startswith(b"["):
        for where, line, item in iter_json_array(file):
            yield f"{where} (line {line})", item
        return
    # ``Dataset.to_json`` writes JSON Lines, whatever the file's suffix
    for number, item in iter_jsonl(file):
        yield f"line {number}", item


def _records(file: Path, where: str, item: Any) -> Iterator[Row]:
    if not isinstance(item, dict):
        raise fail(file, where, "", "expected an example object")
    source, reference = item.get("source"), item.get("reference")
    for name, value in (("source", source), ("reference", reference)):
        if not isinstance(value, str):
            raise fail(file, where, name, "missing, or not text")
    acus = item.get("reference_acus", [])
    if not isinstance(acus, list) or not all(isinstance(a, str) for a in acus):
        raise fail(file, where, "reference_acus", "expected a list of strings")
    doc_id = item.get("example_id") or item.get("count_id")
    if not isinstance(doc_id, str | int) or isinstance(doc_id, bool):
        raise fail(file, where, "example_id", "missing (and no count_id)")
    annotations, outputs = item.get("annotations"), item.get("system_outputs")
    if not isinstance(annotations, dict) or not annotations:
        raise fail(file, where, "annotations", "expected an object of system: scores")
    if not isinstance(outputs, dict):
        raise fail(file, where, "system_outputs", "expected an object of system: summary")
    context = {"reference_acus": acus, "count_id": item.get("count_id")}
    for system, scores in annotations.items():
        text = outputs.get(system)
        if not isinstance(text, str):
            raise fail(file, where, f"system_outputs.{system}", "missing, or not text")
        yield record(
            str(doc_id),
            system,
            source,  # type: ignore[arg-type]
            text,
            references=[] if text.strip() == reference.strip() else [reference],  # type: ignore[union-attr]
            human=_scores(file, where, f"annotations.{system}", scores, len(acus)),
            context=context,
        )


def _scores(file: Path, where: str, place: str, scores: Any, units: int) -> dict[str, float]:
    if not isinstance(scores, dict):
        raise fail(file, where, place, "expected an object of acu_labels, acu, normalized_acu")
    human: dict[str, float] = {}
    for name in ("acu", "normalized_acu"):
        value = scores.get(name)
        if value is None and name == "normalized_acu":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(file, where, f"{place}.{name}", f"expected a number, got {value!r}")
        if not 0 <= value <= 1 + TOLERANCE:
            raise fail(file, where, f"{place}.{name}", f"{value} is outside 0-1")
        human[name] = min(float(value), 1.0)
    labels = scores.get("acu_labels")
    if labels is not None:
        if not isinstance(labels, list) or any(v not in (0, 1) or v is True for v in labels):
            raise fail(file, where, f"{place}.acu_labels", "expected a list of 0 and 1")
        if units and len(labels) != units:
            raise fail(
                file,
                where,
                f"{place}.acu_labels",
                f"{len(labels)} labels for {units} reference ACUs",
            )
        if labels and abs(sum(labels) / len(labels) - human["acu"]) > TOLERANCE:
            raise fail(
                file,
                where,
                f"{place}.acu",
                f"{human['acu']} is not the mean of acu_labels ({sum(labels)}/{len(labels)})",
            )
    return human


BENCHMARK = Benchmark(
    name="rose",
    title="RoSE (ACU-annotated summaries: CNN/DM, XSum, SamSum)",
    task="summarization",
    licence=Licence(
        "BSD-3-Clause",
        "https://huggingface.co/datasets/Salesforce/rose/blob/main/LICENSE.txt",
        True,
        "as LICENSE.txt of the dataset and of github.com/Yale-LILY/ROSE",
    ),
    citation=(
        "@inproceedings{liu2023revisiting, title={Revisiting the Gold Standard: Grounding "
        "Summarization Evaluation with Robust Human Evaluation}, author={Liu, Yixin and "
        "Fabbri, Alexander R. and Liu, Pengfei and Zhao, Yilun and Nan, Linyong and Han, "
        "Ruilin and Han, Simeng and Joty, Shafiq and Wu, Chien-Sheng and Xiong, Caiming and "
        "Radev, Dragomir}, booktitle={Proceedings of ACL}, pages={4140--4170}, year={2023}}"
    ),
    homepage="https://yale-lily.github.io/ROSE/",
    release=HubRelease("Salesforce/rose", "main", (ARCHIVE, "*.json", "*.jsonl")),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(
        Option(
            "subset", str, "cnndm_test", "cnndm_test, cnndm_validation, xsum or samsum", SUBSETS
        ),
    ),
)
