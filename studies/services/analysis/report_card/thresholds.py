"""A numeric judge on a binary aspect: its scores become labels through a threshold
chosen on a declared split of the documents, and the card's label statistics are
computed only on documents the threshold never saw.

The split is a study's (:class:`~studies.models.StudySplit`): the threshold is chosen
on its **tune** documents and the judge is evaluated on its **test** documents (dev
documents are neither), as a tuner is (:mod:`studies.services.tuning`). The study card
uses its study's split; the dataset card the split of the one study of the dataset that
has one (``tuning.splits.split_for_dataset``'s rule). Without a split, the documents
are cut into two seeded halves (the card's seed) and cross-fitted: the threshold chosen
on one half labels the other, and the other way round, so every document is evaluated
by a threshold chosen without it.

The threshold maximises MCC among the cuts between the human-labelled outputs' scores
(:func:`scoring.stats.threshold.choose_threshold`), each output's label being its
annotators' majority (a tie: left out); which side of it is positive is chosen there
too. :func:`scoring.stats.threshold.apply_threshold` refuses any output it was chosen
on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoring.stats.label_tables import LabelSet
from scoring.stats.threshold import Threshold, apply_threshold, choose_threshold
from studies.models import Dataset, SplitDocument, Study
from studies.services.tuning.splits import SplitError, split_for_dataset, split_of

CRITERION = "mcc"


@dataclass(frozen=True)
class Fold:
    """Documents (frame document codes) a threshold is chosen on, and those it labels."""

    chosen_on: np.ndarray  # bool per document
    evaluated: np.ndarray  # bool per document


@dataclass(frozen=True)
class DeclaredSplit:
    """Where a card's thresholds are chosen: its name, as the card shows it, and folds."""

    name: str
    kind: str  # "study" or "halves"
    folds: tuple[Fold, ...]


def split_params(dataset: Dataset, study: Study | None = None) -> tuple[int | None, str]:
    """The study whose split a card's thresholds are chosen on and when it was made (see
    :meth:`CardParams.on_split`): ``study``'s (a study card, or the one a link names),
    else the one study of the dataset with a split; (None, ""): cross-fitted halves."""
    if study is not None and study.dataset_id != dataset.pk:
        study = None
    found = split_of(study) if study is not None else None
    if study is None:
        try:
            found = split_for_dataset(dataset.pk)
        except SplitError:
            found = None
    if found is None:
        return None, ""
    return found.study_id, found.created_at.isoformat()


def declared_split(doc_keys: list[str], study_pk: int | None, seed: int) -> DeclaredSplit:
    """The split a card's thresholds use (see the module): study ``study_pk``'s, or
    seeded halves of ``doc_keys``."""
    n = len(doc_keys)
    if study_pk is not None:
        parts = dict(
            SplitDocument.objects.filter(split__study_id=study_pk).values_list(
                "document__doc_key", "part"
            )
        )
        study = Study.objects.filter(pk=study_pk).values_list("name", flat=True).first() or ""
        part = np.array([parts.get(key, "") for key in doc_keys], dtype=object)
        fold = Fold(chosen_on=part == "tune", evaluated=part == "test")
        name = f"the tune documents of study {study_pk} ({study})'s split"
        return DeclaredSplit(name, "study", (fold,))
    order = np.random.default_rng(seed).permutation(n)
    first = np.zeros(n, dtype=bool)
    first[order[: n // 2]] = True
    folds = (Fold(first, ~first), Fold(~first, first))
    return DeclaredSplit(f"cross-fitted document halves (seed {seed})", "halves", folds)


def majority_positive(humans: np.ndarray, labels: LabelSet) -> np.ndarray:
    """Per output: 1.0 where most of its annotators gave the positive label, 0.0 where
    most gave the other, NaN where none answered or they are split evenly."""
    answered = np.isfinite(humans).sum(axis=0)
    positive = (humans == labels.positive_index).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = positive / answered
    out = np.where(share > 0.5, 1.0, 0.0)
    return np.where((answered == 0) | (share == 0.5), np.nan, out)


def _choose(keys: np.ndarray, scores: np.ndarray, truth: np.ndarray, split: str) -> Threshold:
    """The better side of the cut on the chosen documents (higher scores positive, or
    lower), by the criterion there."""
    args = (keys.tolist(), scores.tolist(), truth.astype(bool).tolist())
    high = choose_threshold(*args, split=split, criterion=CRITERION)
    low = choose_threshold(*args, split=split, criterion=CRITERION, higher_is_positive=False)
    if math.isnan(high.value) or not low.statistic > high.statistic:
        return high
    return low


def threshold_labels(
    scores: np.ndarray,
    humans: np.ndarray,
    doc_codes: np.ndarray,
    output_ids: np.ndarray,
    labels: LabelSet,
    split: DeclaredSplit,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The judge's labels (label positions; NaN on outputs not evaluated: the documents
    a threshold was chosen on, and those of no fold) and what the card says of the
    thresholds: the split, the criterion, each fold's cut and its counts."""
    truth = majority_positive(humans, labels)
    judged = np.full(scores.shape, np.nan)
    positive_at = float(labels.positive_index)
    cuts, chosen_docs, evaluated_docs = [], np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    for fold in split.folds:
        on = fold.chosen_on[doc_codes]
        use = on & np.isfinite(truth) & np.isfinite(scores)
        found = _choose(output_ids[use], scores[use], truth[use], split.name)
        target = fold.evaluated[doc_codes] & np.isfinite(scores)
        predicted = apply_threshold(found, output_ids[target].tolist(), scores[target].tolist())
        codes = [
            np.nan if p is None else (positive_at if p else 1.0 - positive_at) for p in predicted
        ]
        judged[target] = codes
        cuts.append(
            {
                "value": None if math.isnan(found.value) else found.value,
                "higher_is_positive": found.higher_is_positive,
                "n_positive": found.n_positive,
                "n_negative": found.n_negative,
                "statistic": None if math.isnan(found.statistic) else found.statistic,
                "reason": found.reason or None,
                "describe": found.describe(),
            }
        )
        chosen_docs = np.union1d(chosen_docs, np.unique(doc_codes[use]))
        evaluated_docs = np.union1d(
            evaluated_docs, np.unique(doc_codes[target & np.isfinite(judged)])
        )
    info = {
        "split": split.name,
        "split_kind": split.kind,
        "criterion": CRITERION,
        "thresholds": cuts,
        "n_documents_chosen_on": int(chosen_docs.size),
        "n_documents_evaluated": int(evaluated_docs.size),
        "n_outputs_evaluated": int(np.isfinite(judged).sum()),
    }
    return judged, info
