"""How much of the judged data a metric scored (scoring.stats.coverage)."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats import coverage, scored


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
