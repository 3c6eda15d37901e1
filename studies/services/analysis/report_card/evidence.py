"""What the report card's pieces (:mod:`.pieces`) share: each annotator's answers on an
aspect as a matrix, the alternative-annotator test's requirements, and finite floats for
JSON."""

from __future__ import annotations

import math

import numpy as np

from studies.services.analysis.frames import AspectInfo, ScoreFrame

# the alt-test's requirements (the paper's): three annotators per item, 30 items each
MIN_ANNOTATORS = 3
MIN_ITEMS = 30


def num(value: float | None) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    return float(value) if value is not None and math.isfinite(value) else None


def annotator_matrix(
    table: np.ndarray, names: list[str], frame: ScoreFrame, aspect: AspectInfo
) -> tuple[np.ndarray, list[str]]:
    """The annotators' answers on ``aspect`` as annotators × the frame's outputs (NaN: no
    answer; an annotator's repeated answers averaged), from the ceiling's per-annotator
    rows (output id, aspect id, annotator code, value) and their names."""
    rows = table[table[:, 1] == aspect.pk]
    codes, who = np.unique(rows[:, 2].astype(np.int64), return_inverse=True)
    where = np.searchsorted(frame.output_ids, rows[:, 0].astype(np.int64))
    where = np.minimum(where, max(frame.n_outputs - 1, 0))
    inside = frame.output_ids[where] == rows[:, 0] if frame.n_outputs else np.zeros(0, bool)
    sums = np.zeros((codes.size, frame.n_outputs))
    counts = np.zeros((codes.size, frame.n_outputs))
    np.add.at(sums, (who[inside], where[inside]), rows[inside, 3])
    np.add.at(counts, (who[inside], where[inside]), 1.0)
    with np.errstate(invalid="ignore"):
        answers = np.where(counts > 0, sums / np.maximum(counts, 1.0), np.nan)
    return answers, [names[int(c)] for c in codes]
