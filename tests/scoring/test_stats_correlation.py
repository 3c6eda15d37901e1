"""Correlations at sample, dataset and system level equal hand and scipy computations."""

import math

import numpy as np
import pytest
import scipy.stats

from scoring.stats import (
    Coefficient,
    DegeneratePolicy,
    DocRanks,
    Groups,
    Level,
    Options,
    correlate,
    doc_ranks,
    intercorrelation,
    unsupported,
)

SCIPY = {
    Coefficient.PEARSON: lambda x, y: scipy.stats.pearsonr(x, y).statistic,
    Coefficient.SPEARMAN: lambda x, y: scipy.stats.spearmanr(x, y).statistic,
    Coefficient.KENDALL_B: lambda x, y: scipy.stats.kendalltau(x, y, variant="b").statistic,
    Coefficient.KENDALL_C: lambda x, y: scipy.stats.kendalltau(x, y, variant="c").statistic,
}

# Four documents: A is a hand-checkable 3-output case, B is perfectly reversed, C has
# constant human scores, D has a single scored pair once its NaN is dropped.
DOCS = ["A", "A", "A", "B", "B", "C", "C", "C", "D", "D"]
METRIC = [1.0, 2.0, 3.0, 1.0, 2.0, 5.0, 6.0, 7.0, 1.0, np.nan]
HUMAN = [1.0, 3.0, 2.0, 2.0, 1.0, 3.0, 3.0, 3.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("coefficient", "doc_a"),
    [
        # A: centred x = (-1, 0, 1), y = (-1, 1, 0): r = 1 / sqrt(2 * 2) = 0.5.
        (Coefficient.PEARSON, 0.5),
        (Coefficient.SPEARMAN, 0.5),
        # A: pairs (1,2) and (1,3) concordant, (2,3) discordant: (2 - 1) / 3.
        (Coefficient.KENDALL_B, 1 / 3),
        # tau-c: 2 (C - D) / (n² (m - 1) / m) = 2 / (9 * 2 / 3).
        (Coefficient.KENDALL_C, 1 / 3),
    ],
)
def test_sample_level_skips_constant_and_too_small_documents_by_default(coefficient, doc_a):
    result = correlate(METRIC, HUMAN, level=Level.SAMPLE, coefficient=coefficient, docs=DOCS)
    assert result.value == pytest.approx((doc_a + -1.0) / 2)
    assert result.coefficient is coefficient and result.level is Level.SAMPLE
    assert (result.n_documents, result.n_skipped, result.n_constant) == (2, 2, 1)
    assert (result.n_outputs, result.n_missing) == (5, 1)
    assert result.per_group is not None
    np.testing.assert_allclose(result.per_group, [doc_a, -1.0, np.nan, np.nan])


def test_zero_policy_counts_constant_documents_as_zero_but_still_skips_single_pairs():
    result = correlate(
        METRIC,
        HUMAN,
        level=Level.SAMPLE,
        coefficient=Coefficient.PEARSON,
        docs=DOCS,
        policy=DegeneratePolicy.ZERO,
    )
    assert result.value == pytest.approx((0.5 - 1.0 + 0.0) / 3)
    assert (result.n_documents, result.n_skipped, result.n_constant) == (3, 1, 1)
    assert result.n_outputs == 8
    assert result.policy is DegeneratePolicy.ZERO


def test_kendall_tau_c_differs_from_tau_b_on_a_hand_computed_case_with_ties():
    # Pairs: C = 3, D = 0; ties in x: 1, in y: 2 of 6. tau-b = 3 / sqrt(5 * 4);
    # tau-c with m = min(3, 2) classes = 2 * 3 / (16 * 1/2) = 0.75.
    x, y = [1.0, 2.0, 2.0, 3.0], [1.0, 1.0, 2.0, 2.0]
    tau_b = correlate(x, y, level=Level.DATASET, coefficient=Coefficient.KENDALL_B)
    tau_c = correlate(x, y, level=Level.DATASET, coefficient=Coefficient.KENDALL_C)
    assert tau_b.value == pytest.approx(3 / math.sqrt(20))
    assert tau_c.value == pytest.approx(0.75)
    assert tau_b.coefficient.value == "kendall_tau_b"
    assert tau_c.coefficient.value == "kendall_tau_c"


def _ragged(seed, n_docs=60, with_nan=True):
    """Documents of 2..9 outputs, heavy ties, some constant documents, some NaNs."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 10, size=n_docs)
    docs = rng.permutation(np.repeat(np.arange(n_docs), sizes))
    human = rng.integers(1, 4, size=docs.size).astype(float)
    metric = np.round(human + rng.normal(0, 1.0, size=docs.size), 1)
    metric[docs == 0] = 0.5  # constant metric
    human[docs == 1] = 2.0  # constant judgments
    if with_nan:
        metric[rng.random(docs.size) < 0.05] = np.nan
        human[rng.random(docs.size) < 0.05] = np.nan
    systems = rng.integers(0, 7, size=docs.size)
    return docs, systems, metric, human


def _scipy_sample_level(docs, metric, human, coefficient, policy):
    values = []
    for doc in np.unique(docs):
        keep = (docs == doc) & np.isfinite(metric) & np.isfinite(human)
        x, y = metric[keep], human[keep]
        if x.size < 2:
            continue
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            if policy is DegeneratePolicy.ZERO:
                values.append(0.0)
            continue
        values.append(SCIPY[coefficient](x, y))
    return np.mean(values), len(values)


@pytest.mark.parametrize("coefficient", list(SCIPY))
@pytest.mark.parametrize("policy", list(DegeneratePolicy))
def test_sample_level_equals_mean_of_scipy_per_document(coefficient, policy):
    docs, _, metric, human = _ragged(seed=11)
    result = correlate(
        metric, human, level=Level.SAMPLE, coefficient=coefficient, docs=docs, policy=policy
    )
    expected, n_used = _scipy_sample_level(docs, metric, human, coefficient, policy)
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert result.n_documents == n_used
    assert result.n_skipped == 60 - n_used
    assert result.n_constant >= 2  # documents 0 and 1
    assert result.n_missing == int(np.sum(~(np.isfinite(metric) & np.isfinite(human))))


@pytest.mark.parametrize("coefficient", list(SCIPY))
def test_dataset_level_equals_scipy_on_pooled_pairs_without_nans(coefficient):
    _, _, metric, human = _ragged(seed=5)
    keep = np.isfinite(metric) & np.isfinite(human)
    result = correlate(metric, human, level=Level.DATASET, coefficient=coefficient)
    assert result.value == pytest.approx(SCIPY[coefficient](metric[keep], human[keep]), abs=1e-12)
    assert result.n_outputs == keep.sum()
    assert result.n_skipped == 0


@pytest.mark.parametrize("coefficient", list(SCIPY))
def test_system_level_equals_scipy_on_per_system_means(coefficient):
    docs, systems, metric, human = _ragged(seed=8)
    keep = np.isfinite(metric) & np.isfinite(human)
    mx = [metric[keep & (systems == s)].mean() for s in range(7)]
    my = [human[keep & (systems == s)].mean() for s in range(7)]
    result = correlate(
        metric, human, level=Level.SYSTEM, coefficient=coefficient, systems=systems, docs=docs
    )
    assert result.value == pytest.approx(SCIPY[coefficient](mx, my), abs=1e-12)
    assert result.n_systems == 7
    assert result.n_documents == 60


@pytest.mark.parametrize("coefficient", [Coefficient.KENDALL_B, Coefficient.KENDALL_C])
def test_large_documents_use_the_sorting_kendall_and_still_match_scipy(coefficient):
    rng = np.random.default_rng(2)
    docs = np.repeat([0, 1, 2], [400, 3, 300])
    human = rng.integers(1, 6, size=docs.size).astype(float)
    metric = human + rng.integers(0, 3, size=docs.size)
    result = correlate(metric, human, level=Level.SAMPLE, coefficient=coefficient, docs=docs)
    expected = np.mean([SCIPY[coefficient](metric[docs == d], human[docs == d]) for d in range(3)])
    assert result.value == pytest.approx(expected, abs=1e-12)


def test_a_prebuilt_document_index_gives_the_same_result_as_raw_keys():
    docs, _, metric, human = _ragged(seed=1)
    index = Groups.from_keys(docs)
    options = Options(threshold=1.0)  # Kendall-like: human scores here are 1 to 3
    for coefficient in (c for c in Coefficient if unsupported(c, Level.SAMPLE) is None):
        settings = {"level": Level.SAMPLE, "coefficient": coefficient, "options": options}
        a = correlate(metric, human, docs=docs, **settings)
        b = correlate(metric, human, docs=index, **settings)
        assert a.value == b.value and math.isfinite(a.value)


def test_all_degenerate_input_gives_nan_and_counts_it():
    result = correlate(
        [1.0, 1.0, 1.0], [1.0, 2.0, 3.0], level=Level.DATASET, coefficient=Coefficient.PEARSON
    )
    assert math.isnan(result.value)
    assert (result.n_skipped, result.n_constant) == (1, 1)
    zero = correlate(
        [1.0, 1.0, 1.0],
        [1.0, 2.0, 3.0],
        level=Level.DATASET,
        coefficient=Coefficient.PEARSON,
        policy=DegeneratePolicy.ZERO,
    )
    assert zero.value == 0.0 and zero.n_skipped == 0


def test_levels_without_their_keys_are_refused():
    with pytest.raises(ValueError, match="document keys"):
        correlate([1, 2], [1, 2], level=Level.SAMPLE, coefficient=Coefficient.PEARSON)
    with pytest.raises(ValueError, match="system keys"):
        correlate([1, 2], [1, 2], level=Level.SYSTEM, coefficient=Coefficient.PEARSON)
    with pytest.raises(ValueError, match="docs has 3 items"):
        correlate(
            [1, 2], [1, 2], level=Level.SAMPLE, coefficient=Coefficient.PEARSON, docs=[0, 0, 1]
        )


def test_intercorrelation_is_symmetric_with_unit_diagonal_and_matches_correlate():
    docs, _, _, human = _ragged(seed=4, with_nan=False)
    rng = np.random.default_rng(4)
    aspects = np.stack([human, human + rng.normal(size=human.size), rng.normal(size=human.size)])
    matrix = intercorrelation(
        aspects, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs
    )
    assert matrix.shape == (3, 3)
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_allclose(np.diag(matrix), 1.0)
    expected = correlate(
        aspects[0], aspects[2], level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs
    )
    assert matrix[0, 2] == expected.value
    assert matrix[0, 1] > 0.3 > abs(matrix[0, 2])


@pytest.mark.parametrize("level", list(Level))
def test_no_scored_pairs_gives_nan_rather_than_an_error(level):
    result = correlate(
        [np.nan, 1.0],
        [1.0, np.nan],
        level=level,
        coefficient=Coefficient.KENDALL_C,
        docs=["d", "d"],
        systems=["s", "t"],
    )
    assert math.isnan(result.value)
    assert (result.n_outputs, result.n_missing) == (0, 2)


@pytest.mark.parametrize("policy", [DegeneratePolicy.SKIP, DegeneratePolicy.ZERO])
def test_spearman_from_ranks_ranked_once_equals_ranking_in_each_cell(policy):
    """A matrix ranks each column once (ties, constant and single-output documents,
    documents of 2 to 70 outputs across several blocks); the cells' values are those of
    ranking in every cell, exactly; with a missing value the ranks are not used."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 70, size=400)
    docs = Groups.from_keys(np.repeat(np.arange(sizes.size), sizes))
    n = docs.n_items
    metric = np.round(rng.normal(size=n), 1)  # ties
    human = rng.integers(1, 6, size=n).astype(np.float64)
    human[docs.codes == 3] = 4.0  # a constant document
    ranks = (doc_ranks(metric, docs), doc_ranks(human, docs))
    for x, y in ((metric, human), (human, metric)):
        given = ranks if x is metric else ranks[::-1]
        plain = correlate(
            x, y, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs, policy=policy
        )
        fast = correlate(
            x,
            y,
            level=Level.SAMPLE,
            coefficient=Coefficient.SPEARMAN,
            docs=docs,
            policy=policy,
            ranks=given,
        )
        assert fast.value == plain.value and fast.n_constant == plain.n_constant
        assert np.array_equal(fast.per_group, plain.per_group, equal_nan=True)
    gappy = metric.copy()
    gappy[5] = np.nan
    zeros = DocRanks(docs, np.zeros(n), np.zeros(docs.n_groups))
    wrong = (zeros, zeros)  # ignored: not every output is valid
    assert (
        correlate(
            gappy,
            human,
            level=Level.SAMPLE,
            coefficient=Coefficient.SPEARMAN,
            docs=docs,
            ranks=wrong,
        ).value
        == correlate(
            gappy, human, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs
        ).value
    )
    both = np.vstack([metric, human])
    assert np.array_equal(
        intercorrelation(
            both, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs, ranks=list(ranks)
        ),
        intercorrelation(both, level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN, docs=docs),
        equal_nan=True,
    )
