"""Dawid–Skene against the test cases of crowd-kit's ``DawidSkene`` (the toy YSDA and the
"simple" animals answers of its ``tests/conftest.py``, ported as data), and against
crowd-kit itself where it is installed (a dev-only reference: the test skips without it)."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats.dawid_skene import dawid_skene

TOY = """w1 t1 no, w1 t2 yes, w1 t3 yes, w1 t4 yes, w1 t5 yes, w2 t1 yes, w2 t2 yes, w2 t3 no,
w2 t4 yes, w2 t5 no, w3 t2 yes, w3 t3 no, w3 t4 yes, w3 t5 no, w4 t1 yes, w4 t2 no,
w4 t3 yes, w4 t4 yes, w4 t5 no, w5 t1 no, w5 t2 no, w5 t3 no, w5 t4 yes, w5 t5 no"""
TOY_TRUTH = {"t1": "yes", "t2": "yes", "t3": "no", "t4": "yes", "t5": "no"}

# crowd-kit's "simple" answers: good workers, a fraudster who always answers parrot and a
# careless one (worker and task ids shortened: good1.. and the tasks' last 3 characters)
SIMPLE = """good1 eec goose, good1 efb parrot, good1 f03 goose, good1 f05 goose, good1 f02 parrot,
good1 f08 parrot, good2 efb parrot, good2 ee8 chicken, good2 f07 parrot, good2 efd chicken,
good2 ee4 chicken, good2 f03 goose, good3 ee8 chicken, good3 eec goose, good3 f05 goose,
good3 f02 parrot, good3 f08 parrot, good4 eec goose, good4 ee8 chicken, good4 f03 goose,
good4 ee4 chicken, fraud eec parrot, fraud efb parrot, fraud f07 parrot, fraud efd parrot,
fraud ee4 parrot, fraud f05 parrot, careless efb parrot, careless ee8 goose,
careless f02 parrot, careless f08 parrot, careless f07 parrot, careless efd goose"""
SIMPLE_TRUTH = {
    "eec": "goose",
    "f03": "goose",
    "f05": "goose",
    "efb": "parrot",
    "f02": "parrot",
    "f08": "parrot",
    "f07": "parrot",
    "ee8": "chicken",
    "efd": "chicken",
    "ee4": "chicken",
}


def parse(text: str) -> list[tuple[str, str, str]]:
    return [tuple(a.split()) for a in text.replace("\n", " ").split(",")]  # type: ignore[misc]


def encode(answers: list[tuple[str, str, str]]):  # type: ignore[no-untyped-def]
    workers = sorted({w for w, _, _ in answers})
    tasks = sorted({t for _, t, _ in answers})
    labels = sorted({label for _, _, label in answers})
    codes = np.array(
        [(tasks.index(t), workers.index(w), labels.index(lab)) for w, t, lab in answers]
    )
    return codes[:, 0], codes[:, 1], codes[:, 2], tasks, labels


@pytest.mark.parametrize(("n_iter", "tol"), [(10, 0.0), (100500, 1e-5)])
@pytest.mark.parametrize(("data", "truth"), [(TOY, TOY_TRUTH), (SIMPLE, SIMPLE_TRUTH)])
def test_dawid_skene_recovers_crowd_kits_ground_truth(data, truth, n_iter, tol):  # type: ignore[no-untyped-def]
    items, workers, answers, tasks, labels = encode(parse(data))
    fit = dawid_skene(items, workers, answers, n_iter=n_iter, tol=tol)
    assert {t: labels[c] for t, c in zip(tasks, fit.labels, strict=True)} == truth
    assert np.allclose(fit.probas.sum(axis=1), 1.0)
    assert ((fit.probas >= 0) & (fit.probas <= 1)).all()
    # each annotator's error matrix is a distribution over what it answered, per true label
    assert np.allclose(fit.errors.sum(axis=1), 1.0)


def test_the_fraudster_is_found_to_answer_parrot_whatever_the_truth():
    items, workers, answers, _, labels = encode(parse(SIMPLE))
    fit = dawid_skene(items, workers, answers)
    fraud = sorted({w for w, _, _ in parse(SIMPLE)}).index("fraud")
    assert np.allclose(fit.errors[fraud, labels.index("parrot")], 1.0, atol=1e-6)


def test_unanimous_answers_are_certain_and_a_label_nobody_gave_gets_nothing():
    fit = dawid_skene([0, 0, 1, 1], [0, 1, 0, 1], [2, 2, 0, 0], n_classes=4)
    assert fit.labels.tolist() == [2, 0]
    assert fit.probas[:, [1, 3]].max() == 0.0 and fit.priors[[1, 3]].tolist() == [0.0, 0.0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one answer"):
        dawid_skene([0, 2], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="aligned"):
        dawid_skene([0, 1], [0], [1, 1])
    with pytest.raises(ValueError, match="no answers"):
        dawid_skene([], [], [])


@pytest.mark.parametrize("data", [TOY, SIMPLE])
def test_dawid_skene_equals_crowd_kit(data):  # type: ignore[no-untyped-def]
    import crowdkit.aggregation as crowdkit  # the dev extra's reference (pyproject.toml)
    import pandas as pd

    answers = parse(data)
    frame = pd.DataFrame(answers, columns=["worker", "task", "label"])
    reference = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit(frame)
    items, workers, codes, tasks, labels = encode(answers)
    fit = dawid_skene(items, workers, codes, n_iter=100, tol=1e-5)
    expected = reference.probas_.loc[tasks, labels].to_numpy()
    assert np.allclose(fit.probas, expected, atol=1e-8)
    assert np.allclose(fit.loss_history, reference.loss_history_, atol=1e-8)
