"""How long a correlation matrix takes to compute, estimated before computing it.

The dashboards compute a cold matrix in the request only when it is cheap, and hand
the rest to a worker that reports progress. Counting outputs × runs is not enough: at
one size a sample-level Pearson matrix takes milliseconds and a dataset-level Kendall
matrix with 1,000 bootstrap resamples minutes. :func:`matrix_seconds` adds up, for every
cell, the point estimate, the bootstrap (resamples × what one resample costs on the
path :mod:`scoring.stats.resampling` takes), tie calibration, and SPA's permutation
tests, from the sizes alone.

The constants are seconds per unit of work, measured once with
``scoring.stats.correlate``, ``bootstrap_distribution`` and ``calibrate_ties`` on
synthetic data (1,600 and 20,000 outputs; 100-400 documents × 16-50 systems, 50-1,000
resamples) on the development machine (2 shared cores, load average about 1.6), and
rounded up. They are meant to be right within a factor of a few: enough to tell a
30 ms matrix from a 30 s one, which is all the routing needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from scoring.stats.pairwise import CALIBRATION_MAX_PAIRS
from scoring.stats.resampling import Unit
from scoring.stats.settings import Coefficient, Level

PAIRWISE = frozenset({Coefficient.ACC23, Coefficient.KENDALL_23, Coefficient.KENDALL_LIKE})

# Sample level, per output (classic coefficients) or per pair within a document
# (acc23, τ23, Kendall-like), for the point estimate.
SAMPLE_PER_OUTPUT = {
    Coefficient.PEARSON: 5e-8,
    Coefficient.PDP: 1e-7,
    Coefficient.SPEARMAN: 4e-7,
    Coefficient.KENDALL_B: 5e-7,
    Coefficient.KENDALL_C: 5e-7,
}
SAMPLE_PER_PAIR = 3e-8
# Sample-level bootstrap over documents: a gather of per-document values per resample.
SAMPLE_RESAMPLE_PER_DOCUMENT = 1e-8
SAMPLE_PDP_RESAMPLE_PER_DOCUMENT = 8e-8
# Dataset level, per output, for the point estimate (the pairwise statistics sort).
DATASET_PER_OUTPUT = {
    Coefficient.PEARSON: 4e-8,
    Coefficient.PDP: 4e-8,
    Coefficient.SPEARMAN: 3e-7,
    Coefficient.KENDALL_B: 9e-7,
    Coefficient.KENDALL_C: 9e-7,
}
DATASET_PAIRWISE_PER_OUTPUT = 2.2e-6
# Dataset-level bootstrap: Pearson (and PDP) from per-document sums; Spearman
# vectorised over per-value copy counts; the Kendall family from pair counts weighted
# by copies (scoring.stats.weighted_pairs). The Kendall family's figures were measured
# on 1,600-100,000 outputs (5 and 13 human levels, documents or both resampled, 1,000
# resamples) beside Spearman's in the same runs, the machine under a load average of
# about 9: τ-b, τ-c and Kendall-like took 0.4-1.2 times Spearman's time (the upper end
# on 1,600 outputs, where each block's fixed cost counts), acc23 and τ23 with ε > 0
# (two tie windows spanning most outputs) 0.7-2.6 times; their constants are
# Spearman's scaled by the upper ends. The Kendall tree is log2(distinct values) deep:
# with continuous scores on both sides (20,000 outputs, 15 deep) τ-b took 2 times
# Spearman's time, so such data is underestimated by up to about 1.6.
DATASET_PEARSON_RESAMPLE_PER_DOCUMENT = 2e-8
DATASET_SPEARMAN_RESAMPLE_PER_OUTPUT = 8e-8
DATASET_KENDALL_RESAMPLE_PER_OUTPUT = 1e-7
DATASET_TIES_RESAMPLE_PER_OUTPUT = 2.1e-7  # acc23, τ23 (ε unknown here: taken > 0)
# System level: per-system means, then a handful of values per resample.
SYSTEM_PER_OUTPUT = 3e-8
SYSTEM_PER_RESAMPLE = 3e-6
# SPA: each distinct score set's pairwise p-values (one per run and one per aspect, the
# rest is memoised): a permutations × documents × systems product, then permutations ×
# pairs comparisons.
SPA_PER_PERMUTED_CELL = 3.5e-10
SPA_PER_PERMUTED_PAIR = 3e-9
# ... and per cell, both sides' per-(system, document) means and the memo's lookup.
SPA_CELL_PER_OUTPUT = 1e-7
# Tie calibration, per pair listed: documents' pairs (compared in blocks), or the
# sample of the pooled pairs at dataset level (drawn, plus one sort of the outputs).
CALIBRATION_PER_PAIR = 6e-8
DATASET_CALIBRATION_PER_PAIR = 3.5e-7
# Per cell whatever the statistic: coverage, masks, the cell's bookkeeping.
CELL_OVERHEAD = 1e-3
CELL_PER_OUTPUT = 3e-8


@dataclass(frozen=True)
class MatrixSize:
    """What a matrix's cost depends on besides its settings."""

    outputs: int
    documents: int
    systems: int
    runs: int
    aspects: int


def point_seconds(coefficient: Coefficient, level: Level, size: MatrixSize) -> float:
    """One cell's point estimate (SPA's p-values excluded: see :func:`matrix_seconds`)."""
    n = max(size.outputs, 0)
    if level is Level.SYSTEM:
        return SYSTEM_PER_OUTPUT * n
    if level is Level.DATASET:
        if coefficient in PAIRWISE:
            return DATASET_PAIRWISE_PER_OUTPUT * n
        return DATASET_PER_OUTPUT.get(coefficient, DATASET_PAIRWISE_PER_OUTPUT) * n
    if coefficient in PAIRWISE:
        return SAMPLE_PER_PAIR * _document_pairs(size)
    return SAMPLE_PER_OUTPUT.get(coefficient, SAMPLE_PER_PAIR * _width(size)) * n


def resample_seconds(coefficient: Coefficient, level: Level, unit: Unit, size: MatrixSize) -> float:
    """One bootstrap resample of one cell, on the path the resampling module takes."""
    if level is Level.SYSTEM:
        return SYSTEM_PER_RESAMPLE
    if level is Level.SAMPLE:
        if unit is not Unit.DOCUMENTS:  # each resample materialised and recomputed
            return point_seconds(coefficient, level, size)
        per_doc = (
            SAMPLE_PDP_RESAMPLE_PER_DOCUMENT
            if coefficient is Coefficient.PDP
            else (SAMPLE_RESAMPLE_PER_DOCUMENT)
        )
        return per_doc * size.documents
    if coefficient in (Coefficient.PEARSON, Coefficient.PDP):
        cells = size.documents * (size.systems if unit is Unit.BOTH else 1)
        return DATASET_PEARSON_RESAMPLE_PER_DOCUMENT * max(cells, size.systems)
    if coefficient is Coefficient.SPEARMAN:
        return DATASET_SPEARMAN_RESAMPLE_PER_OUTPUT * size.outputs
    if coefficient in (Coefficient.ACC23, Coefficient.KENDALL_23):
        return DATASET_TIES_RESAMPLE_PER_OUTPUT * size.outputs
    if coefficient in (Coefficient.KENDALL_B, Coefficient.KENDALL_C, Coefficient.KENDALL_LIKE):
        return DATASET_KENDALL_RESAMPLE_PER_OUTPUT * size.outputs
    return point_seconds(coefficient, level, size)


def calibration_seconds(level: Level, size: MatrixSize) -> float:
    """Tie calibration of one cell."""
    if level is Level.DATASET:
        n = size.outputs
        pairs = min(n * (n - 1) / 2, float(CALIBRATION_MAX_PAIRS))
        return DATASET_CALIBRATION_PER_PAIR * pairs + DATASET_PAIRWISE_PER_OUTPUT * n
    return CALIBRATION_PER_PAIR * min(_document_pairs(size), float(CALIBRATION_MAX_PAIRS))


def spa_seconds(size: MatrixSize, permutations: int) -> float:
    """The matrix's SPA p-values: one set per run and per aspect."""
    pairs = size.systems * (size.systems - 1) / 2
    per_set = permutations * (
        SPA_PER_PERMUTED_CELL * size.documents * size.systems + SPA_PER_PERMUTED_PAIR * pairs
    )
    return (size.runs + size.aspects) * per_set


def matrix_seconds(
    size: MatrixSize,
    *,
    level: Level,
    coefficient: Coefficient,
    resamples: int,
    unit: Unit = Unit.DOCUMENTS,
    tie_calibration: bool = False,
    permutations: int = 1000,
) -> float:
    """Estimated seconds to compute a runs × aspects matrix (``resamples`` 0: no
    intervals), its aspects' intercorrelation included."""
    cells = size.runs * size.aspects
    if level is Level.SYSTEM:
        unit = Unit.SYSTEMS
    per_cell = CELL_OVERHEAD + CELL_PER_OUTPUT * size.outputs
    per_cell += point_seconds(coefficient, level, size)
    per_cell += max(resamples, 0) * resample_seconds(coefficient, level, unit, size)
    if tie_calibration:
        per_cell += calibration_seconds(level, size)
    total = cells * per_cell
    if coefficient is Coefficient.SPA:
        total += cells * SPA_CELL_PER_OUTPUT * size.outputs + spa_seconds(size, permutations)
    else:
        pairs_of_aspects = size.aspects * (size.aspects + 1) / 2
        total += pairs_of_aspects * point_seconds(coefficient, level, size)
    return float(total)


def _width(size: MatrixSize) -> float:
    return size.outputs / max(size.documents, 1)


def _document_pairs(size: MatrixSize) -> float:
    """Pairs within documents, taking every document as of average size."""
    width = _width(size)
    return size.outputs * max(width - 1.0, 0.0) / 2
