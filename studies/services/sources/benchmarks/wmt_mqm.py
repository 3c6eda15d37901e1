"""WMT MQM (Freitag et al., TACL 2021, and the WMT 2022-2024 general task): professional
translators' MQM error annotations of WMT submissions.

Layout (https://github.com/google/wmt-mqm-human-evaluation, README, commit 7fadea2): one
TSV per test set and language pair, one row per error a rater marked (a row with category
``No-error`` when they marked none), quoted nowhere. Columns ``system, doc, doc_id,
seg_id, rater, source, target, category, severity[, comment]`` (newstest2020/2021, TED),
or ``system, doc, docSegId, globalSegId, rater, source, target, category, severity,
metadata`` (generalMT2022 on; the header may end in a ``# Documentation`` comment).
The marked span is wrapped in ``<v>...</v>`` in ``source``/``target``. ``severity`` is
``Major``, ``Minor``, ``Neutral``, ``No-error``, or ``HOTW-test`` (injected quality-control
errors, skipped here). The side-by-side WMT23 en-de release
(``sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv.tar.gz``) is read from its archive.

Scores follow the README's weights: Major 5, Minor 1, Minor ``Fluency/Punctuation`` 0.1,
``Non-translation`` 25, ``Source issue``, ``Neutral`` and ``No-error`` 0. Emits one record
per (segment, system): ``doc_id`` ``seg<segment>``, the rows of each rater gathered
wherever they are in the file, ``annotators`` per rater: ``mqm`` (minus the penalty),
``major_error`` (any Major or Non-translation error), ``error_category`` (the top-level
category of the rater's most severe errors: the one with most errors at the highest
weight, ties alphabetical; ``No-error`` without penalised errors); ``human`` the mean and
the majority labels; the ``reference`` system's translation (rated like a system) as the
others' reference; ``context.document`` the WMT document. On the WMT23 en-de side-by-side
file this reproduces ``shared/data/wmt23_mqm_ende.jsonl`` value for value.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from studies.services.sources.build import human_from, natural, record
from studies.services.sources.readers import fail, find_file, grouped, iter_delimited, tar_member
from studies.services.sources.spec import Benchmark, Conversion, UrlRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row

PAPER = "Freitag et al. 2021, Experts, Errors, and Context, section 3 and the release README"
CATEGORIES = (
    "No-error",
    "Accuracy",
    "Fluency",
    "Style",
    "Terminology",
    "Locale convention",
    "Non-translation",
    "Other",
)
ASPECTS = (
    AspectSpec.scale(
        "mqm",
        -250,
        0,
        "Minus the MQM penalty of the translation: raters mark each error's span, category "
        "and severity; Major errors weigh 5, Minor 1, Minor Fluency/Punctuation 0.1, a "
        "Non-translation 25; 0 means no error.",
        PAPER,
    ),
    AspectSpec.binary(
        "major_error",
        "Whether the rater marked a Major error (an actual translation or grammatical error "
        "that can mislead or confuse) or a Non-translation.",
        source=PAPER,
    ),
    AspectSpec.categorical(
        "error_category",
        CATEGORIES,
        "The top-level MQM category of the rater's most severe errors (Accuracy, Fluency, "
        "Style, Terminology, Locale convention, Non-translation, Other), or No-error.",
        source=PAPER,
    ),
)
_BY_NAME = {spec.name: spec for spec in ASPECTS}
SUBSETS = {
    "generalMT2023.ende.sxs": "generalMT2023/ende/sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv.tar.gz",
    "generalMT2023.ende": "generalMT2023/ende/mqm_generalMT2023_ende.tsv",
    "generalMT2023.zhen": "generalMT2023/zhen/mqm_generalMT2023_zhen.tsv",
    "generalMT2023.heen": "generalMT2023/heen/mqm_generalMT2023_heen.tsv",
    "generalMT2022.ende": "generalMT2022/ende/mqm_generalMT2022_ende.tsv",
    "generalMT2022.enru": "generalMT2022/enru/mqm_generalMT2022_enru.tsv",
    "generalMT2022.zhen": "generalMT2022/zhen/mqm_generalMT2022_zhen.tsv",
    "newstest2021.ende": "newstest2021/ende/mqm_newstest2021_ende.tsv",
    "newstest2021.zhen": "newstest2021/zhen/mqm_newstest2021_zhen.tsv",
    "newstest2020.ende": "newstest2020/ende/mqm_newstest2020_ende.tsv",
    "newstest2020.zhen": "newstest2020/zhen/mqm_newstest2020_zhen.tsv",
    "ted.ende": "ted/ende/mqm_ted_ende.tsv",
    "ted.zhen": "ted/zhen/mqm_ted_zhen.tsv",
}
SEGMENT_COLUMNS = ("globalSegId", "seg_id")
REQUIRED = ("system", "doc", "rater", "source", "target", "category", "severity")
_SPAN = re.compile(r"</?v>")


def weight(category: str, severity: str) -> float:
    """An error's MQM weight (README: 'Types of extra human evaluations')."""
    if category.startswith("Non-translation"):
        return 25.0
    if category in ("No-error", "Source issue") or severity not in ("Major", "Minor"):
        return 0.0
    if severity == "Major":
        return 5.0
    return 0.1 if category == "Fluency/Punctuation" else 1.0


def judge(errors: list[tuple[str, str]]) -> tuple[float, int, str]:
    """One rater's (mqm, major_error, error_category) from their (category, severity) rows."""
    weighted = [(weight(c, s), c, s) for c, s in errors]
    penalty = sum(w for w, _c, _s in weighted)
    major = any(w > 0 and (s == "Major" or c.startswith("Non-translation")) for w, c, s in weighted)
    mqm = round(-penalty, 10) + 0.0  # + 0.0: no -0.0 for a clean translation
    scored = [(w, c.split("/")[0].rstrip("!")) for w, c, _s in weighted if w > 0]
    if not scored:
        return mqm, int(major), "No-error"
    top = max(w for w, _c in scored)
    counts = Counter(c for w, c in scored if w == top)
    best = max(counts.values())
    category = min(c for c, n in counts.items() if n == best)
    return mqm, int(major), category


def read(path: Path, options: dict[str, Any]) -> Conversion:
    relative = SUBSETS[options["subset"]]
    reference_system = options["reference"]

    def records() -> Iterator[Row]:
        with ExitStack() as stack:
            file = find_file(path, relative, Path(relative).name, f"**/{Path(relative).name}")
            if file.name.endswith(".tar.gz"):
                file = stack.enter_context(tar_member(file, ".tsv"))
            yield from _records(file, reference_system)

    return Conversion(records, aspects=ASPECTS)


def _rows(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, row in iter_delimited(file, "\t", csv.QUOTE_NONE):
        where = f"line {number}"
        segment_column = next((c for c in SEGMENT_COLUMNS if c in row), None)
        if segment_column is None:
            raise fail(file, where, "globalSegId", "missing column (or seg_id in older files)")
        missing = [c for c in REQUIRED if c not in row]
        if missing:
            raise fail(file, where, missing[0], "missing column")
        if not row[segment_column].strip() or not row["system"].strip() or not row["rater"].strip():
            raise fail(file, where, f"{segment_column}/system/rater", "empty")
        if row["severity"] == "HOTW-test":
            continue  # quality-control errors injected into the text, not the rater's judgment
        yield (
            row[segment_column].strip(),
            {
                "system": row["system"].strip(),
                "rater": row["rater"].strip(),
                "doc": row["doc"],
                "source": _SPAN.sub("", row["source"]),
                "target": _SPAN.sub("", row["target"]),
                "category": row["category"].strip(),
                "severity": row["severity"].strip(),
            },
        )


def _records(file: Path, reference_system: str) -> Iterator[Row]:
    for segment, rows in grouped(_rows(file)):
        by_system: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_system.setdefault(row["system"], []).append(row)
        reference = by_system.get(reference_system, [{}])[0].get("target")
        for system, system_rows in by_system.items():
            errors: dict[str, list[tuple[str, str]]] = {}
            for row in system_rows:
                errors.setdefault(row["rater"], []).append((row["category"], row["severity"]))
            annotators: dict[str, dict[str, Any]] = {name: {} for name in _BY_NAME}
            for rater, marked in sorted(errors.items(), key=lambda item: natural(item[0])):
                mqm, major, category = judge(marked)
                annotators["mqm"][rater] = mqm
                annotators["major_error"][rater] = major
                annotators["error_category"][rater] = category
            first = system_rows[0]
            yield record(
                f"seg{segment}",
                system,
                first["source"],
                first["target"],
                references=[reference]
                if reference is not None and system != reference_system
                else [],
                human=human_from(_BY_NAME, annotators),
                annotators=annotators,
                context={"document": first["doc"]},
            )


BENCHMARK = Benchmark(
    name="wmt-mqm",
    title="WMT MQM (expert MQM error annotations of WMT submissions)",
    task="machine_translation",
    licence=Licence(
        "Apache-2.0", "https://github.com/google/wmt-mqm-human-evaluation/blob/main/LICENSE", True
    ),
    citation=(
        "@article{freitag2021experts, title={Experts, Errors, and Context: A Large-Scale Study "
        "of Human Evaluation for Machine Translation}, author={Freitag, Markus and Foster, "
        "George and Grangier, David and Ratnakar, Viresh and Tan, Qijun and Macherey, "
        "Wolfgang}, journal={Transactions of the Association for Computational Linguistics}, "
        "volume={9}, pages={1460--1474}, year={2021}}"
    ),
    homepage="https://github.com/google/wmt-mqm-human-evaluation",
    release=UrlRelease(
        "https://raw.githubusercontent.com/google/wmt-mqm-human-evaluation/{revision}",
        "7fadea281aff8db61cc72fc3d469a4dca78b82a6",
        tuple(SUBSETS.values()),
    ),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(
        Option("subset", str, "generalMT2023.ende.sxs", "which test set and pair", tuple(SUBSETS)),
        Option("reference", str, "refA", "system whose translation is the others' reference"),
    ),
)
