"""The human ceiling of a correlation matrix: for each aspect, how well one annotator
agrees with the mean of the others (leave one annotator out), at the matrix's level
and with its statistic. A metric near the ceiling agrees with the humans about as well
as they agree with each other; more annotation cannot show it doing much better.

Annotators are the frame's: annotator accounts, and each import file as one annotator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats import Groups
from scoring.stats.diagnostics import leave_one_out
from studies.models import Dataset, Judgment
from studies.services.dashboards import MatrixParams, cell_statistic
from studies.services.frames import ScoreFrame, _rows

NO_OVERLAP = "fewer than 2 annotators judged the same outputs of this aspect"
UNDEFINED = "the annotators' scores leave the statistic undefined where they overlap (constant)"


def _judgments(dataset: Dataset, frame: ScoreFrame, excluded: set[int]) -> list[tuple[Any, ...]]:
    judged = Judgment.objects.filter(
        output__document__dataset=dataset, aspect_id__in=[a.pk for a in frame.aspects]
    )
    if excluded:
        judged = judged.exclude(annotator_id__in=excluded)
    return _rows(
        judged.values_list("output_id", "aspect_id", "annotator__username", "import_file", "value")
    )


def ceiling_row(dataset: Dataset, frame: ScoreFrame, params: MatrixParams) -> list[dict[str, Any]]:
    """One entry per matrix column (aligned with ``frame.aspects``): the mean over the
    annotators of each one's correlation with the mean of the others (``value``; None
    with ``reason`` where fewer than 2 annotators overlap), and each annotator's value.

    Each annotator is correlated on the outputs of the frame it judged that someone else
    judged too, with :func:`cell_statistic` (the matrix cells' function, level and
    options); judgments count unweighted, and flagged annotators are left out when the
    matrix leaves them out."""
    excluded: set[int] = set()
    if params.exclude_flagged:
        from studies.annotation.services.gold import flagged_for_dataset

        excluded = flagged_for_dataset(dataset)
    rows = _judgments(dataset, frame, excluded) if frame.aspects and frame.n_outputs else []
    table = np.array(rows, dtype=object).reshape(-1, 5)
    # the frame's outputs are sorted by id; judgments of other outputs (a restriction to
    # test documents) are dropped
    output_ids = table[:, 0].astype(np.int64)
    found = np.searchsorted(frame.output_ids, output_ids)
    found = np.minimum(found, max(frame.n_outputs - 1, 0))
    inside = frame.output_ids[found] == output_ids if frame.n_outputs else found < 0
    names = np.array([str(u) if u is not None else f"file {f}" for u, f in
                      zip(table[:, 2], table[:, 3], strict=True)], dtype=object)  # fmt: skip
    docs_all, systems_all = frame.doc_codes, frame.system_codes
    entries = []
    for aspect in frame.aspects:
        mask = inside & (table[:, 1] == aspect.pk)
        labels, who = np.unique(names[mask], return_inverse=True)

        def statistic(outputs: np.ndarray, own: np.ndarray, others: np.ndarray,
                      aspect: Any = aspect) -> float:  # fmt: skip
            docs = Groups.from_keys(docs_all[outputs])
            systems = Groups.from_keys(systems_all[outputs])
            return float(cell_statistic(own, others, aspect, params, docs, systems).value)

        result = leave_one_out(found[mask], who, table[mask, 4].astype(np.float64),
                               frame.n_outputs, len(labels), statistic)  # fmt: skip
        per_annotator = [
            {"annotator": str(label), "value": _num(v), "n_outputs": int(n)}
            for label, v, n in zip(labels, result.values, result.n_outputs, strict=True)
        ]
        value = _num(result.mean)
        overlapping = int((result.n_outputs >= 2).sum())
        entries.append({
            "aspect": aspect.code,
            "value": value,
            "n_annotators": result.n_annotators,
            "per_annotator": per_annotator,
            "n_overlapping": overlapping,
            "reason": None if value is not None else NO_OVERLAP if overlapping < 2 else UNDEFINED,
        })  # fmt: skip
    return entries


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def csv_row(result: dict[str, Any]) -> list[Any] | None:
    """The ceiling as a line of the matrix's CSV (its value in each aspect's value
    column, its annotators in the ``_n`` column; None when the matrix has none)."""
    ceiling = result.get("ceiling")
    if not ceiling:
        return None
    line: list[Any] = ["human ceiling", "", "", "", ""]
    for entry in ceiling:
        value = "" if entry["value"] is None else f"{entry['value']:.6f}"
        line += [value, "", "", entry["n_annotators"], *[""] * 9]
    return [*line, ""]
