"""Significance tests: exact on small cases, calibrated under the null, powerful when
one metric is clearly better, and Williams' test matches the literature."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from scoring.stats import (
    Alternative,
    Average,
    Coefficient,
    Level,
    Options,
    Swap,
    Unit,
    bootstrap_distribution,
    correlate,
    draw_resamples,
    paired_bootstrap_p,
    paired_bootstrap_test,
    permutation_test,
    williams_test,
)


def test_williams_test_matches_the_worked_example_of_psych_r_test():
    # psych::r.test(n = 103, r12 = .4, r13 = .5, r23 = .1) reports t = -0.89, p = 0.37.
    # By hand: |R| = 1 - .16 - .25 - .01 + 2(.4)(.5)(.1) = 0.62, rbar = 0.45,
    # t = -0.1 * sqrt(102 * 1.1 / (2 * 102/100 * 0.62 + 0.45² * 0.9³)) = -0.8913.
    t = -0.1 * math.sqrt(102 * 1.1 / (2 * 1.02 * 0.62 + 0.45**2 * 0.9**3))
    assert t == pytest.approx(-0.891, abs=5e-4)
    p = williams_test(0.4, 0.5, 0.1, 103)
    assert p == pytest.approx(2 * scipy.stats.t.sf(abs(t), 100), rel=1e-12)
    assert p == pytest.approx(0.37, abs=0.01)
    # One-sided: r12 > r13 is implausible here, r12 < r13 has half the two-sided p.
    assert williams_test(0.4, 0.5, 0.1, 103, Alternative.LESS) == pytest.approx(p / 2)
    assert williams_test(0.4, 0.5, 0.1, 103, Alternative.GREATER) == pytest.approx(1 - p / 2)
    # Unsigned (mt-metrics-eval's one-sided): half the two-sided p whichever is larger.
    assert williams_test(0.4, 0.5, 0.1, 103, Alternative.UNSIGNED) == pytest.approx(p / 2)
    assert williams_test(0.5, 0.4, 0.1, 103, Alternative.UNSIGNED) == pytest.approx(p / 2)


def test_williams_test_rejects_too_few_items_and_impossible_correlations():
    with pytest.raises(ValueError, match="n > 3"):
        williams_test(0.5, 0.4, 0.2, 3)
    with pytest.raises(ValueError, match="lie in"):
        williams_test(1.5, 0.4, 0.2, 30)


def _null_study(rng, n_docs=30, n_systems=8, gap=0.0):
    """Two metrics with equal noise (gap = 0: the null) or metric b much noisier, per
    output and per system (so b is worse at every level)."""
    docs = np.repeat(np.arange(n_docs), n_systems)
    systems = np.tile(np.arange(n_systems), n_docs)
    quality = 0.1 * rng.normal(size=n_systems)  # systems differ, but not by much
    human = rng.normal(size=docs.size) + quality[systems]
    bias_a = 0.1 * rng.normal(size=n_systems)
    bias_b = (0.1 + gap) * rng.normal(size=n_systems)
    a = human + rng.normal(size=docs.size) + bias_a[systems]
    b = human + (1.0 + gap) * rng.normal(size=docs.size) + bias_b[systems]
    return docs, systems, a, b, human


@pytest.mark.parametrize(
    ("level", "coefficient"),
    [
        (Level.SAMPLE, Coefficient.KENDALL_B),
        (Level.SAMPLE, Coefficient.PEARSON),
        (Level.DATASET, Coefficient.PEARSON),
        (Level.SYSTEM, Coefficient.SPEARMAN),
    ],
)
def test_permutation_p_values_are_roughly_uniform_when_two_metrics_are_equally_good(
    level, coefficient
):
    rng = np.random.default_rng(17)
    p_values = []
    for _ in range(200):
        docs, systems, a, b, human = _null_study(rng, n_systems=12)
        result = permutation_test(
            a,
            b,
            human,
            level=level,
            coefficient=coefficient,
            rng=rng,
            docs=docs,
            systems=systems,
            resamples=200,
        )
        p_values.append(result.p_value)
    p_values = np.array(p_values)
    assert 0.01 <= np.mean(p_values < 0.05) <= 0.10
    assert 0.35 <= np.mean(p_values) <= 0.65  # uniform on (0, 1) has mean 0.5


@pytest.mark.parametrize(
    ("level", "swap"),
    [
        (Level.SAMPLE, Swap.DOCUMENTS),
        (Level.SAMPLE, Swap.OUTPUTS),
        (Level.DATASET, Swap.OUTPUTS),
        (Level.DATASET, Swap.DOCUMENTS),
        (Level.SYSTEM, Swap.OUTPUTS),
    ],
)
def test_permutation_test_finds_a_clearly_better_metric(level, swap):
    rng = np.random.default_rng(3)
    docs, systems, a, b, human = _null_study(rng, n_docs=40, n_systems=20, gap=3.0)
    settings = {
        "level": level,
        "coefficient": Coefficient.SPEARMAN,
        "docs": docs,
        "systems": systems,
        "resamples": 300,
        "swap": swap,
    }
    two_sided = permutation_test(a, b, human, rng=rng, **settings)
    assert two_sided.delta > 0 and two_sided.p_value < 0.05
    assert two_sided.p_value >= 1 / 301  # (1 + extreme) / (1 + resamples): never 0
    assert two_sided.method == f"permutation ({swap.value})"
    greater = permutation_test(a, b, human, rng=rng, alternative=Alternative.GREATER, **settings)
    less = permutation_test(a, b, human, rng=rng, alternative=Alternative.LESS, **settings)
    assert greater.p_value < 0.05 < 0.5 < less.p_value


def test_document_swaps_give_the_exact_p_value_of_full_enumeration():
    rng = np.random.default_rng(8)
    docs, _, a, b, human = _null_study(rng, n_docs=6, n_systems=5, gap=0.7)
    kwargs = {"level": Level.SAMPLE, "coefficient": Coefficient.PEARSON, "docs": docs}
    observed = correlate(a, human, **kwargs).value - correlate(b, human, **kwargs).value
    extreme = 0
    for flips in itertools.product([False, True], repeat=6):
        swap = np.array(flips)[docs]
        delta = (
            correlate(np.where(swap, b, a), human, **kwargs).value
            - correlate(np.where(swap, a, b), human, **kwargs).value
        )
        extreme += abs(delta) >= abs(observed) - 1e-12
    exact = extreme / 64
    result = permutation_test(a, b, human, rng=rng, resamples=20_000, **kwargs)
    assert result.delta == pytest.approx(observed)
    assert result.p_value == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize(
    ("coefficient", "function"),
    [
        (Coefficient.PEARSON, scipy.stats.pearsonr),  # matrix-product path
        (Coefficient.KENDALL_B, scipy.stats.kendalltau),  # recomputed rows
    ],
)
def test_output_swaps_at_dataset_level_give_the_exact_p_value_of_full_enumeration(
    coefficient, function
):
    rng = np.random.default_rng(4)
    human = rng.normal(size=9)
    a = human + rng.normal(size=9)
    b = 10.0 + 3.0 * (human + 2.0 * rng.normal(size=9))  # another scale: z-scores matter
    za, zb = scipy.stats.zscore(a), scipy.stats.zscore(b)
    observed = function(za, human)[0] - function(zb, human)[0]
    extreme = 0
    for flips in itertools.product([False, True], repeat=9):
        swap = np.array(flips)
        delta = (
            function(np.where(swap, zb, za), human)[0] - function(np.where(swap, za, zb), human)[0]
        )
        extreme += abs(delta) >= abs(observed) - 1e-12
    result = permutation_test(
        a, b, human, level=Level.DATASET, coefficient=coefficient, rng=rng, resamples=20_000
    )
    assert result.delta == pytest.approx(observed)
    assert result.p_value == pytest.approx(extreme / 512, abs=0.01)


def test_identical_metrics_are_never_significantly_different():
    rng = np.random.default_rng(0)
    docs, systems, a, _, human = _null_study(rng)
    perm = permutation_test(
        a, a, human, level=Level.SAMPLE, coefficient=Coefficient.KENDALL_C, rng=rng, docs=docs
    )
    plan = draw_resamples(rng, docs, systems, unit=Unit.BOTH, resamples=100)
    boot = paired_bootstrap_test(
        plan, a, a, human, level=Level.SYSTEM, coefficient=Coefficient.PEARSON
    )
    assert perm.delta == 0.0 and perm.p_value == 1.0
    assert boot.delta == 0.0 and boot.p_value == 1.0


def test_both_metrics_are_judged_on_the_outputs_scored_by_both():
    rng = np.random.default_rng(1)
    docs, _, a, b, human = _null_study(rng)
    a[:5] = np.nan
    result = permutation_test(
        a, b, human, level=Level.DATASET, coefficient=Coefficient.PEARSON, rng=rng, resamples=50
    )
    b_common = np.where(np.isnan(a), np.nan, b)
    expected = correlate(b_common, human, level=Level.DATASET, coefficient=Coefficient.PEARSON)
    assert result.value_b == expected.value


@pytest.mark.parametrize(
    ("level", "unit"), [(Level.SAMPLE, Unit.DOCUMENTS), (Level.DATASET, Unit.BOTH)]
)
def test_paired_bootstrap_finds_a_clearly_better_metric(level, unit):
    rng = np.random.default_rng(5)
    docs, systems, a, b, human = _null_study(rng, n_docs=40, gap=3.0)
    plan = draw_resamples(rng, docs, systems, unit=unit, resamples=300)
    result = paired_bootstrap_test(plan, a, b, human, level=level, coefficient=Coefficient.PEARSON)
    assert result.delta > 0 and result.p_value < 0.05
    reverse = paired_bootstrap_test(
        plan,
        b,
        a,
        human,
        level=level,
        coefficient=Coefficient.PEARSON,
        alternative=Alternative.GREATER,
    )
    assert reverse.p_value > 0.5


def test_paired_bootstrap_rarely_rejects_when_two_metrics_are_equally_good():
    rng = np.random.default_rng(21)
    p_values = []
    for _ in range(150):
        docs, systems, a, b, human = _null_study(rng)
        plan = draw_resamples(rng, docs, resamples=200)
        result = paired_bootstrap_test(
            plan, a, b, human, level=Level.SAMPLE, coefficient=Coefficient.PEARSON
        )
        p_values.append(result.p_value)
    assert 0.01 <= np.mean(np.array(p_values) < 0.05) <= 0.12


def test_no_common_scored_outputs_gives_a_nan_p_value():
    result = permutation_test(
        [1.0, np.nan, 3.0],
        [np.nan, 2.0, 3.0],
        [1.0, 2.0, np.nan],
        level=Level.DATASET,
        coefficient=Coefficient.PEARSON,
        rng=np.random.default_rng(0),
    )
    assert math.isnan(result.p_value)


@pytest.mark.parametrize(
    ("coefficient", "kwargs"),
    [
        (Coefficient.PDP, {}),  # pooled pair sums swap with their documents
        (Coefficient.ACC23, {"average": Average.MICRO}),
        (Coefficient.KENDALL_LIKE, {"options": Options(threshold=1.0)}),
    ],
)
def test_document_swaps_of_the_pairwise_statistics_give_the_exact_p_value(coefficient, kwargs):
    rng = np.random.default_rng(9)
    docs, _, a, b, human = _null_study(rng, n_docs=6, n_systems=5, gap=0.7)
    human = np.round(human)  # ties
    settings = {"level": Level.SAMPLE, "coefficient": coefficient, "docs": docs, **kwargs}
    za, zb = scipy.stats.zscore(a), scipy.stats.zscore(b)
    observed = correlate(za, human, **settings).value - correlate(zb, human, **settings).value
    extreme = 0
    for flips in itertools.product([False, True], repeat=6):
        swap = np.array(flips)[docs]
        delta = (
            correlate(np.where(swap, zb, za), human, **settings).value
            - correlate(np.where(swap, za, zb), human, **settings).value
        )
        extreme += abs(delta) >= abs(observed) - 1e-12
    result = permutation_test(a, b, human, rng=rng, resamples=20_000, **settings)
    assert result.method == "permutation (documents)"
    assert result.delta == pytest.approx(observed)
    assert result.p_value == pytest.approx(extreme / 64, abs=0.01)


def test_output_swaps_at_sample_level_are_mt_metrics_eval_scheme_and_work_for_pdp():
    rng = np.random.default_rng(3)
    docs, systems, a, b, human = _null_study(rng, n_docs=30, n_systems=6, gap=3.0)
    result = permutation_test(
        a,
        b,
        human,
        level=Level.SAMPLE,
        coefficient=Coefficient.PDP,
        rng=rng,
        docs=docs,
        resamples=200,
        swap=Swap.OUTPUTS,
    )
    assert result.method == "permutation (outputs)" and result.p_value < 0.05


def test_spa_permutation_test_finds_a_clearly_better_metric():
    rng = np.random.default_rng(4)
    docs, systems, a, b, human = _null_study(rng, n_docs=20, n_systems=6, gap=3.0)
    human = human + 2.0 * systems  # systems clearly differ for the humans
    a = a + 2.0 * systems
    result = permutation_test(
        a,
        b,
        human,
        level=Level.SYSTEM,
        coefficient=Coefficient.SPA,
        rng=rng,
        docs=docs,
        systems=systems,
        resamples=60,
        options=Options(permutations=200),
    )
    assert result.delta > 0 and result.p_value < 0.05


def test_tie_thresholds_and_the_unsigned_alternative_are_refused_where_they_do_not_apply():
    rng = np.random.default_rng(0)
    docs, _, a, b, human = _null_study(rng)
    kwargs = {"level": Level.SAMPLE, "coefficient": Coefficient.ACC23, "docs": docs, "rng": rng}
    with pytest.raises(ValueError, match="paired bootstrap"):
        permutation_test(a, b, human, options=Options(epsilon=0.1), **kwargs)
    with pytest.raises(ValueError, match="Williams"):
        permutation_test(a, b, human, alternative=Alternative.UNSIGNED, **kwargs)


def test_paired_bootstrap_p_is_the_paired_bootstrap_tests_p_and_keeps_each_metrics_epsilon():
    rng = np.random.default_rng(5)
    docs, systems, a, b, human = _null_study(rng, n_docs=40, gap=1.0)
    plan = draw_resamples(rng, docs, systems, resamples=300)
    settings = {"level": Level.SAMPLE, "coefficient": Coefficient.ACC23}
    result = paired_bootstrap_test(
        plan, a, b, human, options=Options(epsilon=0.5), options_b=Options(epsilon=0.1), **settings
    )
    draws = [
        bootstrap_distribution(plan, m, human, options=Options(epsilon=e), **settings)
        for m, e in ((a, 0.5), (b, 0.1))
    ]
    assert result.p_value == paired_bootstrap_p(*draws, result.value_a, result.value_b)
    expected_b = correlate(b, human, docs=docs, options=Options(epsilon=0.1), **settings).value
    assert result.value_b == expected_b
