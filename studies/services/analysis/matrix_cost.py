"""Whether a cold correlation matrix is cheap enough to compute in the request.

The estimate is :func:`scoring.stats.cost.matrix_seconds` on the dataset's sizes (its
snapshot's manifest, else a few counting queries); the budget is ``CONCORDIA["DASHBOARD_INLINE_SECONDS"]``. Above
it, the page asks a worker and polls its progress, whatever the coefficient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache

from scoring.stats import Level, Unit
from scoring.stats.cost import MatrixSize, matrix_seconds
from studies.models import Dataset, Judgment, Output
from studies.services.analysis import snapshot

if TYPE_CHECKING:
    from studies.services.analysis.params import MatrixParams


def matrix_size(dataset: Dataset) -> MatrixSize:
    """The dataset's outputs, documents, systems, runs and judged aspects; cached per
    data version (a page polling a worker's progress asks on every poll)."""
    key = f"matrix-size:{dataset.pk}:{dataset.created_at.isoformat()}:{dataset.data_version}"
    found = cache.get(key)
    if isinstance(found, MatrixSize):
        return found
    written = snapshot.current(dataset)
    if written is not None:  # its manifest has the counts: no scan of millions of rows
        outputs, systems, aspects = (
            int(written.manifest["n_outputs"]),
            int(written.manifest["n_systems"]),
            len(written.aspects),
        )
    else:
        found = Output.objects.filter(document__dataset=dataset)
        judged = Judgment.objects.filter(output__document__dataset=dataset)
        outputs = found.count()
        systems = found.order_by().values("system_id").distinct().count()
        aspects = judged.order_by().values("aspect_id").distinct().count()
    size = MatrixSize(
        outputs=outputs,
        documents=dataset.documents.count(),
        systems=systems,
        runs=max(dataset.runs.count(), 1),
        aspects=max(aspects, 1),
    )
    cache.set(key, size, 24 * 3600)
    return size


def estimated_seconds(size: MatrixSize, params: MatrixParams) -> float:
    """The estimated cold computation time of ``params``' matrix at ``size``."""
    level = params.level_enum
    return matrix_seconds(
        size,
        level=level,
        coefficient=params.coefficient_enum,
        resamples=params.resamples if params.ci else 0,
        unit=Unit.SYSTEMS if level is Level.SYSTEM else Unit(params.unit),
        tie_calibration=params.tie_calibration,
    )


def is_cheap(dataset: Dataset, params: MatrixParams) -> bool:
    """True when the matrix is estimated to take at most the inline budget."""
    budget: float = settings.CONCORDIA["DASHBOARD_INLINE_SECONDS"]
    return estimated_seconds(matrix_size(dataset), params) <= budget
