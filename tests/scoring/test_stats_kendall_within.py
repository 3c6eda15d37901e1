"""Kendall's τ within each document from each column's codes: scipy's value per
document, and sample-level cells that use the codes equal to the row kernel's to the
last bit (ties in either column, ragged documents, few and many distinct values)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.stats import (
    Coefficient,
    Groups,
    Level,
    correlate,
    doc_codes,
    intercorrelation,
    kendall_within,
)
from scoring.stats.group_correlations import group_correlations
from scoring.stats.kendall_within import MAX_WIDTH, VALUE_PASSES

VARIANTS = {"b": Coefficient.KENDALL_B, "c": Coefficient.KENDALL_C}


def _study(seed: int, n_docs: int, widest: int, kind: str) -> tuple[np.ndarray, ...]:
    """Ragged documents of 1..widest outputs; a metric-like and a rating-like column."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, widest + 1, n_docs)
    docs = np.repeat(np.arange(n_docs), sizes)
    rng.shuffle(docs)  # a frame's outputs need not come document by document
    latent = rng.normal(size=docs.size)
    ratings = np.clip(np.round(3 + latent + rng.normal(0, 0.8, docs.size)), 1, 5)
    metric = {
        "continuous": latent + rng.normal(0, 0.5, docs.size),
        "rounded": np.round(latent, 1),  # ties within documents
        "integer": rng.integers(1, 6, docs.size).astype(float),  # G-Eval-like
        "thirds": np.round(ratings + rng.integers(0, 3, docs.size) / 3, 6),  # 13 values
        "wide": latent * 100 + rng.integers(0, 40, docs.size),  # many distinct both sides
    }[kind]
    human = rng.normal(size=docs.size) if kind == "wide" else ratings
    return docs, metric, human


@pytest.mark.parametrize("kind", ["continuous", "rounded", "integer", "thirds", "wide"])
@pytest.mark.parametrize("variant", ["b", "c"])
def test_each_documents_tau_is_the_row_kernels_to_the_last_bit_and_scipys(kind, variant):
    docs, metric, human = _study(1, 300, 40, kind)
    groups = Groups.from_keys(docs)
    coded = (doc_codes(metric, groups), doc_codes(human, groups))
    assert coded[0] is not None and coded[1] is not None
    found = group_correlations(metric, human, groups, VARIANTS[variant], codes=coded)  # type: ignore[arg-type]
    plain = group_correlations(metric, human, groups, VARIANTS[variant])
    for field in ("r", "n", "constant", "size"):
        np.testing.assert_array_equal(getattr(found, field), getattr(plain, field))
    tau, n = kendall_within(*coded, variant=variant)  # type: ignore[arg-type]
    np.testing.assert_array_equal(tau, plain.r)
    for g in range(groups.n_groups):
        items = groups.order[groups.offsets[g] : groups.offsets[g + 1]]
        x, y = metric[items], human[items]
        if items.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
            assert np.isnan(tau[g])
            continue
        expected = scipy.stats.kendalltau(x, y, variant=variant).statistic
        assert tau[g] == pytest.approx(expected, abs=1e-12), (g, items.size)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 60),
    st.integers(2, 70),
    st.integers(2, 2 * VALUE_PASSES + 2),
    st.sampled_from(["b", "c"]),
)
def test_codes_give_the_row_kernels_values_on_any_ragged_study(
    seed, n_docs, widest, levels, variant
):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, widest + 1, n_docs)
    docs = np.repeat(np.arange(n_docs), sizes)
    x = rng.integers(0, rng.integers(1, 3 * widest), docs.size).astype(float)
    y = rng.integers(0, levels, docs.size).astype(float)
    groups = Groups.from_keys(docs)
    coded = (doc_codes(x, groups), doc_codes(y, groups))
    for first, second in (coded, coded[::-1]):
        found = group_correlations(x, y, groups, VARIANTS[variant], codes=(first, second))  # type: ignore[arg-type]
        plain = group_correlations(x, y, groups, VARIANTS[variant])
        np.testing.assert_array_equal(found.r, plain.r)
        np.testing.assert_array_equal(found.constant, plain.constant)
        (x, y) = (y, x)


@pytest.mark.parametrize("coefficient", list(VARIANTS.values()))
def test_sample_level_cells_with_codes_equal_cells_without(coefficient):
    docs, metric, human = _study(2, 400, 30, "rounded")
    groups = Groups.from_keys(docs)
    plain = correlate(metric, human, level=Level.SAMPLE, coefficient=coefficient, docs=groups)
    coded = correlate(
        metric,
        human,
        level=Level.SAMPLE,
        coefficient=coefficient,
        docs=groups,
        codes=(doc_codes(metric, groups), doc_codes(human, groups)),  # type: ignore[arg-type]
    )
    for field in dataclasses.fields(plain):
        np.testing.assert_array_equal(getattr(coded, field.name), getattr(plain, field.name))
    columns = np.vstack([human, np.round(metric), np.clip(human + 1, 1, 5)])
    inter = intercorrelation(columns, level=Level.SAMPLE, coefficient=coefficient, docs=groups)
    with_codes = intercorrelation(
        columns,
        level=Level.SAMPLE,
        coefficient=coefficient,
        docs=groups,
        codes=[doc_codes(c, groups) for c in columns],
    )
    np.testing.assert_array_equal(with_codes, inter)


def test_a_document_wider_than_the_codes_take_is_left_to_the_row_kernel():
    groups = Groups.from_keys(np.zeros(MAX_WIDTH + 1, dtype=int))
    assert doc_codes(np.arange(MAX_WIDTH + 1, dtype=float), groups) is None
