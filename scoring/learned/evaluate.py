"""How well scores agree with human preferences: pairwise accuracy and sample-level
Spearman (through :mod:`scoring.stats`)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from scoring.learned.pairs import Pair
from scoring.stats import Coefficient, Level, correlate


def pairwise_accuracy(scores: Mapping[Hashable, float], pairs: Sequence[Pair]) -> float:
    """Share of pairs where the better output scores higher (a tie counts one half)."""
    if not pairs:
        return math.nan
    right = 0.0
    for pair in pairs:
        good, bad = scores[pair.good], scores[pair.bad]
        right += 1.0 if good > bad else 0.5 if good == bad else 0.0
    return right / len(pairs)


def sample_spearman(scores: Sequence[float], human: Sequence[float], docs: Sequence[str]) -> float:
    """Spearman ρ within each document across its outputs, averaged over documents."""
    if not scores:
        return math.nan
    result = correlate(
        np.asarray(scores, dtype=np.float64),
        np.asarray(human, dtype=np.float64),
        level=Level.SAMPLE,
        coefficient=Coefficient.SPEARMAN,
        docs=np.asarray(docs, dtype=object),
    )
    return float(result.value)
