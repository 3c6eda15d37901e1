"""RewardBench 2 (Malik et al., 2025): 1,865 prompts, each with completions known to be
correct (``chosen``) and incorrect (``rejected``), in six subsets (Factuality, Precise IF,
Math, Safety, Focus, Ties).

Layout (https://huggingface.co/datasets/allenai/reward-bench-2, dataset card
``dataset_info``): ``data/test-*.parquet`` with columns ``id``, ``prompt``, ``chosen``
(list of strings), ``rejected`` (list of strings), ``num_correct``, ``num_incorrect``,
``total_completions``, ``models`` (list: the completions' models, chosen first),
``subset``, ``additional_metadata``.

Emits one record per completion (``doc_id`` the ``id``; ``system_id`` ``chosen-<i>`` or
``rejected-<j>``, the generating model under ``context.model`` where ``models`` lines up)
with the binary aspect ``correct`` judged by annotator ``gold``; and one pair per (chosen,
rejected) completion, winner the chosen one (aspect ``preference``, annotator ``gold``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import pair, record
from studies.services.sources.readers import fail, find_files, iter_parquet
from studies.services.sources.spec import Benchmark, Conversion, HubRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row

PAPER = "Malik et al. 2025, RewardBench 2, section 3"
ASPECTS = (
    AspectSpec.binary(
        "correct",
        "Whether the completion is a correct answer to the prompt (RewardBench 2's chosen "
        "completions are correct, rejected ones incorrect, verified per subset).",
        source=PAPER,
    ),
    AspectSpec.categorical(
        "preference",
        ("a", "b", "tie"),
        "Which of two completions to the same prompt a reward model should score higher "
        "(a chosen over a rejected completion).",
        source=PAPER,
    ),
)
COLUMNS = ["id", "prompt", "chosen", "rejected", "models", "subset"]
FILES = ("data/test-*.parquet", "**/test-*.parquet", "*.parquet")


def read(path: Path, options: dict[str, Any]) -> Conversion:
    subset = options["subset"]
    notes: list[str] = []

    def items() -> Iterator[tuple[Path, str, dict[str, Any]]]:
        for file in find_files(path, *FILES):
            for index, row in iter_parquet(file, COLUMNS):
                if subset and row["subset"] != subset:
                    continue
                yield file, f"row {index}", _checked(file, f"row {index}", row)

    def records() -> Iterator[Row]:
        for _file, _where, row in items():
            models = row["models"] or []
            completions = [("chosen", t) for t in row["chosen"]] + [
                ("rejected", t) for t in row["rejected"]
            ]
            aligned = len(models) == len(completions)
            counters = {"chosen": 0, "rejected": 0}
            for k, (side, text) in enumerate(completions):
                counters[side] += 1
                if not text.strip():
                    note = f"{row['id']}: an empty {side} completion left out"
                    if note not in notes:
                        notes.append(note)
                    continue
                yield record(
                    str(row["id"]),
                    f"{side}-{counters[side]}",
                    row["prompt"],
                    text,
                    human={"correct": int(side == "chosen")},
                    annotators={"correct": {"gold": int(side == "chosen")}},
                    context={"subset": row["subset"], **({"model": models[k]} if aligned else {})},
                )

    def pairs() -> Iterator[Row]:
        for _file, _where, row in items():
            for i, chosen in enumerate(row["chosen"], start=1):
                for j, rejected in enumerate(row["rejected"], start=1):
                    if chosen.strip() and rejected.strip():
                        yield pair(
                            str(row["id"]),
                            row["prompt"],
                            f"chosen-{i}",
                            chosen,
                            f"rejected-{j}",
                            rejected,
                            aspect="preference",
                            annotator="gold",
                            winner="a",
                            extra={"subset": row["subset"]},
                        )

    return Conversion(records, pairs, ASPECTS, notes)


def _checked(file: Path, where: str, row: dict[str, Any]) -> dict[str, Any]:
    if row["id"] is None or not isinstance(row["prompt"], str):
        raise fail(file, where, "id/prompt", "missing")
    for name in ("chosen", "rejected"):
        texts = row[name]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise fail(file, where, name, "expected a non-empty list of strings")
    return row


BENCHMARK = Benchmark(
    name="rewardbench2",
    title="RewardBench 2 (correct vs incorrect completions)",
    task="custom",
    licence=Licence(
        "ODC-BY-1.0",
        "https://huggingface.co/datasets/allenai/reward-bench-2",
        True,
        "some subsets carry their sources' licences (see the dataset card)",
    ),
    citation=(
        "@misc{malik2025rewardbench2, title={RewardBench 2: Advancing Reward Model "
        "Evaluation}, author={Malik, Saumya and Pyatkin, Valentina and Land, Sander and "
        "Morrison, Jacob and Smith, Noah A. and Hajishirzi, Hannaneh and Lambert, Nathan}, "
        "year={2025}, eprint={2506.01937}, archivePrefix={arXiv}}"
    ),
    homepage="https://huggingface.co/datasets/allenai/reward-bench-2",
    # the card's history names no full commit we could verify; the snapshot records the
    # commit "main" resolved to at download time (ConvertedDataset.provenance.revision)
    release=HubRelease("allenai/reward-bench-2", "main", ("data/test-*.parquet",)),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(Option("subset", str, "", "only this subset (e.g. Factuality, Ties); default all"),),
)
