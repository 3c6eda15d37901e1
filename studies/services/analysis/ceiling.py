"""The human ceiling of a correlation matrix: for each aspect, how well one annotator
agrees with the mean of the others (leave one annotator out), at the matrix's level
and with its statistic. A metric near the ceiling agrees with the humans about as well
as they agree with each other; more annotation cannot show it doing much better.

Annotators are the frame's: annotator accounts, and each import file as one annotator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.contrib.auth import get_user_model

from scoring.stats import Groups
from scoring.stats.diagnostics import leave_one_out
from studies import hooks
from studies.models import Dataset, Judgment
from studies.services.analysis import snapshot
from studies.services.analysis.frames import ScoreFrame, read_rows
from studies.services.analysis.matrix import cell_statistic
from studies.services.analysis.params import MatrixParams
from studies.services.csvfile import number

NO_OVERLAP = "fewer than 2 annotators judged the same outputs of this aspect"
UNDEFINED = "the annotators' scores leave the statistic undefined where they overlap (constant)"


def _judgments(
    dataset: Dataset, frame: ScoreFrame, excluded: set[int]
) -> tuple[np.ndarray, list[str]]:
    """The judgments of the frame's aspects as rows (output id, aspect id, annotator
    code, value), and each code's name: annotator accounts by username, then each
    import file as one annotator. From the dataset's snapshot when it has one for its
    current data (the frame was read from it), else from the rows."""
    written = snapshot.current(dataset)
    accounts, imported, file_names = (
        _from_rows(dataset, frame, excluded)
        if written is None
        else _from_snapshot(written, frame, excluded)
    )
    user_ids, codes = np.unique(accounts[:, 2].astype(np.int64), return_inverse=True)
    usernames = dict(
        get_user_model().objects.filter(pk__in=user_ids.tolist()).values_list("pk", "username")
    )
    used = np.unique(imported[:, 2].astype(np.int64))
    files = sorted(file_names[k] for k in used)
    file_code = np.zeros(len(file_names), dtype=np.int64)
    for k in used:
        file_code[k] = user_ids.size + files.index(file_names[k])
    accounts[:, 2] = codes
    imported[:, 2] = file_code[imported[:, 2].astype(np.int64)]
    names = [str(usernames.get(int(pk), f"user {pk}")) for pk in user_ids]
    table = np.vstack([accounts, imported])
    # by aspect, annotator, then output: sums come out the same whichever path read them
    # (and whatever order the database returned them in)
    order = np.lexsort((table[:, 0], table[:, 2], table[:, 1]))
    return table[order], names + [f"file {f}" for f in files]


def _from_rows(
    dataset: Dataset, frame: ScoreFrame, excluded: set[int]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The accounts' judgments (output id, aspect id, account id, value), the imported
    ones (output id, aspect id, file index, value) and the files' names, from the rows."""
    judged = Judgment.objects.filter(
        output__document__dataset=dataset, aspect_id__in=[a.pk for a in frame.aspects]
    )
    by_account = judged.filter(annotator__isnull=False)
    if excluded:
        by_account = by_account.exclude(annotator_id__in=excluded)
    accounts = np.array(
        read_rows(by_account.values_list("output_id", "aspect_id", "annotator_id", "value")),
        dtype=np.float64,
    ).reshape(-1, 4)
    found = read_rows(
        judged.filter(annotator__isnull=True).values_list(
            "output_id", "aspect_id", "import_file", "value"
        )
    )
    file_names: dict[str, int] = {}
    imported = np.array(
        [(o, a, file_names.setdefault(f, len(file_names)), v) for o, a, f, v in found],
        dtype=np.float64,
    ).reshape(-1, 4)
    return accounts, imported, list(file_names)


def _from_snapshot(
    written: snapshot.Snapshot, frame: ScoreFrame, excluded: set[int]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The same as :func:`_from_rows`, from the snapshot (each aspect's judgments by
    output then id)."""
    accounts, imported, file_names = [], [], {}
    for aspect in frame.aspects:
        found = written.judgments(aspect.pk)
        index = np.array([file_names.setdefault(f, len(file_names)) for f in found.files])
        mine = found.annotator > 0
        if excluded:
            mine &= ~np.isin(found.annotator, list(excluded))
        files = found.annotator < 0
        for rows, who, into in (
            (mine, found.annotator, accounts),
            (files, index[found.file_code] if index.size else found.file_code, imported),
        ):
            into.append(
                np.column_stack(
                    [
                        found.output_id[rows],
                        np.full(int(rows.sum()), aspect.pk),
                        who[rows],
                        found.value[rows],
                    ]
                ).astype(np.float64)
            )
    empty = np.zeros((0, 4))
    return np.vstack([empty, *accounts]), np.vstack([empty, *imported]), list(file_names)


def ceiling_row(dataset: Dataset, frame: ScoreFrame, params: MatrixParams) -> list[dict[str, Any]]:
    """One entry per matrix column (aligned with ``frame.aspects``): the mean over the
    annotators of each one's correlation with the mean of the others (``value``; None
    with ``reason`` where fewer than 2 annotators overlap), and each annotator's value.

    Each annotator is correlated on the outputs of the frame it judged that someone else
    judged too, with :func:`cell_statistic` (the matrix cells' function, level and
    options); judgments count unweighted, and flagged annotators are left out when the
    matrix leaves them out."""
    excluded = hooks.flagged(dataset) if params.exclude_flagged else set()
    table, names = (
        _judgments(dataset, frame, excluded)
        if frame.aspects and frame.n_outputs
        else (np.zeros((0, 4)), [])
    )
    # the frame's outputs are sorted by id; judgments of other outputs (a restriction to
    # test documents) are dropped
    output_ids = table[:, 0].astype(np.int64)
    found = np.searchsorted(frame.output_ids, output_ids)
    found = np.minimum(found, max(frame.n_outputs - 1, 0))
    inside = frame.output_ids[found] == output_ids if frame.n_outputs else found < 0
    docs_all, systems_all = frame.doc_codes, frame.system_codes
    entries = []
    for aspect in frame.aspects:
        mask = inside & (table[:, 1] == aspect.pk)
        codes, who = np.unique(table[mask, 2].astype(np.int64), return_inverse=True)
        labels = [names[c] for c in codes]

        def statistic(
            outputs: np.ndarray, own: np.ndarray, others: np.ndarray, aspect: Any = aspect
        ) -> float:
            docs = Groups.from_keys(docs_all[outputs])
            systems = Groups.from_keys(systems_all[outputs])
            return float(cell_statistic(own, others, aspect, params, docs, systems).value)

        result = leave_one_out(
            found[mask], who, table[mask, 3], frame.n_outputs, len(labels), statistic
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
