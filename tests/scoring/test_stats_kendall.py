"""Kendall's τ from each column's sort order: scipy's value to the last bit, and the
dataset-level cells that use it equal to those that do not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.stats

from scoring.stats import (
    Coefficient,
    Level,
    column_order,
    correlate,
    intercorrelation,
    kendall_from_orders,
)
from scoring.stats.kendall import MAX_CLASSES


def _columns(rng: np.random.Generator, n: int, case: int) -> tuple[np.ndarray, np.ndarray]:
    """A metric-like and a rating-like column, with ties of several shapes."""
    latent = rng.normal(size=n)
    ratings = np.clip(np.round(3 + latent + rng.normal(0, 0.8, n)), 1, 5)
    if case == 0:  # continuous metric, 1-5 ratings
        return latent + rng.normal(0, 0.5, n), ratings
    if case == 1:  # a metric with many ties (rounded)
        return np.round(latent, 1), ratings
    if case == 2:  # integer metric scores (G-Eval-like), averaged ratings
        return rng.integers(1, 6, n).astype(float), np.round(ratings + rng.integers(0, 3, n) / 2, 1)
    return ratings, np.clip(np.round(3 + latent + rng.normal(0, 1.0, n)), 1, 5)  # two ratings


@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("variant", ["b", "c"])
def test_the_value_is_scipys_to_the_last_bit(case: int, variant: str) -> None:
    rng = np.random.default_rng(case)
    for n in (2, 3, 17, 300, 5000, 30000):  # the last walks the metric (a large table)
        x, y = _columns(rng, n, case)
        expected = scipy.stats.kendalltau(x, y, variant=variant).statistic
        got = kendall_from_orders(column_order(x), column_order(y), variant)
        assert got is not None
        assert got == expected or (np.isnan(got) and np.isnan(expected)), (n, got, expected)


def test_a_constant_column_gives_nan_and_two_continuous_columns_are_declined() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=500)
    assert np.isnan(kendall_from_orders(column_order(x), column_order(np.full(500, 3.0))))  # type: ignore[arg-type]
    many = rng.normal(size=500)
    assert column_order(many).n_classes > MAX_CLASSES
    assert kendall_from_orders(column_order(x), column_order(many)) is None
    with pytest.raises(ValueError, match="one entry per item"):
        kendall_from_orders(column_order(x), column_order(x[:10]))


def _fields(result: object) -> tuple[object, ...]:
    return tuple(getattr(result, f.name) for f in dataclasses.fields(result))  # type: ignore[arg-type]


@pytest.mark.parametrize("coefficient", [Coefficient.KENDALL_B, Coefficient.KENDALL_C])
def test_dataset_cells_with_orders_equal_cells_without(coefficient: Coefficient) -> None:
    rng = np.random.default_rng(3)
    n = 2000
    x, y = _columns(rng, n, 1)
    plain = correlate(x, y, level=Level.DATASET, coefficient=coefficient)
    ordered = correlate(
        x,
        y,
        level=Level.DATASET,
        coefficient=coefficient,
        orders=(column_order(x), column_order(y)),
    )
    assert _fields(ordered) == _fields(plain)
    # a constant side: the same NaN, counted as constant
    flat = np.full(n, 4.0)
    plain = correlate(x, flat, level=Level.DATASET, coefficient=coefficient)
    ordered = correlate(
        x,
        flat,
        level=Level.DATASET,
        coefficient=coefficient,
        orders=(column_order(x), column_order(flat)),
    )
    assert np.isnan(ordered.value) and ordered.n_constant == plain.n_constant == 1
    assert ordered.n_outputs == plain.n_outputs == n and ordered.n_skipped == plain.n_skipped


def test_the_aspects_intercorrelation_is_the_same_with_orders() -> None:
    rng = np.random.default_rng(4)
    columns = np.vstack([_columns(rng, 1000, 3)[k] for k in (0, 1)] + [rng.integers(1, 4, 1000)])
    columns = columns.astype(float)
    plain = intercorrelation(columns, level=Level.DATASET, coefficient=Coefficient.KENDALL_B)
    ordered = intercorrelation(
        columns,
        level=Level.DATASET,
        coefficient=Coefficient.KENDALL_B,
        orders=[column_order(c) for c in columns],
    )
    np.testing.assert_array_equal(ordered, plain)
    assert np.isfinite(plain).all() and not np.allclose(plain, 1.0)


def test_the_contingency_table_counts_the_pairs_the_walk_counts() -> None:
    """Two columns of few values are counted from their table; walking one column's
    order counts the same discordant and jointly tied pairs."""
    from scoring.stats.kendall import _discordant, _from_table, _joint_ties

    rng = np.random.default_rng(6)
    x = rng.integers(0, 30, 5000).astype(float)
    y = rng.integers(0, 5, 5000).astype(float)
    ox, oy = column_order(x), column_order(y)
    assert _from_table(ox, oy) == (_discordant(ox, oy), _joint_ties(ox, oy))
    assert _from_table(ox, oy)[0] > 0
