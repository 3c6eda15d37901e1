"""How much of the judged data a metric scored (scoring.stats.coverage)."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats import Groups, coverage, scored


def test_coverage_counts_the_judged_outputs_and_documents_scored():
    human = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 3.0])
    metric = np.array([0.1, np.nan, 0.3, np.nan, np.nan, 0.2])
    docs = np.array([0, 0, 1, 1, 2, 2])
    covered = coverage(metric, human, docs)
    assert (covered.n_outputs, covered.n_documents) == (2, 2)  # outputs 0 and 5
    assert (covered.of_outputs, covered.of_documents) == (5, 3)
    assert covered.share == pytest.approx(0.4)
    with pytest.raises(ValueError, match="one entry per output"):
        coverage(metric, human, docs[:3])
    assert scored(metric, human).tolist() == [True, False, False, False, False, True]


def test_coverage_from_the_documents_groups_equals_coverage_from_their_codes():
    """A matrix passes its documents' Groups (counted once where every output is
    judged and scored); the figures are those the codes give, with or without gaps."""
    rng = np.random.default_rng(4)
    docs = np.repeat(np.arange(40), rng.integers(1, 9, size=40))
    metric, human = rng.normal(size=docs.size), rng.normal(size=docs.size)
    gappy = metric.copy()
    gappy[::7] = np.nan
    for m in (metric, gappy):
        assert coverage(m, human, Groups.from_keys(docs)) == coverage(m, human, docs)
