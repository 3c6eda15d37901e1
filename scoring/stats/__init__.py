"""Correlation statistics for metric-vs-human studies (numpy and scipy only, no Django).

Typical use for a dashboard: build the document (and system) index once, draw one set
of bootstrap resamples, then reuse both for every metric × aspect cell::

    docs = Groups.from_keys(doc_ids)
    plan = draw_resamples(rng, docs, system_ids, unit=Unit.DOCUMENTS)
    result = correlate(metric, human, level=Level.SAMPLE, coefficient=Coefficient.KENDALL_B,
                       docs=docs)
    ci = bootstrap_ci(plan, metric, human, level=Level.SAMPLE,
                      coefficient=Coefficient.KENDALL_B, estimate=result)
"""

from scoring.stats.correlation import (
    Coefficient,
    CorrelationResult,
    DegeneratePolicy,
    Level,
    correlate,
    intercorrelation,
)
from scoring.stats.judgments import Aggregate, AggregatedJudgments, aggregate_judgments
from scoring.stats.ranking import Groups, rank_rows
from scoring.stats.resampling import (
    ConfidenceInterval,
    Resamples,
    Unit,
    bootstrap_ci,
    bootstrap_distribution,
    draw_resamples,
)
from scoring.stats.significance import (
    Alternative,
    SignificanceResult,
    Swap,
    paired_bootstrap_test,
    permutation_test,
    williams_test,
)

__all__ = [
    "Aggregate",
    "AggregatedJudgments",
    "Alternative",
    "Coefficient",
    "ConfidenceInterval",
    "CorrelationResult",
    "DegeneratePolicy",
    "Groups",
    "Level",
    "Resamples",
    "SignificanceResult",
    "Swap",
    "Unit",
    "aggregate_judgments",
    "bootstrap_ci",
    "bootstrap_distribution",
    "correlate",
    "draw_resamples",
    "intercorrelation",
    "paired_bootstrap_test",
    "permutation_test",
    "rank_rows",
    "williams_test",
]
