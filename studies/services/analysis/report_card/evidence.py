"""What the report card's pieces (:mod:`.pieces`) share: each annotator's answers on an
aspect as a matrix, the alternative-annotator test's requirements, and finite floats for
JSON."""

from __future__ import annotations

import math

from studies.services.analysis.label_cells import annotator_matrix

__all__ = ["MIN_ANNOTATORS", "MIN_ITEMS", "annotator_matrix", "num"]

# the alt-test's requirements (the paper's): three annotators per item, 30 items each
MIN_ANNOTATORS = 3
MIN_ITEMS = 30


def num(value: float | None) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    return float(value) if value is not None and math.isfinite(value) else None
