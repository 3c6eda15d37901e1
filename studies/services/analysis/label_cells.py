"""A label aspect's statistic where the matrix and its drill-down show a correlation: MCC
on a binary aspect, Cohen's κ on a categorical one (the report card's primary statistics),
of the judge against the annotators' individual answers (the pooled pairs of
:func:`scoring.stats.labels.label_agreement`), beside the annotators' own; the
drill-down adds intervals by document, F1, TPR/TNR and the confusion matrix. And the
annotators' answers as a matrix (annotators × outputs), which the report card reads too."""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats import Groups, draw_resamples
from scoring.stats.label_tables import LabelSet
from scoring.stats.labels import LabelStatistics, label_agreement
from scoring.stats.table_intervals import Estimate
from studies.models import Dataset
from studies.services.analysis.ceiling import judgment_table
from studies.services.analysis.frames import AspectInfo, ScoreFrame

PRIMARY = {"binary": ("mcc", "MCC"), "categorical": ("kappa", "Cohen's κ")}
SCALARS = ("accuracy", "kappa", "mcc", "macro_f1", "majority_share", "chance_agreement")
BINARY = ("tpr", "tnr", "positive_precision", "positive_f1")
DRILL_RESAMPLES = 200


def num(value: float | None) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


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


def label_set(aspect: AspectInfo) -> LabelSet:
    return LabelSet(aspect.labels, positive=aspect.positive or None, ordered=aspect.ordered)


def is_label(aspect: AspectInfo) -> bool:
    return aspect.kind in PRIMARY and len(aspect.labels) >= 2


def label_codes(humans: np.ndarray, q: int) -> np.ndarray:
    """The annotators' answers as label codes (an annotator's differing repeats, averaged
    to no label: no answer)."""
    whole = np.isfinite(humans) & (humans == np.round(humans)) & (humans >= 0) & (humans < q)
    return np.where(whole, humans, np.nan)


def judge_problem(judge: np.ndarray, q: int) -> str | None:
    """Why the judge's scores are not labels of an aspect with ``q`` labels (None: they are)."""
    scored = np.isfinite(judge)
    if (scored & ((judge != np.round(judge)) | (judge < 0) | (judge > q - 1))).any():
        how = (
            "the report card meets a binary aspect through a threshold chosen on a declared split"
            if q == 2
            else "a numeric metric has no labels on a categorical aspect"
        )
        return f"the judge's scores are not this aspect's labels (0 to {q - 1}): {how}"
    return None


def estimate(found: Estimate | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "value": num(found.value),
        "low": num(found.low),
        "high": num(found.high),
        "clipped": found.clipped,
        "reason": found.reason,
    }


def statistics(found: LabelStatistics) -> dict[str, Any]:
    """Every statistic of one side (the judge's, or the annotators' among themselves)."""
    out = {name: estimate(getattr(found, name)) for name in SCALARS}
    if found.labels.is_binary:
        out |= {name: estimate(getattr(found, name)) for name in BINARY}
    out["per_label"] = [
        {
            "label": found.labels.name(k),
            "recall": estimate(found.recall[k]),
            "precision": estimate(found.precision[k]),
            "f1": estimate(found.f1[k]),
        }
        for k in range(found.labels.q)
    ]
    return out


def label_columns(dataset: Dataset, frame: ScoreFrame, matrix: dict[str, Any]) -> None:
    """Add to each label aspect's column of ``matrix`` its ``statistic`` (MCC, κ) and the
    annotators' own (``label_ceiling``), and to each cell its ``label`` value (point
    estimates; None with a ``label_problem`` where the run's scores are not labels)."""
    chosen = [a for a in frame.aspects if is_label(a)]
    if not chosen or not frame.n_outputs:
        return
    table, names = judgment_table(dataset, frame, set())
    docs = Groups.from_keys(frame.doc_codes)
    columns = {c["aspect"]["pk"]: c for c in matrix["columns"]}
    for aspect in chosen:
        column = columns.get(aspect.pk)
        if column is None:
            continue
        labels = label_set(aspect)
        key, name = PRIMARY[aspect.kind]
        humans = label_codes(annotator_matrix(table, names, frame, aspect)[0], labels.q)
        column["statistic"], column["label_ceiling"] = name, None
        for i, cell in enumerate(column["cells"]):
            judge = frame.metrics[:, i]
            problem = judge_problem(judge, labels.q)
            cell["label"], cell["label_problem"] = None, problem
            if problem:
                continue
            found = label_agreement(judge, humans, docs, labels, plan=None)
            cell["label"] = num(getattr(found.judge, key).value)
            if column["label_ceiling"] is None:
                column["label_ceiling"] = num(getattr(found.human, key).value)


def label_detail(
    dataset: Dataset, frame: ScoreFrame, i: int, j: int, seed: int, confidence: float = 0.95
) -> dict[str, Any] | None:
    """A drill-down's label statistics of run ``i`` on label aspect ``j`` with intervals by
    document, beside the annotators' own, and the confusion matrix; None for a scale
    aspect."""
    aspect = frame.aspects[j]
    if not is_label(aspect):
        return None
    labels = label_set(aspect)
    key, name = PRIMARY[aspect.kind]
    base = {"kind": aspect.kind, "labels": list(aspect.labels), "primary": key, "name": name}
    judge = frame.metrics[:, i]
    problem = judge_problem(judge, labels.q)
    if problem:
        return base | {"problem": problem}
    table, names = judgment_table(dataset, frame, set())
    humans = label_codes(annotator_matrix(table, names, frame, aspect)[0], labels.q)
    docs = Groups.from_keys(frame.doc_codes)
    plan = draw_resamples(np.random.default_rng(seed), docs, resamples=DRILL_RESAMPLES)
    found = label_agreement(judge, humans, docs, labels, plan=plan, confidence=confidence)
    return base | {
        "problem": None,
        "n_items": found.n_items,
        "judge": statistics(found.judge),
        "human": statistics(found.human),
        "confusion": found.judge.table.tolist(),
        "confidence": confidence,
    }
