"""The report card's human reference: the annotators' values (``humans``, the default), or
the adjudicated values of the disagreement review (``adjudicated``,
:class:`~studies.models.Adjudication`) where there are some, the annotators' elsewhere.

With ``adjudicated``, an output with an adjudicated value on an aspect is compared with
that value, every other output with its annotators' mean as before: the frame's human
column (the correlation, the prompt variant's change, top-k) holds the adjudicated value,
and a label aspect's judge statistics read each annotator's label on that output as the
adjudicated one (the annotators' own agreement, the human ceiling, the
alternative-annotator test and agreement on the scale stay the annotators'). The
adjudications are the study's (a study card), or every study's of the dataset (the
dataset card; where two studies adjudicated one output differently, the latest).

Adjudications do not change the dataset's data version: the card's parameters carry a
fingerprint of the adjudicated values it used (:func:`fingerprint`), so a card is cached
under its reference and its adjudications, and the two references never share a cache
entry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import numpy as np

from studies.models import Adjudication, Dataset, Study
from studies.services.analysis.frames import AspectInfo, ScoreFrame
from studies.services.analysis.report_card.params import CardParams
from studies.services.tuning.labels import GOLDS

HUMANS, ADJUDICATED = "humans", "adjudicated"
REFERENCES = GOLDS  # the same choice as a tuning's gold (the API's GoldEnum)

Values = dict[tuple[int, int], float]  # (output id, aspect id) → adjudicated value


def adjudicated_values(dataset_pk: int, study_pk: int | None) -> Values:
    """The adjudicated values a card reads: study ``study_pk``'s, or (None) every study's
    of the dataset, the latest where two studies disagree."""
    rows = Adjudication.objects.filter(study__dataset_id=dataset_pk)
    if study_pk is not None:
        rows = rows.filter(study_id=study_pk)
    found: Values = {}
    ordered = rows.order_by("updated_at", "pk").values_list("output_id", "aspect_id", "value")
    for output, aspect, value in ordered:
        found[(output, aspect)] = float(value)  # a later one replaces an earlier one
    return found


def fingerprint(values: Values) -> str:
    """What identifies a set of adjudicated values ("" when there are none)."""
    if not values:
        return ""
    raw = json.dumps(sorted([o, a, v] for (o, a), v in values.items()))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def substitute(frame: ScoreFrame, values: Values) -> tuple[ScoreFrame, dict[str, dict[str, int]]]:
    """A copy of ``frame`` whose human column holds the adjudicated value of each judged
    output that has one, and per aspect code how many of its judged outputs do
    (``adjudicated``) of how many (``outputs``). An adjudicated output nobody judged in
    this frame (its judgments left out, say) is not added."""
    human = np.array(frame.human, dtype=np.float64, order="F")  # a copy: the frame is cached
    index = {int(pk): k for k, pk in enumerate(frame.output_ids)}
    counts: dict[str, dict[str, int]] = {}
    for j, aspect in enumerate(frame.aspects):
        judged = np.isfinite(human[:, j])
        n = 0
        for (output, aspect_pk), value in values.items():
            k = index.get(output)
            if aspect_pk == aspect.pk and k is not None and judged[k]:
                human[k, j] = value
                n += 1
        counts[aspect.code] = {"adjudicated": n, "outputs": int(np.count_nonzero(judged))}
    return replace(frame, human=human), counts


def reference_humans(
    humans: np.ndarray, frame: ScoreFrame, aspect: AspectInfo, values: Values
) -> np.ndarray:
    """The annotators' answers (annotators × the frame's outputs) a label aspect's judge
    is compared with: on an adjudicated output, every answer given there reads as the
    adjudicated value (so the output weighs as before); ``humans`` itself when no output
    of the aspect is adjudicated."""
    index = {int(pk): k for k, pk in enumerate(frame.output_ids)}
    found = [
        (index[output], value)
        for (output, aspect_pk), value in values.items()
        if aspect_pk == aspect.pk and output in index
    ]
    if not found:
        return humans
    out = np.array(humans, dtype=np.float64)
    for k, value in found:
        answered = np.isfinite(out[:, k])
        out[answered, k] = value
    return out


def summary(reference: str, study: int | None, counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    """What the card says of its reference: which one, whose adjudications, and per
    aspect code how many of its judged outputs are adjudicated."""
    return {"reference": reference, "study": study, "aspects": counts}


def with_reference(params: CardParams, dataset: Dataset, study: Study | None) -> CardParams:
    """``params`` with the adjudications their reference reads: ``study``'s (a study card,
    or the one a link names), else every study's of the dataset, and their fingerprint."""
    if params.reference != ADJUDICATED:
        return params.on_reference(None, "")
    pk = study.pk if study is not None and study.dataset_id == dataset.pk else None
    return params.on_reference(pk, fingerprint(adjudicated_values(dataset.pk, pk)))
