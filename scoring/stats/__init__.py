"""Correlation statistics for metric-vs-human studies (numpy and scipy only, no Django).

Typical use for a dashboard: build the document (and system) index once, draw one set
of bootstrap resamples, then reuse both for every metric × aspect cell::

    docs = Groups.from_keys(doc_ids)
    plan = draw_resamples(rng, docs, system_ids, unit=Unit.DOCUMENTS)
    result = correlate(metric, human, level=Level.SAMPLE, coefficient=Coefficient.KENDALL_B,
                       docs=docs)
    ci = bootstrap_ci(plan, metric, human, level=Level.SAMPLE,
                      coefficient=Coefficient.KENDALL_B, estimate=result)

WMT's statistics: acc23 with tie calibration (``calibrate_ties`` gives ε, then
``correlate(..., coefficient=Coefficient.ACC23, options=Options(epsilon=ε))``), SPA
(``Coefficient.SPA`` at system level), and significance clusters (``cluster``).
"""

from scoring.stats.clusters import Clusters, assign_ranks, average_ranks, cluster
from scoring.stats.correlation import (
    CorrelationResult,
    calibrate_ties,
    correlate,
    intercorrelation,
    system_totals,
)
from scoring.stats.coverage import Coverage, coverage, scored
from scoring.stats.group_correlations import DocRanks, doc_ranks
from scoring.stats.judgments import Aggregate, AggregatedJudgments, aggregate_judgments
from scoring.stats.kendall import ColumnOrder, column_order, kendall_from_orders
from scoring.stats.kendall_within import DocCodes, doc_codes, kendall_within
from scoring.stats.pairwise import TieCalibration
from scoring.stats.ranking import Groups, rank_rows, ranks_within
from scoring.stats.resampling import (
    ConfidenceInterval,
    Resamples,
    Unit,
    bootstrap_ci,
    bootstrap_distribution,
    draw_resamples,
)
from scoring.stats.settings import (
    TIE_COEFFICIENTS,
    Average,
    Coefficient,
    DegeneratePolicy,
    Level,
    Options,
    Unsupported,
    unsupported,
)
from scoring.stats.significance import (
    Alternative,
    SignificanceResult,
    Swap,
    paired_bootstrap_p,
    paired_bootstrap_test,
    permutation_test,
    williams_test,
)

__all__ = [
    "ColumnOrder",
    "DocCodes",
    "DocRanks",
    "doc_codes",
    "doc_ranks",
    "kendall_within",
    "column_order",
    "kendall_from_orders",
    "TIE_COEFFICIENTS",
    "Aggregate",
    "AggregatedJudgments",
    "Alternative",
    "Average",
    "Clusters",
    "Coefficient",
    "ConfidenceInterval",
    "CorrelationResult",
    "Coverage",
    "DegeneratePolicy",
    "Groups",
    "Level",
    "Options",
    "Resamples",
    "SignificanceResult",
    "Swap",
    "TieCalibration",
    "Unit",
    "Unsupported",
    "aggregate_judgments",
    "assign_ranks",
    "average_ranks",
    "bootstrap_ci",
    "bootstrap_distribution",
    "calibrate_ties",
    "cluster",
    "correlate",
    "coverage",
    "draw_resamples",
    "intercorrelation",
    "paired_bootstrap_p",
    "paired_bootstrap_test",
    "permutation_test",
    "rank_rows",
    "ranks_within",
    "scored",
    "unsupported",
    "system_totals",
    "williams_test",
]
