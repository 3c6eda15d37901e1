"""Bootstrap resamples are computed exactly and the intervals cover the truth ~95%."""

import math

import numpy as np
import pytest
import scipy.stats

from scoring.stats import (
    Coefficient,
    DegeneratePolicy,
    Groups,
    Level,
    Unit,
    bootstrap_ci,
    bootstrap_distribution,
    correlate,
    draw_resamples,
)

SCIPY = {
    Coefficient.PEARSON: lambda x, y: scipy.stats.pearsonr(x, y).statistic,
    Coefficient.SPEARMAN: lambda x, y: scipy.stats.spearmanr(x, y).statistic,
    Coefficient.KENDALL_B: lambda x, y: scipy.stats.kendalltau(x, y, variant="b").statistic,
    Coefficient.KENDALL_C: lambda x, y: scipy.stats.kendalltau(x, y, variant="c").statistic,
}


def _study(seed, n_docs=12, n_systems=5):
    """Every system scores most documents; a few outputs missing, a few NaN."""
    rng = np.random.default_rng(seed)
    docs, systems = np.meshgrid(np.arange(n_docs), np.arange(n_systems), indexing="ij")
    keep = rng.random(docs.shape) < 0.85
    docs, systems = docs[keep], systems[keep]
    order = rng.permutation(docs.size)
    docs, systems = docs[order], systems[order]
    human = rng.integers(1, 6, size=docs.size).astype(float) + systems * 0.5
    metric = np.round(human + rng.normal(0, 1.5, size=docs.size), 1)
    metric[rng.random(docs.size) < 0.05] = np.nan
    return docs, systems, metric, human


def _scipy_or_nan(coefficient, x, y):
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return SCIPY[coefficient](x, y)


def _materialised(plan, b, docs, systems, metric, human, level, coefficient):
    """Resample b built output by output (a drawn copy is its own document or system),
    then correlated with scipy: the definition the fast paths must reproduce."""
    doc_list = plan.doc_draws[b] if plan.doc_draws is not None else np.unique(docs)
    sys_list = plan.system_draws[b] if plan.system_draws is not None else np.unique(systems)
    rows = []  # (document copy, system copy, x, y)
    for k, d in enumerate(doc_list):
        for j, s in enumerate(sys_list):
            for i in np.flatnonzero((docs == d) & (systems == s)):
                if np.isfinite(metric[i]) and np.isfinite(human[i]):
                    rows.append((k, j, metric[i], human[i]))
    rows = np.array(rows)
    if level is Level.DATASET:
        return _scipy_or_nan(coefficient, rows[:, 2], rows[:, 3])
    if level is Level.SYSTEM:
        copies = np.unique(rows[:, 1])
        mx = [rows[rows[:, 1] == j, 2].mean() for j in copies]
        my = [rows[rows[:, 1] == j, 3].mean() for j in copies]
        return _scipy_or_nan(coefficient, mx, my)
    values = [
        _scipy_or_nan(coefficient, rows[rows[:, 0] == k, 2], rows[rows[:, 0] == k, 3])
        for k in np.unique(rows[:, 0])
    ]
    return np.nanmean(values)


@pytest.mark.parametrize("unit", list(Unit))
@pytest.mark.parametrize(
    ("level", "coefficient"),
    [
        (Level.SAMPLE, Coefficient.PEARSON),
        (Level.SAMPLE, Coefficient.KENDALL_C),
        (Level.DATASET, Coefficient.PEARSON),
        (Level.DATASET, Coefficient.SPEARMAN),
        (Level.SYSTEM, Coefficient.PEARSON),
        (Level.SYSTEM, Coefficient.KENDALL_B),
    ],
)
def test_each_resample_equals_the_correlation_of_the_materialised_resample(
    unit, level, coefficient
):
    docs, systems, metric, human = _study(seed=7)
    plan = draw_resamples(np.random.default_rng(1), docs, systems, unit=unit, resamples=6)
    got = bootstrap_distribution(plan, metric, human, level=level, coefficient=coefficient)
    expected = [
        _materialised(plan, b, docs, systems, metric, human, level, coefficient) for b in range(6)
    ]
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_same_generator_seed_gives_the_same_interval_and_another_seed_does_not():
    docs, systems, metric, human = _study(seed=3, n_docs=40)
    settings = {"level": Level.SAMPLE, "coefficient": Coefficient.SPEARMAN}
    first = bootstrap_ci(draw_resamples(np.random.default_rng(5), docs), metric, human, **settings)
    again = bootstrap_ci(draw_resamples(np.random.default_rng(5), docs), metric, human, **settings)
    other = bootstrap_ci(draw_resamples(np.random.default_rng(6), docs), metric, human, **settings)
    assert (first.low, first.high) == (again.low, again.high)
    assert (first.low, first.high) != (other.low, other.high)
    value = correlate(metric, human, docs=docs, **settings).value
    assert first.low < value < first.high
    assert first.resamples == 1000 and first.unit is Unit.DOCUMENTS and first.alpha == 0.05


def test_passing_the_estimate_reuses_its_per_document_values():
    docs, systems, metric, human = _study(seed=9, n_docs=30)
    index = Groups.from_keys(docs)
    plan = draw_resamples(np.random.default_rng(0), index, resamples=200)
    settings = {"level": Level.SAMPLE, "coefficient": Coefficient.KENDALL_B}
    estimate = correlate(metric, human, docs=index, **settings)
    with_estimate = bootstrap_distribution(plan, metric, human, estimate=estimate, **settings)
    without = bootstrap_distribution(plan, metric, human, **settings)
    np.testing.assert_array_equal(with_estimate, without)
    with pytest.raises(ValueError, match="other settings"):
        bootstrap_distribution(
            plan,
            metric,
            human,
            estimate=estimate,
            level=Level.SAMPLE,
            coefficient=Coefficient.PEARSON,
        )


def test_zero_policy_reaches_the_bootstrap():
    docs = np.repeat(np.arange(4), 3)
    metric = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], dtype=float)
    human = np.array([1, 2, 3, 1, 3, 2, 2, 2, 2, 2, 2, 2], dtype=float)
    plan = draw_resamples(np.random.default_rng(0), docs, resamples=300)
    kwargs = {"level": Level.SAMPLE, "coefficient": Coefficient.PEARSON}
    skip = bootstrap_distribution(plan, metric, human, **kwargs)
    zero = bootstrap_distribution(plan, metric, human, policy=DegeneratePolicy.ZERO, **kwargs)
    # Only documents 0 (r = 1) and 1 (r = 0.5) count under SKIP; under ZERO the two
    # constant documents pull every resample that draws them towards 0.
    assert np.nanmin(skip) >= 0.5 and np.nanmax(skip) <= 1.0
    assert np.nanmean(zero) < np.nanmean(skip)
    ci = bootstrap_ci(plan, metric, human, **kwargs)
    assert ci.n_undefined == int(np.isnan(skip).sum()) > 0  # resamples of constant docs only


def _expected_sample_pearson(n, rho):
    """E[r] for n pairs of a bivariate normal, by a large simulation (the truth the
    sample-level statistic, a mean of per-document r, estimates)."""
    rng = np.random.default_rng(123)
    x = rng.normal(size=(200_000, n))
    y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=x.shape)
    x -= x.mean(1, keepdims=True)
    y -= y.mean(1, keepdims=True)
    return float(np.mean((x * y).sum(1) / np.sqrt((x * x).sum(1) * (y * y).sum(1))))


@pytest.mark.parametrize("level", [Level.SAMPLE, Level.DATASET])
def test_bootstrap_interval_covers_the_true_correlation_about_95_percent_of_the_time(level):
    rho, n_docs, n_per_doc, n_sims = 0.5, 80, 6, 200
    truth = _expected_sample_pearson(n_per_doc, rho) if level is Level.SAMPLE else rho
    rng = np.random.default_rng(1)
    docs = np.repeat(np.arange(n_docs), n_per_doc)
    index = Groups.from_keys(docs)
    covered = 0
    for _ in range(n_sims):
        x = rng.normal(size=docs.size)
        y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=docs.size)
        plan = draw_resamples(rng, index, resamples=400)
        ci = bootstrap_ci(plan, x, y, level=level, coefficient=Coefficient.PEARSON)
        covered += ci.low <= truth <= ci.high
    assert 0.88 <= covered / n_sims <= 0.99


def test_resampling_systems_needs_system_keys():
    with pytest.raises(ValueError, match="system keys"):
        draw_resamples(np.random.default_rng(0), [0, 0, 1], unit=Unit.BOTH)
