"""MACE on simulated annotators whose competence is known, and against the MACE tool's
own outputs (``tests/data/mace_reference.json``, written by
``tests/data/make_mace_reference.py`` from a checkout of the tool, which is not a
dependency)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from scoring.stats.competence import (
    NOT_ENOUGH_ANNOTATORS,
    NOT_ENOUGH_OVERLAP,
    ONE_LABEL,
    Method,
    mace,
)

REFERENCE = json.loads((Path(__file__).parent.parent / "data" / "mace_reference.json").read_text())

LABELS = np.arange(1, 6)  # a 1–5 Likert scale, as categories


def simulate(seed: int, n_items: int = 300, competences: np.ndarray | None = None):  # type: ignore[no-untyped-def]
    """8 annotators with competences spread over 0.2–0.95 (shuffled); each item judged
    by 3 or 4 of them; a spamming annotator answers from a skewed distribution of its own."""
    rng = np.random.default_rng(seed)
    true_competence = np.linspace(0.2, 0.95, 8) if competences is None else competences
    true_competence = rng.permutation(true_competence)
    n_annotators = true_competence.size
    truth = rng.choice(LABELS, n_items)
    habits = rng.dirichlet(np.full(LABELS.size, 0.5), n_annotators)
    items, annotators, answers = [], [], []
    for i in range(n_items):
        for j in rng.choice(n_annotators, rng.integers(3, 5), replace=False):
            knows = rng.random() < true_competence[j]
            items.append(i)
            annotators.append(j)
            answers.append(truth[i] if knows else rng.choice(LABELS, p=habits[j]))
    return true_competence, truth, np.array(items), np.array(annotators), np.array(answers)


def majority_vote(items: np.ndarray, answers: np.ndarray, n_items: int, seed: int) -> np.ndarray:
    """Each item's most frequent answer, ties broken at random."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_items, LABELS.size))
    np.add.at(counts, (items, answers - 1), 1)
    best = counts == counts.max(axis=1, keepdims=True)
    return np.array([rng.choice(LABELS[row]) for row in best])


@pytest.mark.parametrize("method", list(Method))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mace_recovers_the_ranking_of_known_competences(seed, method):
    true_competence, _, items, annotators, answers = simulate(seed)
    result = mace(
        items, annotators, answers, labels=LABELS, rng=np.random.default_rng(seed), method=method
    )
    assert result.fitted and list(result.annotators) == list(range(8))
    rho = stats.spearmanr(result.competence, true_competence).statistic
    assert rho >= 0.9, (rho, result.competence, true_competence)
    # not only the order: the estimates are near the truth
    assert np.max(np.abs(result.competence - true_competence)) < 0.2
    np.testing.assert_allclose(result.posterior.sum(axis=1), 1.0)


@pytest.mark.parametrize("method", list(Method))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mace_labels_items_better_than_majority_vote_when_spammers_answer(seed, method):
    _, truth, items, annotators, answers = simulate(seed)
    result = mace(
        items, annotators, answers, labels=LABELS, rng=np.random.default_rng(seed), method=method
    )
    mace_accuracy = np.mean(result.predicted_labels() == truth)
    vote_accuracy = np.mean(majority_vote(items, answers, truth.size, seed) == truth)
    assert mace_accuracy > vote_accuracy + 0.03, (mace_accuracy, vote_accuracy)


def test_the_same_seed_gives_the_same_estimates_and_restarts_keep_the_best_objective():
    _, _, items, annotators, answers = simulate(5)
    first = mace(items, annotators, answers, labels=LABELS, rng=np.random.default_rng(7))
    again = mace(items, annotators, answers, labels=LABELS, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(first.competence, again.competence)
    np.testing.assert_array_equal(first.posterior, again.posterior)
    singles = [
        mace(
            items, annotators, answers, labels=LABELS, restarts=1, rng=np.random.default_rng(s)
        ).objective
        for s in range(10)
    ]
    best_of_ten = mace(
        items, annotators, answers, labels=LABELS, restarts=10, rng=np.random.default_rng(0)
    ).objective
    assert best_of_ten >= max(singles) - 1e-6 * abs(best_of_ten)


def test_keys_and_labels_may_be_any_values_and_unused_scale_points_count():
    items = ["x", "x", "y", "y", "z", "z"]
    who = ["ann", "bob", "ann", "bob", "ann", "bob"]
    answers = [4.0, 4.0, 2.0, 2.0, 5.0, 1.0]
    result = mace(items, who, answers, labels=[1.0, 2.0, 3.0, 4.0, 5.0])
    assert result.fitted and result.posterior.shape == (3, 5)
    assert set(result.by_annotator()) == {"ann", "bob"}
    assert list(result.predicted_labels()[:2]) == [4.0, 2.0]
    with pytest.raises(ValueError, match="not one of the labels"):
        mace(items, who, answers, labels=[1.0, 2.0, 4.0])


def test_one_annotator_no_overlap_or_one_label_give_a_reason_not_estimates():
    alone = mace([1, 2, 3], ["ann"] * 3, [1, 2, 3])
    assert alone.reason == NOT_ENOUGH_ANNOTATORS and alone.by_annotator() == {"ann": None}
    apart = mace([1, 2, 3, 4], ["ann", "ann", "bob", "bob"], [1, 2, 3, 1])
    assert apart.reason == NOT_ENOUGH_OVERLAP
    assert apart.by_annotator() == {"ann": None, "bob": None}
    assert list(apart.n_answers) == [2, 2] and list(apart.n_shared) == [0, 0]
    with pytest.raises(ValueError, match="no labels to predict"):
        apart.predicted_labels()
    same = mace([1, 1, 2, 2], ["ann", "bob", "ann", "bob"], [3, 3, 3, 3], labels=LABELS)
    assert same.reason == ONE_LABEL and np.isnan(same.posterior).all()
    assert mace([], [], []).reason == "no answers"


def test_an_annotator_without_shared_items_gets_no_estimate_while_the_others_do():
    items = [1, 1, 2, 2, 3, 3, 4]
    who = ["ann", "bob", "ann", "bob", "ann", "bob", "cat"]
    result = mace(items, who, [1, 1, 2, 2, 3, 1, 2], labels=[1, 2, 3])
    estimates = result.by_annotator()
    assert estimates["cat"] is None and estimates["ann"] is not None
    assert list(result.n_shared) == [3, 3, 0]


def test_bad_input_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="aligned"):
        mace([1, 2], ["a"], [1, 2])
    with pytest.raises(ValueError, match="answered an item twice"):
        mace([1, 1], ["a", "a"], [1, 2])
    with pytest.raises(ValueError, match="smoothing"):
        mace([1, 1], ["a", "b"], [1, 2], smoothing=-1, method=Method.EM)
    with pytest.raises(ValueError, match="smoothing is for EM"):
        mace([1, 1], ["a", "b"], [1, 2], smoothing=0.1)
    for prior in ({"alpha": 0.0}, {"beta": -1.0}, {"alpha": float("nan")}):
        with pytest.raises(ValueError, match="alpha and beta"):
            mace([1, 1], ["a", "b"], [1, 2], **prior)


# --- variational Bayes (the MACE tool's default) beside EM (its --em) -------------------

RUNS = {"vb": {}, "em": {"method": Method.EM}, "vb_alpha2": {"alpha": 2.0}}


def reference_answers(case: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    """The tool's input (one CSV line per item, a column per annotator) as answer rows."""
    rows = [
        (i, j, value)
        for i, line in enumerate(case["csv"])
        for j, value in enumerate(line.split(","))
        if value
    ]
    items, annotators, labels = zip(*rows, strict=True)
    return np.array(items), np.array(annotators), np.array(labels)


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("case", [c["name"] for c in REFERENCE["cases"]])
def test_competence_equals_the_mace_tools_in_each_of_its_modes(case, run):
    reference = next(c for c in REFERENCE["cases"] if c["name"] == case)
    items, annotators, labels = reference_answers(reference)
    # Run to convergence, as the tool ran (1,000 iterations, 20 restarts).
    result = mace(
        items, annotators, labels, restarts=10, iterations=1000, tolerance=0.0, **RUNS[run]
    )
    expected = np.array(reference["competence"][run])[result.annotators]
    np.testing.assert_allclose(result.competence, expected, atol=1e-6)


def test_the_default_is_the_mace_tools_default_variational_bayes():
    reference = next(c for c in REFERENCE["cases"] if c["name"] == "few_answers")
    items, annotators, labels = reference_answers(reference)
    result = mace(items, annotators, labels, iterations=1000, tolerance=0.0)
    assert result.method is Method.VARIATIONAL
    np.testing.assert_allclose(result.competence, reference["competence"]["vb"], atol=1e-6)


def test_variational_bayes_finds_the_spammer_and_the_good_annotators():
    # Four annotators right 90% of the time; a fifth answers 3 whatever the item.
    rng = np.random.default_rng(11)
    truth = rng.choice(LABELS, 80)
    items, annotators, answers = [], [], []
    for i, t in enumerate(truth):
        for j in range(5):
            good = j < 4 and rng.random() < 0.9
            items.append(i)
            annotators.append(j)
            answers.append(t if good else (3 if j == 4 else rng.choice(LABELS)))
    result = mace(items, annotators, answers, labels=LABELS)
    assert result.method is Method.VARIATIONAL
    assert result.competence[4] < 0.05
    assert np.all(result.competence[:4] > 0.8), result.competence
    assert np.argmax(result.spamming[4]) == 2  # its habit: the label 3
    assert np.mean(result.predicted_labels() == truth) > 0.95


def test_variational_bayes_agrees_with_em_on_plentiful_clean_data():
    # 600 items each answered by 3 or 4 of 8 annotators (about 300 answers each).
    competences = np.linspace(0.7, 0.95, 8)
    _, _, items, annotators, answers = simulate(3, n_items=600, competences=competences)
    vb = mace(items, annotators, answers, labels=LABELS, rng=np.random.default_rng(1))
    em = mace(
        items, annotators, answers, labels=LABELS, rng=np.random.default_rng(1), method=Method.EM
    )
    np.testing.assert_allclose(vb.competence, em.competence, atol=0.02)
    assert np.mean(vb.predicted_labels() == em.predicted_labels()) > 0.98


def test_the_priors_matter_for_an_annotator_with_few_answers():
    # The tool's reference case: a fourth annotator answered 4 of 40 items, as the
    # first (best) annotator did. EM calls it all but perfect; VB's prior holds it back,
    # and a prior of mostly unreliable annotators (alpha 2 > beta 0.5) more so.
    reference = next(c for c in REFERENCE["cases"] if c["name"] == "few_answers")
    items, annotators, labels = reference_answers(reference)
    em = mace(items, annotators, labels, method=Method.EM)
    vb = mace(items, annotators, labels)
    wary = mace(items, annotators, labels, alpha=2.0)
    assert em.competence[3] > 0.99
    assert vb.competence[3] < em.competence[3] - 0.1
    assert wary.competence[3] < vb.competence[3] - 0.2
    # The three annotators with 40 answers each move far less.
    assert np.max(np.abs(vb.competence[:3] - em.competence[:3])) < 0.05


@pytest.mark.parametrize("method", list(Method))
def test_every_step_raises_the_objective(method):
    # VB's evidence lower bound, and EM's likelihood with its smoothing prior, never fall
    # (which is what lets a fit stop once the gain is negligible).
    _, _, items, annotators, answers = simulate(4, n_items=120)
    objectives = [
        mace(
            items,
            annotators,
            answers,
            labels=LABELS,
            rng=np.random.default_rng(2),
            restarts=1,
            iterations=k,
            tolerance=0.0,
            method=method,
        ).objective
        for k in range(1, 30)
    ]
    assert np.all(np.diff(objectives) >= -1e-9 * np.abs(objectives[1:]))
    assert objectives[-1] > objectives[0]
