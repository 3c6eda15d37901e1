"""The cost estimate that routes a cold matrix to the request or to a worker."""

from __future__ import annotations

import time

import numpy as np
import pytest

from scoring.stats import Coefficient, Groups, Level, Unit, bootstrap_distribution, draw_resamples
from scoring.stats.correlation import correlate
from scoring.stats.cost import MatrixSize, matrix_seconds

# SummEval: 100 documents x 16 systems, a dozen metrics, 4 aspects.
SUMMEVAL = MatrixSize(outputs=1600, documents=100, systems=16, runs=12, aspects=4)
BENCH = MatrixSize(outputs=100_000, documents=2000, systems=50, runs=10, aspects=4)
BUDGET = 1.0  # the default inline budget, seconds


def test_a_dataset_level_kendall_matrix_of_summeval_size_goes_to_the_worker():
    # The case that blocked a request for 9.6 s while outputs x runs looked small.
    seconds = matrix_seconds(
        SUMMEVAL, level=Level.DATASET, coefficient=Coefficient.KENDALL_C, resamples=1000
    )
    assert seconds > BUDGET


def test_a_small_pearson_matrix_stays_in_the_request():
    for level in Level:
        seconds = matrix_seconds(
            SUMMEVAL, level=level, coefficient=Coefficient.PEARSON, resamples=1000
        )
        assert seconds < BUDGET / 2, level


def test_costlier_statistics_are_estimated_costlier_at_the_same_size():
    def est(level, coefficient, **kwargs):  # type: ignore[no-untyped-def]
        return matrix_seconds(BENCH, level=level, coefficient=coefficient, resamples=1000, **kwargs)

    pearson = est(Level.SAMPLE, Coefficient.PEARSON)
    assert est(Level.SAMPLE, Coefficient.KENDALL_C) > pearson
    assert est(Level.SAMPLE, Coefficient.ACC23) > pearson
    assert est(Level.SAMPLE, Coefficient.ACC23, tie_calibration=True) > est(
        Level.SAMPLE, Coefficient.ACC23
    )
    # the Kendall family's dataset-level bootstrap weighs pair counts by copies: about
    # Spearman's cost, more with tie windows (acc23 with ε), far more than Pearson's
    assert est(Level.DATASET, Coefficient.KENDALL_C) > 10 * est(Level.DATASET, Coefficient.PEARSON)
    assert est(Level.DATASET, Coefficient.ACC23) > est(Level.DATASET, Coefficient.KENDALL_C)
    assert est(Level.DATASET, Coefficient.SPEARMAN) > est(Level.DATASET, Coefficient.PEARSON)
    # resampling systems at sample level recomputes each resample
    assert est(Level.SAMPLE, Coefficient.SPEARMAN, unit=Unit.BOTH) > 10 * est(
        Level.SAMPLE, Coefficient.SPEARMAN
    )
    assert est(Level.SYSTEM, Coefficient.SPA) > est(Level.SYSTEM, Coefficient.PEARSON)
    # every figure at this size is above the inline budget
    assert min(pearson, est(Level.SYSTEM, Coefficient.SPA)) > BUDGET


def test_no_intervals_cost_less_and_the_estimate_grows_with_the_data():
    args = {"level": Level.DATASET, "coefficient": Coefficient.KENDALL_B}
    assert matrix_seconds(SUMMEVAL, resamples=0, **args) < BUDGET
    assert matrix_seconds(SUMMEVAL, resamples=1000, **args) > BUDGET
    bigger = MatrixSize(outputs=16_000, documents=1000, systems=16, runs=12, aspects=4)
    assert matrix_seconds(bigger, resamples=10, **args) > matrix_seconds(
        SUMMEVAL, resamples=10, **args
    )


@pytest.mark.parametrize(
    "coefficient", [Coefficient.KENDALL_C, Coefficient.KENDALL_23, Coefficient.SPEARMAN]
)
def test_the_dataset_level_estimate_is_not_far_below_the_time_it_takes(coefficient):
    # One cell, measured: the estimate (per cell) may be pessimistic, but it must not
    # promise a costly cell cheap (the estimate must be >= a fifth of it). Measured in
    # this process's CPU seconds, which other jobs on a loaded machine do not inflate as
    # they do wall-clock time.
    size = MatrixSize(outputs=1600, documents=100, systems=16, runs=1, aspects=1)
    rng = np.random.default_rng(0)
    docs = Groups.from_keys(np.repeat(np.arange(100), 16))
    human = rng.integers(1, 6, 1600).astype(float)
    metric = human + rng.normal(size=1600)
    plan = draw_resamples(rng, docs, resamples=50)
    started = time.process_time()
    correlate(metric, human, level=Level.DATASET, coefficient=coefficient)
    bootstrap_distribution(plan, metric, human, level=Level.DATASET, coefficient=coefficient)
    took = time.process_time() - started
    estimate = matrix_seconds(size, level=Level.DATASET, coefficient=coefficient, resamples=50)
    assert estimate >= took / 5
