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
from studies.services.analysis.frames import ScoreFrame, _rows
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
    import file as one annotator."""
    judged = Judgment.objects.filter(
        output__document__dataset=dataset, aspect_id__in=[a.pk for a in frame.aspects]
    )
    by_account = judged.filter(annotator__isnull=False)
    if excluded:
        by_account = by_account.exclude(annotator_id__in=excluded)
    accounts = np.array(
        _rows(by_account.values_list("output_id", "aspect_id", "annotator_id", "value")),
        dtype=np.float64,
    ).reshape(-1, 4)
    imported = _rows(
        judged.filter(annotator__isnull=True).values_list(
            "output_id", "aspect_id", "import_file", "value"
        )
    )
    user_ids, codes = np.unique(accounts[:, 2].astype(np.int64), return_inverse=True)
    usernames = dict(
        get_user_model().objects.filter(pk__in=user_ids.tolist()).values_list("pk", "username")
    )
    files = sorted({row[2] for row in imported})
    file_code = {name: user_ids.size + k for k, name in enumerate(files)}
    accounts[:, 2] = codes
    from_files = np.array(
        [(o, a, file_code[f], v) for o, a, f, v in imported], dtype=np.float64
    ).reshape(-1, 4)
    names = [str(usernames.get(int(pk), f"user {pk}")) for pk in user_ids]
    return np.vstack([accounts, from_files]), names + [f"file {f}" for f in files]


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
