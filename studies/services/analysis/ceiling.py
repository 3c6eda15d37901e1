"""The human ceiling of a correlation matrix: for each aspect, how well one annotator
agrees with the mean of the others (leave one annotator out), at the matrix's level
and with its statistic. A metric near the ceiling agrees with the humans about as well
as they agree with each other; more annotation cannot show it doing much better.

Annotators are the frame's: annotator accounts, and imported annotators (each rater an
import file names, or the file as one annotator: :mod:`studies.services.annotators`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model

from scoring.stats import Groups
from scoring.stats.diagnostics import leave_one_out
from studies import hooks
from studies.models import Dataset, Judgment
from studies.services import annotators
from studies.services.analysis import snapshot
from studies.services.analysis.frames import ScoreFrame, read_rows
from studies.services.analysis.matrix import cell_statistic
from studies.services.analysis.params import MatrixParams
from studies.services.csvfile import number

NO_OVERLAP = "fewer than 2 annotators judged the same outputs of this aspect"
UNDEFINED = "the annotators' scores leave the statistic undefined where they overlap (constant)"


@dataclass(frozen=True, eq=False)
class _Rated:
    """One aspect's judgments for the ceiling: output ids, annotator codes and values,
    by annotator, then output (one order whichever path read them, so sums agree)."""

    output: np.ndarray
    who: np.ndarray
    value: np.ndarray


def _judgments(
    dataset: Dataset, frame: ScoreFrame, excluded: set[int]
) -> tuple[dict[int, _Rated], list[str]]:
    """The judgments of each of the frame's aspects, and each annotator code's name:
    annotator accounts by username, then the imported annotators (by file, then rater).
    From the dataset's snapshot when it has one for its current data (the frame was read
    from it), else from the rows."""
    written = snapshot.current(dataset)
    raw, names = (
        _from_rows(dataset, frame, excluded)
        if written is None
        else _from_snapshot(written, frame, excluded)
    )
    # accounts (>0, by id) first, then imported annotators (<0: -(index + 1) in
    # ``names``), by file and rater
    accounts = np.unique(np.concatenate([a[1][a[1] > 0] for a in raw.values()] + [_NONE]))
    usernames = dict(
        get_user_model().objects.filter(pk__in=accounts.tolist()).values_list("pk", "username")
    )
    used = np.unique(np.concatenate([-a[1][a[1] < 0] - 1 for a in raw.values()] + [_NONE]))
    imported = annotators.sorted_imported(names[k] for k in used)
    place = {source: k for k, source in enumerate(imported)}
    code_of_file = np.zeros(max(len(names), 1), dtype=np.int64)
    for k in used:
        code_of_file[k] = accounts.size + place[annotators.Imported(*names[k])]
    rated = {}
    for aspect, (output, annotator, value) in raw.items():
        who = np.where(
            annotator > 0,
            np.searchsorted(accounts, annotator),
            code_of_file[np.maximum(-annotator - 1, 0)],
        )
        if _sorted_by(who, output):  # one annotator, read by output: as it comes
            rated[aspect] = _Rated(output, who, value)
        else:
            order = np.lexsort((output, who))
            rated[aspect] = _Rated(output[order], who[order], value[order])
    labels = [annotators.name(int(pk), "", "", usernames.get(int(pk), "")) for pk in accounts]
    return rated, labels + [source.name for source in imported]


def judgment_table(
    dataset: Dataset, frame: ScoreFrame, excluded: set[int]
) -> tuple[np.ndarray, list[str]]:
    """The judgments of the frame's aspects as rows (output id, aspect id, annotator
    code, value), by aspect, annotator and output, and each code's name (as the ceiling
    reads them: what the report card's annotator matrices are built from)."""
    rated, names = _judgments(dataset, frame, excluded)
    parts = [
        np.column_stack([r.output, np.full(r.output.size, pk), r.who, r.value]).astype(np.float64)
        for pk, r in rated.items()
    ]
    return np.vstack([np.zeros((0, 4)), *parts]), names


def _sorted_by(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether the rows are in order of ``first``, then ``second``."""
    step = np.diff(first)
    return bool((step >= 0).all() and (np.diff(second)[step == 0] >= 0).all())


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ordered, return_inverse=True)`` of an array already sorted."""
    starts = np.r_[True, ordered[1:] != ordered[:-1]] if ordered.size else np.zeros(0, bool)
    return ordered[starts], np.cumsum(starts) - 1


_NONE = np.zeros(0, dtype=np.int64)
Raw = dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
Sources = list[tuple[str, str]]  # imported annotators: (import file, rater)


def _from_rows(dataset: Dataset, frame: ScoreFrame, excluded: set[int]) -> tuple[Raw, Sources]:
    """Per aspect, (output ids, annotators, values): an account by its id, an imported
    annotator as -(index + 1) of its (file, rater) among those returned beside them; read
    from the rows."""
    judged = Judgment.objects.filter(
        output__document__dataset=dataset, aspect_id__in=[a.pk for a in frame.aspects]
    )
    if excluded:
        judged = judged.exclude(annotator_id__in=excluded)
    found = read_rows(
        judged.values_list(
            "output_id", "aspect_id", "annotator_id", "import_file", "rater", "value"
        )
    )
    names: dict[tuple[str, str], int] = {}
    who = np.array(
        [
            a if a is not None else -(names.setdefault((f, r), len(names)) + 1)
            for _, _, a, f, r, _ in found
        ],
        dtype=np.int64,
    )
    outputs = np.array([r[0] for r in found], dtype=np.int64)
    aspects = np.array([r[1] for r in found], dtype=np.int64)
    values = np.array([r[5] for r in found], dtype=np.float64)
    raw: Raw = {}
    for aspect in frame.aspects:
        mask = aspects == aspect.pk
        raw[aspect.pk] = (outputs[mask], who[mask], values[mask])
    return raw, list(names)


def _from_snapshot(
    written: snapshot.Snapshot, frame: ScoreFrame, excluded: set[int]
) -> tuple[Raw, Sources]:
    """The same as :func:`_from_rows`, from the snapshot."""
    names: dict[tuple[str, str], int] = {}
    raw: Raw = {}
    for aspect in frame.aspects:
        found = written.judgments(aspect.pk)
        index = np.array([names.setdefault(s, len(names)) for s in found.sources], dtype=np.int64)
        keep = ~np.isin(found.annotator, list(excluded)) if excluded else slice(None)
        imported = np.maximum(-found.annotator - 1, 0)  # the row's index in found.sources
        who = np.where(
            found.annotator > 0,
            found.annotator,
            -(index[imported] if index.size else imported) - 1,
        )
        raw[aspect.pk] = (found.output_id[keep], who[keep], found.value[keep])
    snapshot.release_memory()
    return raw, list(names)


def ceiling_row(dataset: Dataset, frame: ScoreFrame, params: MatrixParams) -> list[dict[str, Any]]:
    """One entry per matrix column (aligned with ``frame.aspects``): the mean over the
    annotators of each one's correlation with the mean of the others (``value``; None
    with ``reason`` where fewer than 2 annotators overlap), and each annotator's value.

    Each annotator is correlated on the outputs of the frame it judged that someone else
    judged too, with :func:`cell_statistic` (the matrix cells' function, level and
    options); judgments count unweighted, and flagged annotators are left out when the
    matrix leaves them out."""
    excluded = hooks.flagged(dataset) if params.exclude_flagged else set()
    rated, names = (
        _judgments(dataset, frame, excluded) if frame.aspects and frame.n_outputs else ({}, [])
    )
    docs_all, systems_all = frame.doc_codes, frame.system_codes
    entries = []
    for aspect in frame.aspects:
        found = rated.get(aspect.pk, _Rated(_NONE, _NONE, np.zeros(0)))
        # the frame's outputs are sorted by id; judgments of other outputs (a restriction
        # to test documents) are dropped
        if np.array_equal(found.output, frame.output_ids):  # each output judged once
            rows, inside = np.arange(frame.n_outputs), np.ones(frame.n_outputs, dtype=bool)
        else:
            rows = np.searchsorted(frame.output_ids, found.output)
            rows = np.minimum(rows, frame.n_outputs - 1)
            inside = frame.output_ids[rows] == found.output if frame.n_outputs else rows < 0
        codes, who = _runs(found.who[inside])  # sorted by annotator
        labels = [names[c] for c in codes]

        def statistic(
            outputs: np.ndarray, own: np.ndarray, others: np.ndarray, aspect: Any = aspect
        ) -> float:
            docs = Groups.from_keys(docs_all[outputs])
            systems = Groups.from_keys(systems_all[outputs])
            return float(cell_statistic(own, others, aspect, params, docs, systems).value)

        result = leave_one_out(
            rows[inside], who, found.value[inside], frame.n_outputs, len(labels), statistic
        )
        per_annotator = [
            {"annotator": str(label), "value": _num(v), "n_outputs": int(n)}
            for label, v, n in zip(labels, result.values, result.n_outputs, strict=True)
        ]
        value = _num(result.mean)
        overlapping = int((result.n_outputs >= 2).sum())
        entries.append(
            {
                "aspect": aspect.code,
                "value": value,
                "n_annotators": result.n_annotators,
                "per_annotator": per_annotator,
                "n_overlapping": overlapping,
                "reason": None
                if value is not None
                else NO_OVERLAP
                if overlapping < 2
                else UNDEFINED,
            }
        )
    return entries


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def csv_row(result: dict[str, Any], per_aspect: int, trailing: int) -> list[Any] | None:
    """The ceiling as a line of the matrix's CSV (its value in each aspect's value
    column, its annotators in the ``_n`` column, ``per_aspect`` columns per aspect and
    ``trailing`` run columns after them; None when the matrix has none)."""
    ceiling = result.get("ceiling")
    if not ceiling:
        return None
    line: list[Any] = ["human ceiling", "", "", "", ""]
    for entry in ceiling:
        line += [number(entry["value"], 6), "", "", entry["n_annotators"]]
        line += [""] * (per_aspect - 4)
    return [*line, *[""] * trailing]
