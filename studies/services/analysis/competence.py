"""MACE competence of a dataset's annotators per aspect, over every judgment the ceiling
reads: annotator accounts and imported annotators alike (each rater of an import file,
or a file as one annotator; :mod:`studies.services.annotators`), so per-annotator data
imported in one file is assessed as the same data cut into one file per annotator.

A label aspect's answers are its labels; a scale aspect's, its scale's points (none for
a continuous scale: MACE needs categories). Fitted as the campaigns' MACE is (variational
Bayes with the MACE tool's priors, the annotation app's restarts and iterations), from a
seeded generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats.competence import Method, mace
from scoring.stats.scales import scale_points
from studies.models import Aspect, Dataset
from studies.services.analysis.ceiling import judgment_table
from studies.services.analysis.frames import ScoreFrame

RESTARTS = 10
ITERATIONS = 100
CONTINUOUS = "the aspect's scale is continuous: MACE needs a few categories"


def annotator_competence(
    dataset: Dataset, frame: ScoreFrame, seed: int = 0
) -> list[dict[str, Any]]:
    """One entry per aspect of ``frame``: each annotator's competence θ (None where it
    shared no item with another annotator), or the reason there is none."""
    table, names = judgment_table(dataset, frame, set())
    kinds = {a.pk: a for a in Aspect.objects.filter(pk__in=[x.pk for x in frame.aspects])}
    result = []
    for info in frame.aspects:
        rows = table[table[:, 1] == info.pk]
        aspect = kinds[info.pk]
        if aspect.is_labelled:
            points: Any = np.arange(len(aspect.labels), dtype=np.float64)
        else:
            points = scale_points(rows[:, 3], aspect.scale_min, aspect.scale_max)
        entry: dict[str, Any] = {"aspect": info.code, "reason": "", "annotators": []}
        if points is None:
            entry["reason"] = CONTINUOUS
            result.append(entry)
            continue
        fit = mace(
            rows[:, 0].astype(np.int64),
            rows[:, 2].astype(np.int64),
            rows[:, 3],
            labels=points,
            rng=np.random.default_rng(seed),
            restarts=RESTARTS,
            iterations=ITERATIONS,
            method=Method.VARIATIONAL,
        )
        entry["reason"] = fit.reason
        estimates = fit.by_annotator()
        entry["annotators"] = [
            {"annotator": names[int(code)], "competence": estimates[code], "answers": int(n)}
            for code, n in zip(fit.annotators.tolist(), fit.n_answers, strict=True)
        ]
        result.append(entry)
    return result
