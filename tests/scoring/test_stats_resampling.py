"""Bootstrap resamples are computed exactly and the intervals cover the truth ~95%."""

import math

import numpy as np
import pytest
import scipy.stats

from scoring.stats import (
    Average,
    Coefficient,
    DegeneratePolicy,
    Groups,
    Level,
    Options,
    Resamples,
    Unit,
    bootstrap_ci,
    bootstrap_distribution,
    correlate,
    draw_resamples,
)
from scoring.stats.resampling import _weighted_document_mean

DEFAULT_OPTIONS = Options()
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


def _materialised_correlate(plan, b, docs, systems, metric, human, level, coefficient, **kwargs):
    """Resample b built output by output, each drawn copy a document (or system) of its
    own, then given to correlate: the definition for statistics scipy lacks."""
    doc_list = plan.doc_draws[b] if plan.doc_draws is not None else np.unique(docs)
    sys_list = plan.system_draws[b] if plan.system_draws is not None else np.unique(systems)
    index, doc_copy, sys_copy = [], [], []
    for k, d in enumerate(doc_list):
        for j, s in enumerate(sys_list):
            found = np.flatnonzero((docs == d) & (systems == s))
            index += list(found)
            doc_copy += [k] * found.size
            sys_copy += [j] * found.size
    index = np.array(index, dtype=int)
    return correlate(
        metric[index],
        human[index],
        level=level,
        coefficient=coefficient,
        docs=np.array(doc_copy),
        systems=np.array(sys_copy),
        **kwargs,
    ).value


@pytest.mark.parametrize(
    ("level", "coefficient", "unit", "kwargs"),
    [
        (Level.SAMPLE, Coefficient.ACC23, Unit.DOCUMENTS, {"options": Options(epsilon=0.3)}),
        (Level.SAMPLE, Coefficient.ACC23, Unit.BOTH, {"options": Options(epsilon=0.3)}),
        (
            Level.SAMPLE,
            Coefficient.KENDALL_LIKE,
            Unit.DOCUMENTS,
            {"options": Options(threshold=1.0), "average": Average.MICRO},
        ),
        (Level.SAMPLE, Coefficient.PDP, Unit.DOCUMENTS, {}),
        (Level.SAMPLE, Coefficient.PDP, Unit.BOTH, {}),
        (Level.SAMPLE, Coefficient.PEARSON, Unit.DOCUMENTS, {"average": Average.MICRO}),
        (Level.SAMPLE, Coefficient.SPEARMAN, Unit.BOTH, {"average": Average.MICRO}),
        (Level.DATASET, Coefficient.ACC23, Unit.DOCUMENTS, {"options": Options(epsilon=0.2)}),
        (Level.DATASET, Coefficient.KENDALL_23, Unit.SYSTEMS, {}),
        (Level.DATASET, Coefficient.PDP, Unit.BOTH, {}),
    ],
)
def test_new_statistics_resample_as_their_materialised_resamples(level, coefficient, unit, kwargs):
    docs, systems, metric, human = _study(seed=13)
    plan = draw_resamples(np.random.default_rng(3), docs, systems, unit=unit, resamples=5)
    estimate = correlate(
        metric, human, level=level, coefficient=coefficient, docs=docs, systems=systems, **kwargs
    )
    got = bootstrap_distribution(
        plan,
        metric,
        human,
        level=level,
        coefficient=coefficient,
        estimate=estimate if level is Level.SAMPLE else None,
        **kwargs,
    )
    expected = [
        _materialised_correlate(plan, b, docs, systems, metric, human, level, coefficient, **kwargs)
        for b in range(5)
    ]
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_a_nearly_constant_resample_is_correlated_as_correlate_does_not_called_constant():
    # Document 0's metric scores vary by 1e-5 around 1000 (variance ~1e-10 of their
    # sum of squares about the data's mean): a real correlation, not rounding.
    rng = np.random.default_rng(0)
    docs = np.repeat(np.arange(10), 6)
    human = rng.normal(size=docs.size)
    metric = rng.normal(size=docs.size)
    noise = rng.normal(size=6)
    metric[:6] = 1000.0 + 1e-5 * noise
    human[:6] = noise + 0.5 * rng.normal(size=6)
    metric[6:12] = 7.0  # document 1: exactly constant
    index = Groups.from_keys(docs)
    only = [np.zeros((1, 10), dtype=np.intp), np.ones((1, 10), dtype=np.intp)]
    for doc, draws in enumerate(only):
        plan = Resamples(
            unit=Unit.DOCUMENTS, docs=index, systems=None, doc_draws=draws, system_draws=None
        )
        for policy in DegeneratePolicy:
            settings = {
                "level": Level.DATASET,
                "coefficient": Coefficient.PEARSON,
                "policy": policy,
            }
            got = bootstrap_distribution(plan, metric, human, **settings)[0]
            rows = slice(6 * doc, 6 * doc + 6)
            expected = correlate(metric[rows], human[rows], **settings).value
            np.testing.assert_allclose(got, expected, rtol=1e-9)
    assert np.isfinite(
        correlate(metric[:6], human[:6], level=Level.DATASET, coefficient=Coefficient.PEARSON).value
    )


def test_spa_intervals_resample_systems_only():
    docs, systems, metric, human = _study(seed=2)
    plan = draw_resamples(np.random.default_rng(0), docs, systems, unit=Unit.DOCUMENTS, resamples=3)
    with pytest.raises(ValueError, match="resample systems only"):
        bootstrap_distribution(plan, metric, human, level=Level.SYSTEM, coefficient=Coefficient.SPA)
    plan = draw_resamples(np.random.default_rng(0), docs, systems, unit=Unit.SYSTEMS, resamples=50)
    values = bootstrap_distribution(
        plan, metric, human, level=Level.SYSTEM, coefficient=Coefficient.SPA
    )
    assert values.shape == (50,) and np.all((values >= 0) & (values <= 1))


def _loop_reference(plan, metric, human, coefficient, policy, options=DEFAULT_OPTIONS):
    """The previous dataset-level path, kept as the reference: each resample
    materialised output by output (multiplicity = document draws x system draws) and
    passed to correlate()."""
    valid = np.isfinite(metric) & np.isfinite(human)
    x, y = metric[valid], human[valid]
    doc_codes = plan.docs.codes[valid]
    sys_codes = None if plan.systems is None else plan.systems.codes[valid]
    out = np.full(plan.size, np.nan)
    for b in range(plan.size):
        times = np.ones(x.size, dtype=np.intp)
        if plan.doc_counts is not None:
            times = times * plan.doc_counts[b].astype(np.intp)[doc_codes]
        if plan.system_counts is not None:
            times = times * plan.system_counts[b].astype(np.intp)[sys_codes]
        items = np.repeat(np.arange(x.size), times)
        out[b] = correlate(
            x[items],
            y[items],
            level=Level.DATASET,
            coefficient=coefficient,
            policy=policy,
            options=options,
        ).value
    return out


@pytest.mark.parametrize("policy", list(DegeneratePolicy))
@pytest.mark.parametrize("unit", list(Unit))
@pytest.mark.parametrize("seed", [3, 11])
def test_vectorised_dataset_spearman_equals_the_resample_loop(seed, unit, policy):
    docs, systems, metric, human = _study(seed=seed, n_docs=9, n_systems=4)
    # heavy ties on both sides, and some documents whose every output is tied
    metric = np.where(np.isfinite(metric), np.round(metric / 2), np.nan)
    human = np.where(docs % 4 == 0, 3.0, human)
    plan = draw_resamples(np.random.default_rng(seed), docs, systems, unit=unit, resamples=60)
    got = bootstrap_distribution(
        plan, metric, human, level=Level.DATASET, coefficient=Coefficient.SPEARMAN, policy=policy
    )
    expected = _loop_reference(plan, metric, human, Coefficient.SPEARMAN, policy)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("policy", list(DegeneratePolicy))
def test_vectorised_dataset_spearman_handles_constant_resamples(policy):
    # Two documents, one all-tied in the metric: resamples drawing it twice are constant.
    docs = np.array([0, 0, 0, 1, 1, 1])
    systems = np.array([0, 1, 2, 0, 1, 2])
    metric = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 3.0])
    human = np.array([1.0, 2.0, 3.0, 3.0, 2.0, 1.0])
    plan = draw_resamples(np.random.default_rng(0), docs, systems, resamples=40)
    got = bootstrap_distribution(
        plan, metric, human, level=Level.DATASET, coefficient=Coefficient.SPEARMAN, policy=policy
    )
    expected = _loop_reference(plan, metric, human, Coefficient.SPEARMAN, policy)
    _assert_constant_resamples_handled(got, expected, plan, policy)


def _assert_constant_resamples_handled(got, expected, plan, policy, always_defined=False):
    """Resamples drawing only the all-tied document 0 (twice) are undefined under SKIP
    and 0 otherwise (unless the statistic is ``always_defined``); all equal the loop."""
    constant = plan.doc_counts[:, 0] == 2
    assert constant.any() and (~constant).any()
    if always_defined:
        assert np.isfinite(got).all()
    elif policy is DegeneratePolicy.SKIP:
        assert np.isnan(got[constant]).all() and np.isfinite(got[~constant]).all()
    else:
        assert (got[constant] == 0.0).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


# Every Kendall-type statistic that exists at dataset level, with the options that
# change its pair counts (ε: metric ties within ε; the Kendall-like threshold).
KENDALL_FAMILY = [
    (Coefficient.KENDALL_B, Options()),
    (Coefficient.KENDALL_C, Options()),
    (Coefficient.ACC23, Options()),
    (Coefficient.KENDALL_23, Options()),
    (Coefficient.ACC23, Options(epsilon=0.5)),
    (Coefficient.KENDALL_23, Options(epsilon=1.0)),
    (Coefficient.KENDALL_LIKE, Options(threshold=1.0)),
    (Coefficient.KENDALL_LIKE, Options(threshold=2.5)),
]


@pytest.mark.parametrize("fewer_metric_values", [False, True])
@pytest.mark.parametrize("policy", list(DegeneratePolicy))
@pytest.mark.parametrize("unit", list(Unit))
@pytest.mark.parametrize(("coefficient", "options"), KENDALL_FAMILY)
def test_vectorised_dataset_kendall_family_equals_the_resample_loop(
    coefficient, options, unit, policy, fewer_metric_values
):
    docs, systems, metric, human = _study(seed=5, n_docs=9, n_systems=4)
    # ties on both sides, NaN on both sides, and documents whose every output is tied
    metric = np.where(np.isfinite(metric), np.round(metric / 2), np.nan)
    human = np.where(docs % 4 == 0, 3.0, human)
    human[::11] = np.nan
    if fewer_metric_values:  # the tree then runs over the metric's values
        metric = np.where(np.isfinite(metric), np.minimum(metric, 2.0), np.nan)
        human = human + 0.1 * systems
    plan = draw_resamples(np.random.default_rng(2), docs, systems, unit=unit, resamples=40)
    got = bootstrap_distribution(
        plan,
        metric,
        human,
        level=Level.DATASET,
        coefficient=coefficient,
        policy=policy,
        options=options,
    )
    expected = _loop_reference(plan, metric, human, coefficient, policy, options)
    assert np.isfinite(expected).sum() >= 10
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("coefficient", "options"), KENDALL_FAMILY)
def test_vectorised_dataset_kendall_family_equals_the_loop_on_many_distinct_values(
    coefficient, options
):
    # 400 outputs: resamples wider than the pairwise limit (the loop sorts), and
    # continuous human scores, so the tree is 9 levels deep.
    rng = np.random.default_rng(8)
    docs, systems = np.repeat(np.arange(40), 10), np.tile(np.arange(10), 40)
    human = np.round(rng.normal(0, 3, docs.size), 1)
    metric = np.round(human + rng.normal(0, 2, docs.size))
    metric[rng.random(docs.size) < 0.05] = np.nan
    plan = draw_resamples(np.random.default_rng(4), docs, systems, unit=Unit.BOTH, resamples=6)
    got = bootstrap_distribution(
        plan, metric, human, level=Level.DATASET, coefficient=coefficient, options=options
    )
    expected = _loop_reference(plan, metric, human, coefficient, DegeneratePolicy.SKIP, options)
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def _hand_plan():
    # Outputs A, B, C and an unscored one, one per document; documents drawn A, A, B, C.
    return Resamples(
        unit=Unit.DOCUMENTS,
        docs=Groups.from_keys([0, 1, 2, 3]),
        systems=None,
        doc_draws=np.array([[0, 0, 1, 2]]),
        system_draws=None,
    )


@pytest.mark.parametrize(
    ("coefficient", "options", "value"),
    [
        # Copies A A B C: x 1 1 2 3, y 1 1 2 1. Of the 6 pairs: A-A tied on both sides,
        # A-B twice concordant, A-C twice tied in y, B-C discordant. C = 2, D = 1,
        # ties in x 1, ties in y 3.
        (Coefficient.KENDALL_B, Options(), 1 / math.sqrt(5 * 3)),
        (Coefficient.KENDALL_C, Options(), 2 * 1 / (4**2 * (2 - 1) / 2)),  # min(3, 2) values
        (Coefficient.ACC23, Options(), (2 + 1) / 6),  # concordant or tied on both sides
        (Coefficient.KENDALL_23, Options(), 2 * (3 / 6) - 1),
        # ε = 1: A-B ties in the metric too (and, not tied in y, is wrong); B-C as well.
        (Coefficient.ACC23, Options(epsilon=1.0), (0 + 1) / 6),
        # Pairs whose human scores differ by >= 1: A-B twice (right), B-C (wrong).
        (Coefficient.KENDALL_LIKE, Options(threshold=1.0), (2 - 1) / 3),
    ],
)
def test_vectorised_dataset_kendall_family_on_a_hand_counted_resample(coefficient, options, value):
    metric = np.array([1.0, 2.0, 3.0, np.nan])
    human = np.array([1.0, 2.0, 1.0, 2.0])
    got = bootstrap_distribution(
        _hand_plan(), metric, human, level=Level.DATASET, coefficient=coefficient, options=options
    )
    assert got[0] == pytest.approx(value, abs=1e-15)


@pytest.mark.parametrize("policy", list(DegeneratePolicy))
@pytest.mark.parametrize(
    ("coefficient", "options"),
    [
        (Coefficient.KENDALL_B, Options()),
        (Coefficient.KENDALL_C, Options()),
        (Coefficient.KENDALL_LIKE, Options(threshold=1.5)),
        (Coefficient.ACC23, Options()),
    ],
)
def test_vectorised_dataset_kendall_family_handles_constant_resamples(policy, coefficient, options):
    # Document 0 is tied in the metric and its human scores differ by 1 at most: a
    # resample drawing it twice is constant for τ and has no Kendall-like pair; acc23
    # has no constant resamples (every pair counts, ties included).
    docs = np.array([0, 0, 0, 1, 1, 1])
    systems = np.array([0, 1, 2, 0, 1, 2])
    metric = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 3.0])
    human = np.array([1.0, 2.0, 2.0, 3.0, 2.0, 1.0])
    plan = draw_resamples(np.random.default_rng(0), docs, systems, resamples=40)
    got = bootstrap_distribution(
        plan,
        metric,
        human,
        level=Level.DATASET,
        coefficient=coefficient,
        policy=policy,
        options=options,
    )
    expected = _loop_reference(plan, metric, human, coefficient, policy, options)
    _assert_constant_resamples_handled(
        got, expected, plan, policy, always_defined=coefficient is Coefficient.ACC23
    )


def test_vectorised_dataset_kendall_leaves_a_resample_with_one_copy_undefined():
    # Only document 1 drawn, and it has one scored output: fewer than two copies.
    metric = np.array([1.0, 2.0, 3.0, np.nan])
    human = np.array([1.0, 2.0, 1.0, 2.0])
    plan = Resamples(
        unit=Unit.DOCUMENTS,
        docs=Groups.from_keys([0, 1, 2, 3]),
        systems=None,
        doc_draws=np.array([[1, 3, 3, 3], [3, 3, 3, 3]]),
        system_draws=None,
    )
    for coefficient, options in KENDALL_FAMILY:
        for policy in DegeneratePolicy:
            got = bootstrap_distribution(
                plan,
                metric,
                human,
                level=Level.DATASET,
                coefficient=coefficient,
                policy=policy,
                options=options,
            )
            assert np.isnan(got).all()


@pytest.mark.parametrize("weight", [1.0, 3.0, 0.3])
def test_the_document_mean_of_equal_weights_equals_summing_the_drawn_weights(weight):
    """Documents weighing one whole number skip summing the drawn weights; the values
    are those the sums give (and a weight that is not whole still sums)."""
    rng = np.random.default_rng(5)
    docs = Groups.from_keys(np.repeat(np.arange(300), 4))
    plan = draw_resamples(rng, docs, resamples=50)
    per_doc = rng.normal(size=300)
    weights = np.full(300, weight)
    counts = plan.doc_counts
    got = _weighted_document_mean(plan, per_doc, weights)
    assert np.array_equal(got, (counts @ (per_doc * weights)) / (counts @ weights))
    # the definition: each drawn document's value, as often as it was drawn
    draws = plan.doc_draws
    drawn = np.take(per_doc * weights, draws).sum(axis=1) / np.take(weights, draws).sum(axis=1)
    np.testing.assert_allclose(got, drawn, rtol=1e-12)


@pytest.mark.parametrize("unit", [Unit.SYSTEMS, Unit.DOCUMENTS, Unit.BOTH])
def test_system_level_without_a_missing_value_equals_the_masked_computation(unit):
    """Where every output is valid the plan's shared cells are used; the values are
    those of the same outputs plus one more whose score is missing (masked out)."""
    rng = np.random.default_rng(9)
    docs, systems = np.meshgrid(np.arange(30), np.arange(6), indexing="ij")
    docs, systems = docs.ravel(), systems.ravel()
    x, y = rng.normal(size=docs.size), rng.integers(1, 6, size=docs.size).astype(float)
    extra = (np.append(docs, 0), np.append(systems, 0))
    results = []
    for d, s, xs, ys in ((docs, systems, x, y), (*extra, np.append(x, np.nan), np.append(y, 3.0))):
        plan = draw_resamples(
            np.random.default_rng(1),
            Groups.from_keys(d),
            Groups.from_keys(s),
            unit=unit,
            resamples=40,
        )
        results.append(
            bootstrap_distribution(
                plan, xs, ys, level=Level.SYSTEM, coefficient=Coefficient.PEARSON
            )
        )
    assert np.array_equal(results[0], results[1], equal_nan=True)
