"""Informative-first routing: the per-document score, its order and reasons, the estimate."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from scoring.stats.routing import FIRST_PER_BAND, Question, band_count, estimate, route

QUESTION = Question("ROUGE-2", "ROUGE-L", "relevance")


def documents(n_docs: int, width: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Scores of two runs on ``n_docs`` documents × ``width`` outputs: on document k the
    second run keeps the first one's order for the first ``k * width // n_docs`` places
    and reverses the rest, so the runs agree more and more with k (the last ones rank
    alike); humans at random."""
    rng = np.random.default_rng(seed)
    a, b, docs = [], [], []
    for k in range(n_docs):
        first = rng.permutation(width).astype(float)
        kept = k * width // n_docs
        order = np.argsort(first)
        second = first.copy()
        second[order[kept:]] = first[order[kept:]][::-1]
        a.append(first)
        b.append(second)
        docs.append(np.full(width, k))
    human = rng.integers(1, 6, size=n_docs * width).astype(float)
    return np.concatenate(a), np.concatenate(b), human, np.concatenate(docs)


def judge(human: np.ndarray, docs: np.ndarray, which: list[int]) -> np.ndarray:
    """The humans' scores of the documents in ``which``, NaN elsewhere."""
    return np.where(np.isin(docs, which), human, np.nan)


def test_a_document_where_the_runs_disagree_ranks_above_one_where_they_agree():
    a, b, human, docs = documents(40, 8)
    found = route(a, b, np.full(a.size, np.nan), docs, np.random.default_rng(0))
    agreement = np.array([scipy.stats.spearmanr(a[docs == k], b[docs == k])[0] for k in range(40)])
    np.testing.assert_allclose(found.agreement, agreement, atol=1e-12)
    assert found.n_bands == band_count(40) == 4
    # the bands follow the disagreement, and the most disagreeing band goes first
    assert (np.diff(found.band[np.argsort(agreement, kind="stable")[::-1]]) >= 0).all()
    assert found.band[found.order[0]] == 3 and found.gain[found.order[0]] == found.gain.max()
    same, reversed_ = int(np.argmax(agreement)), int(np.argmin(agreement))
    assert agreement[same] == 1.0 and agreement[reversed_] < 0
    assert found.gain[reversed_] > found.gain[same] == 0.0  # identical rankings: nothing to learn
    place = {doc: k for k, doc in enumerate(found.order)}
    assert place[reversed_] < place[same]


def test_the_order_is_seeded_and_ties_are_broken_within_a_band():
    a, b, human, docs = documents(40, 8)
    unknown = np.full(a.size, np.nan)
    first = route(a, b, unknown, docs, np.random.default_rng(7))
    again = route(a, b, unknown, docs, np.random.default_rng(7))
    other = route(a, b, unknown, docs, np.random.default_rng(8))
    assert first.order.tolist() == again.order.tolist()
    assert first.reasons == again.reasons
    assert first.order.tolist() != other.order.tolist()
    # another seed reorders documents of equal score, never across scores
    np.testing.assert_array_equal(first.gain[first.order], other.gain[other.order])


def test_differences_are_the_spearman_differences_of_the_judged_documents():
    a, b, human, docs = documents(20, 6)
    found = route(a, b, judge(human, docs, [3, 11]), docs, np.random.default_rng(0))
    assert found.judged.tolist() == [k in (3, 11) for k in range(20)]
    for k in (3, 11):
        keep = docs == k
        want = (
            scipy.stats.spearmanr(a[keep], human[keep])[0]
            - scipy.stats.spearmanr(b[keep], human[keep])[0]
        )
        assert found.difference[k] == pytest.approx(want)
        # the bound the routing rests on: |ρ(A,H) − ρ(B,H)| ≤ sqrt(2 (1 − ρ(A,B)))
        assert abs(found.difference[k]) <= np.sqrt(2 * (1 - found.agreement[k])) + 1e-12
    assert found.settled.tolist() == [k >= 17 for k in range(20)]  # one reversed place: none
    assert (found.difference[found.settled] == 0).all()
    assert np.isnan(found.difference[~found.judged & ~found.settled]).all()


def test_every_band_gets_two_judged_documents_then_the_widest_band_gets_more():
    a, b, human, docs = documents(50, 8, seed=3)
    judged: list[int] = []
    for _ in range(25):
        found = route(a, b, judge(human, docs, judged), docs, np.random.default_rng(1))
        pick = int(found.order[0])
        if (found.n_judged < FIRST_PER_BAND).any():  # filling the bands first
            assert found.n_judged[found.band[pick]] < FIRST_PER_BAND
        judged.append(pick)
    assert found.n_bands == 5 and found.n_judged.min() >= FIRST_PER_BAND
    # band 0 holds the settled documents (identical rankings): none needs judging
    assert found.settled[found.band == 0].sum() >= FIRST_PER_BAND
    counts = np.bincount(found.band[judged], minlength=5)
    assert counts[0] == 0 and counts[-1] == counts.max() > counts[1]


def test_what_the_humans_show_moves_the_allocation():
    # Documents 10-19 disagree more (two swapped pairs, against one for 0-9), so before
    # any judgment their band goes first. Then the humans side with run A on every one
    # of them (equal differences: no spread), while on documents 0-9 they take the
    # runs' difference one way or the other (differences of ±b: the widest spread).
    rng = np.random.default_rng(5)
    a, b, human, docs = [], [], [], []
    for k in range(20):
        first = rng.permutation(6).astype(float)
        order = np.argsort(first)
        second = first.copy()
        for i, j in [(0, 1)] if k < 10 else [(0, 1), (3, 4)]:
            second[order[i]], second[order[j]] = first[order[j]], first[order[i]]
        a.append(first)
        b.append(second)
        sign = 1 if k % 2 else -1
        human.append(first.copy() if k >= 10 else sign * (first - second))
        docs.append(np.full(6, k))
    a_, b_, h_, d_ = map(np.concatenate, (a, b, human, docs))
    before = route(a_, b_, np.full(a_.size, np.nan), d_, np.random.default_rng(0))
    assert before.band.tolist() == [0] * 10 + [1] * 10
    assert before.band[before.order[0]] == 1 and before.gain[15] > before.gain[5]
    judged = [0, 1, 2, 3, 10, 11, 12, 13]
    after = route(a_, b_, judge(h_, d_, judged), d_, np.random.default_rng(0))
    np.testing.assert_allclose(after.difference[[10, 11, 12, 13]], 1 - after.agreement[10])
    assert after.spread[0] > after.spread[1]
    assert after.band[after.order[0]] == 0 and after.gain[5] > after.gain[15]


def test_a_started_document_is_finished_first():
    a, b, human, docs = documents(20, 6)
    fresh = route(a, b, np.full(a.size, np.nan), docs, np.random.default_rng(0))
    last = int(fresh.order[~fresh.settled[fresh.order]][-1])  # the last one that informs
    partial = np.where((docs == last) & (np.arange(a.size) % 2 == 0), human, np.nan)
    found = route(a, b, partial, docs, np.random.default_rng(0))
    assert found.started[last] and not found.judged[last]
    assert found.order[0] == last
    assert found.reasons[last].startswith("started")


def test_the_reason_says_why_the_document_stands_where_it_does():
    a, b, human, docs = documents(40, 8)
    b[docs == 20] = 1.0  # run B gives all of document 20's outputs one score
    found = route(
        a, b, np.full(a.size, np.nan), docs, np.random.default_rng(0), question=QUESTION, n_bands=2
    )
    top = int(found.order[0])
    assert found.reasons[top].startswith(f"ρ(ROUGE-2, ROUGE-L) = {found.agreement[top]:.2f} here")
    assert "needs 2 more judged documents" in found.reasons[top]
    assert "disagreement band 2 of 2" in found.reasons[top]
    assert "cannot tell them apart" in found.reasons[20] and found.gain[20] == 0
    after = found.order[list(found.order).index(20) + 1 :]
    assert found.settled[after].all()  # only documents whose difference is known follow it
    assert "alike, so ROUGE-2 − ROUGE-L is 0 here whatever the judges say" in found.reasons[39]
    judged = [int(k) for k in found.order[:5]]
    later = route(
        a,
        b,
        judge(human, docs, judged),
        docs,
        np.random.default_rng(0),
        question=QUESTION,
        n_bands=2,
    )
    nxt = int(later.order[0])
    assert "narrows ROUGE-2 − ROUGE-L on relevance by variance" in later.reasons[nxt]
    assert f"{later.gain[nxt]:.1e}" in later.reasons[nxt]
    done = judged[0]
    assert later.reasons[done].startswith(
        f"judged: ROUGE-2 − ROUGE-L = {later.difference[done]:+.2f}"
    )


def test_the_estimate_is_the_band_weighted_mean_with_a_t_interval():
    a, b, human, docs = documents(40, 8)
    found = route(a, b, judge(human, docs, list(range(6))), docs, np.random.default_rng(0))
    assert estimate(found) is None  # some band has fewer than two judged documents
    everything = route(a, b, human, docs, np.random.default_rng(0))
    result = estimate(everything)
    assert result is not None and result.n_judged == 40 and result.n_bands == 4
    # all judged, bands of equal size: the weighted mean is the plain sample-level mean
    assert result.value == pytest.approx(np.mean(everything.difference))
    assert result.low < result.value < result.high
    one = route(a, b, human, docs, np.random.default_rng(0), n_bands=1)
    single = estimate(one, alpha=0.1)
    assert single is not None
    half = scipy.stats.t.ppf(0.95, 40 - 1 + 2) * np.sqrt(one.spread[0] / 40)
    assert single.half_width == pytest.approx(half)


def test_bad_input_is_refused():
    a, b, human, docs = documents(20, 6)
    with pytest.raises(ValueError, match="one entry per output"):
        route(a, b[:-1], human, docs, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_bands"):
        route(a, b, human, docs, np.random.default_rng(0), n_bands=0)
    with pytest.raises(ValueError, match="alpha"):
        estimate(route(a, b, human, docs, np.random.default_rng(0)), alpha=1.5)
