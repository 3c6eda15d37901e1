"""What a correlation statistic is, besides the data: its coefficient (Kendall's variant
included), level, average, policy for degenerate groups and the pairwise statistics'
options, and which combinations exist (:func:`unsupported`).

The computations are :mod:`scoring.stats.group_correlations` (per group, vectorised)
and :mod:`scoring.stats.correlation` (the levels).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Level(Enum):
    """Where the correlation is taken."""

    SAMPLE = "sample"  # within each document across its outputs, then averaged
    DATASET = "dataset"  # all outputs pooled
    SYSTEM = "system"  # per-system means, then correlated


class Coefficient(Enum):
    """The correlation coefficient or agreement statistic; the value names Kendall's
    variant."""

    PEARSON = "pearson"
    SPEARMAN = "spearman"
    KENDALL_B = "kendall_tau_b"
    KENDALL_C = "kendall_tau_c"
    KENDALL_23 = "kendall_tau_23"  # Deutsch et al. 2023: ties count, = 2·acc23 − 1
    ACC23 = "acc23"  # pairwise accuracy with ties (WMT24/25's segment level, tie-calibrated)
    KENDALL_LIKE = "kendall_like"  # WMT20's: pairs whose human scores differ enough
    PDP = "pdp"  # pairwise difference Pearson
    SPA = "spa"  # soft pairwise accuracy (WMT24/25's system level)


class Average(Enum):
    """How sample level averages its per-document values."""

    MACRO = "macro"  # every document counts the same
    MICRO = "micro"  # by its scored outputs (Kendall-like: by the pairs it counted)


@dataclass(frozen=True)
class Options:
    """Settings of the pairwise statistics (the classic coefficients ignore them)."""

    epsilon: float = 0.0  # acc23, τ23: metric differences of at most ε are ties
    threshold: float = 25.0  # Kendall-like: the human difference a pair needs (WMT: 25 of 100)
    permutations: int = 1000  # SPA: permutations per system pair
    seed: int = 4  # SPA: seed of the sign flips (mt-metrics-eval's)


DEFAULT_OPTIONS = Options()

# Where each statistic exists. acc23, τ23 and Kendall-like compare pairs of outputs
# (within documents, or pooled); SPA compares pairs of systems.
SEGMENT_LEVELS = frozenset({"sample", "dataset"})
LEVELS_OF = {
    Coefficient.KENDALL_23: SEGMENT_LEVELS,
    Coefficient.ACC23: SEGMENT_LEVELS,
    Coefficient.KENDALL_LIKE: SEGMENT_LEVELS,
    Coefficient.SPA: frozenset({"system"}),
}
TIE_COEFFICIENTS = frozenset({Coefficient.ACC23, Coefficient.KENDALL_23})


@dataclass(frozen=True)
class Unsupported:
    """Why a combination of settings has no statistic: ``option`` names the setting to
    change (coefficient, tie_calibration or average)."""

    option: str
    message: str


def unsupported(
    coefficient: Coefficient,
    level: Level,
    *,
    average: Average = Average.MACRO,
    tie_calibration: bool = False,
) -> Unsupported | None:
    """None when ``coefficient`` exists at ``level`` with these settings, else why not."""
    levels = LEVELS_OF.get(coefficient)
    if levels is not None and level.value not in levels:
        if coefficient is Coefficient.SPA:
            text = (
                "spa (soft pairwise accuracy) compares every pair of systems: it is a "
                "system-level statistic; choose level system"
            )
        else:
            text = (
                f"{coefficient.value} compares pairs of outputs: it exists at sample level "
                "(grouped by document, WMT's item grouping) and dataset level (all "
                "pairs pooled), not at system level"
            )
        return Unsupported("coefficient", text)
    if tie_calibration and coefficient not in TIE_COEFFICIENTS:
        return Unsupported(
            "tie_calibration", "tie calibration applies to acc23 and kendall_23 only"
        )
    if average is Average.MICRO:
        if level is not Level.SAMPLE:
            return Unsupported("average", "micro averaging weighs documents: sample level only")
        if coefficient is Coefficient.PDP:
            return Unsupported(
                "average",
                "pdp pools the pairs of every document into one correlation: "
                "there is no per-document average to weigh",
            )
    return None


class DegeneratePolicy(Enum):
    """What a group whose human or metric scores are all equal contributes.

    Groups with fewer than two scored pairs are skipped under either policy, and
    missing scores (NaN) always drop their pair.
    """

    SKIP = "skip"  # leave the group out of the average (UniEval, G-Eval)
    ZERO = "zero"  # count the group as a correlation of 0


@dataclass(frozen=True)
class Settings:
    """Everything a statistic depends on besides the data."""

    level: Level
    coefficient: Coefficient
    policy: DegeneratePolicy
    average: Average
    options: Options
