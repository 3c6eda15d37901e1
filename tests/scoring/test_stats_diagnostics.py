"""Diagnostics (human ceiling, length bias, per-system ranks) against brute force."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from scoring.stats import Coefficient, Groups, Level, correlate
from scoring.stats.diagnostics import (
    leave_one_out,
    partial_correlate,
    partial_correlation,
    per_document,
    system_ranks,
    whitespace_tokens,
)


def residual_partial(x, y, z, ranks: bool) -> float:  # type: ignore[no-untyped-def]
    """The textbook partial correlation: correlate the residuals of x and y after a
    least-squares fit on [1, z] (on ranks for Spearman's)."""
    x, y, z = (np.asarray(v, dtype=float) for v in (x, y, z))
    if ranks:
        x, y, z = stats.rankdata(x), stats.rankdata(y), stats.rankdata(z)
    design = np.column_stack([np.ones_like(z), z])
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    if min(np.abs(rx).max(), np.abs(ry).max()) < 1e-9:  # z explains x or y: undefined
        return float("nan")
    return float(stats.pearsonr(rx, ry)[0])


def ragged(seed: int = 0, n_docs: int = 9, n_systems: int = 8):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    docs, systems = [], []
    for d in range(n_docs):
        for s in rng.choice(n_systems, size=rng.integers(3, n_systems + 1), replace=False):
            docs.append(d)
            systems.append(int(s))
    n = len(docs)
    z = rng.integers(5, 60, size=n).astype(float)  # lengths, with ties
    x = 0.03 * z + rng.normal(size=n)
    y = 0.5 * x + 0.02 * z + rng.integers(1, 6, size=n)  # ties in the human scores
    x[rng.choice(n, 3, replace=False)] = np.nan
    y[rng.choice(n, 2, replace=False)] = np.nan
    return np.array(docs), np.array(systems), x, y, z


@pytest.mark.parametrize("coefficient", [Coefficient.PEARSON, Coefficient.SPEARMAN])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_partial_correlation_equals_the_residual_correlation(coefficient, seed):
    _, _, x, y, z = ragged(seed)
    ok = np.isfinite(x) & np.isfinite(y)
    expected = residual_partial(x[ok], y[ok], z[ok], coefficient is Coefficient.SPEARMAN)
    assert partial_correlation(x, y, z, coefficient) == pytest.approx(expected, abs=1e-10)


def test_partial_correlation_without_a_link_to_z_is_the_plain_correlation():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([2.0, 1.0, 4.0, 3.0, 6.0, 5.0])
    z = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # uncorrelated with x and with y
    assert np.corrcoef(x, z)[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert np.corrcoef(y, z)[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert partial_correlation(x, y, z, Coefficient.PEARSON) == pytest.approx(
        np.corrcoef(x, y)[0, 1]
    )


def test_partial_correlation_is_nan_with_too_few_triples_or_when_z_explains_x():
    assert np.isnan(partial_correlation([1, 2, 3], [3, 1, 2], [1, 1, 2], Coefficient.PEARSON))
    x = np.arange(6.0)
    assert np.isnan(partial_correlation(x, x[::-1] ** 2, 2 * x, Coefficient.PEARSON))
    with pytest.raises(ValueError):
        partial_correlation(x, x, x, Coefficient.KENDALL_B)


@pytest.mark.parametrize("coefficient", [Coefficient.PEARSON, Coefficient.SPEARMAN])
@pytest.mark.parametrize("level", [Level.SAMPLE, Level.DATASET, Level.SYSTEM])
def test_partial_correlate_at_each_level_matches_a_brute_force_loop(coefficient, level):
    docs, systems, x, y, z = ragged(4)
    ranks = coefficient is Coefficient.SPEARMAN
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    result = partial_correlate(
        x,
        y,
        z,
        level=level,
        coefficient=coefficient,
        docs=Groups.from_keys(docs),
        systems=Groups.from_keys(systems),
    )
    if level is Level.DATASET:
        expected = residual_partial(x[ok], y[ok], z[ok], ranks)
    elif level is Level.SYSTEM:
        by_system = defaultdict(list)
        for s, a, b, c in zip(systems[ok], x[ok], y[ok], z[ok], strict=True):
            by_system[s].append((a, b, c))
        means = np.array([np.mean(v, axis=0) for _, v in sorted(by_system.items())])
        expected = residual_partial(means[:, 0], means[:, 1], means[:, 2], ranks)
    else:
        values = []
        for d in np.unique(docs):
            rows = ok & (docs == d)
            if rows.sum() >= 4:
                value = residual_partial(x[rows], y[rows], z[rows], ranks)
                if np.isfinite(value):
                    values.append(value)
        expected = float(np.mean(values))
        assert result.n_groups == len(values)
    assert result.value == pytest.approx(expected, abs=1e-10)
    assert result.n_outputs <= int(ok.sum())


def test_leave_one_out_matches_a_dense_brute_force_at_each_level():
    rng = np.random.default_rng(7)
    n, annotators = 40, 4
    docs = np.repeat(np.arange(8), 5)
    systems = np.tile(np.arange(5), 8)
    truth = rng.normal(size=n)
    dense = np.round(truth[:, None] * 2 + rng.normal(size=(n, annotators)) + 3)
    dense[rng.random((n, annotators)) < 0.3] = np.nan  # sparse overlap
    dense[:, 3] = np.nan
    dense[0, 3] = 4.0  # annotator 3 judged one output: no correlation
    rows, who = np.nonzero(np.isfinite(dense))
    for level in Level:
        coefficient = Coefficient.PEARSON if level is Level.SYSTEM else Coefficient.SPEARMAN

        def corr(out, a, b, level=level, coefficient=coefficient):  # type: ignore[no-untyped-def]
            return correlate(
                a, b, level=level, coefficient=coefficient, docs=docs[out], systems=systems[out]
            ).value

        result = leave_one_out(rows, who, dense[rows, who], n, annotators, corr)
        for a in range(annotators):
            others = np.delete(dense, a, axis=1)
            count = np.isfinite(others).sum(axis=1)
            with np.errstate(all="ignore"):
                mean = np.nansum(others, axis=1) / count  # NaN where nobody else judged
            both = np.isfinite(dense[:, a]) & np.isfinite(mean)
            assert result.n_outputs[a] == both.sum()
            if both.sum() < 2:
                assert np.isnan(result.values[a])
                continue
            expected = correlate(
                dense[both, a],
                mean[both],
                level=level,
                coefficient=coefficient,
                docs=docs[both],
                systems=systems[both],
            ).value
            assert result.values[a] == pytest.approx(expected, abs=1e-12, nan_ok=True)
        assert result.n_annotators == int(np.isfinite(result.values).sum()) == 3
        assert result.mean == pytest.approx(np.nanmean(result.values))


def test_leave_one_out_by_hand_and_its_refusals():
    # two annotators on three outputs: each is compared with the other one
    rows, who, values = [0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1], [1.0, 2.0, 3.0, 1.0, 3.0, 2.0]
    seen = []

    def corr(out, a, b):  # type: ignore[no-untyped-def]
        seen.append((out.tolist(), a.tolist(), b.tolist()))
        return float(stats.pearsonr(a, b)[0])

    result = leave_one_out(rows, who, values, 3, 2, corr)
    assert seen == [([0, 1, 2], [1, 2, 3], [1, 3, 2]), ([0, 1, 2], [1, 3, 2], [1, 2, 3])]
    assert result.values == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError, match="twice"):
        leave_one_out([0, 0], [0, 0], [1.0, 2.0], 1, 1, corr)
    with pytest.raises(ValueError, match="range"):
        leave_one_out([5], [0], [1.0], 2, 1, corr)
    alone = leave_one_out([0, 1], [0, 0], [1.0, 2.0], 2, 1, corr)
    assert alone.n_annotators == 0 and np.isnan(alone.mean)


def test_system_ranks_and_gap_against_sorting_by_hand():
    systems = Groups.from_keys(np.array(["a", "a", "b", "b", "c", "c", "d"]))
    metric = np.array([3.0, 5.0, 1.0, 1.0, 2.0, np.nan, 7.0])
    human = np.array([1.0, 1.0, 5.0, 3.0, 4.0, 4.0, np.nan])
    ranks = system_ranks(metric, human, systems)
    # a: metric 4 (1st), human 1 (3rd); b: metric 1 (3rd), human 4 (1st); c: 2 / 4 (2nd)
    assert ranks.metric_mean[:3] == pytest.approx([4.0, 1.0, 2.0])
    assert ranks.human_mean[:3] == pytest.approx([1.0, 4.0, 4.0])
    assert ranks.metric_rank[:3].tolist() == [1.0, 3.0, 2.0]
    assert ranks.human_rank[:3].tolist() == [3.0, 1.5, 1.5]  # tied systems share a rank
    assert ranks.gap[:3].tolist() == [-2.0, 1.5, 0.5]
    assert np.isnan(ranks.metric_rank[3]) and ranks.n_outputs.tolist() == [2, 2, 1, 0]


def test_per_document_values_are_each_documents_kendall():
    docs, _, x, y, _ = ragged(5)
    values = per_document(x, y, Groups.from_keys(docs), Coefficient.KENDALL_B)
    for d in np.unique(docs):
        rows = (docs == d) & np.isfinite(x) & np.isfinite(y)
        expected = stats.kendalltau(x[rows], y[rows], variant="b")[0] if rows.sum() >= 2 else np.nan
        assert values[d] == pytest.approx(expected, abs=1e-12, nan_ok=True)


def test_whitespace_tokens():
    assert whitespace_tokens(["a b  c", "", " x\ny\t z "]).tolist() == [3, 0, 3]
