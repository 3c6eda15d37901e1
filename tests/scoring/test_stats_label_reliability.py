"""Agreement among annotators on labels: Fleiss' κ against statsmodels, nominal
Krippendorff's α against the ``krippendorff`` package and each pair's Cohen's κ against
scikit-learn, on random campaigns with the degenerate ones among them (statsmodels and
scikit-learn are dev dependencies only); and the figures of the shared per-annotator
files."""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn import metrics
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from scoring.stats.label_tables import LabelSet, fleiss_kappa, fleiss_sums, label_counts
from scoring.stats.labels import annotator_reliability, human_ceiling
from tests.conftest import SHARED_DATA

CASES = 220


def _campaign(rng: np.random.Generator, missing: bool) -> tuple[int, np.ndarray]:
    """Raters × items label codes: often few items, unused labels, one label only."""
    q = int(rng.integers(2, 6))
    raters, n = int(rng.integers(2, 6)), int(rng.choice([1, 2, 4, 10, 40]))
    shares = rng.dirichlet(np.full(q, 0.5))
    truth = rng.choice(q, size=n, p=shares)
    answers = np.where(
        rng.random((raters, n)) < rng.uniform(0.3, 1.0), truth, rng.integers(0, q, (raters, n))
    )
    answers = answers.astype(float)
    if rng.random() < 0.15:
        answers[:] = answers.flat[0]
    if missing:
        answers[rng.random(answers.shape) < 0.3] = np.nan
    return q, answers


def _single_value(answers: np.ndarray) -> bool:
    """The krippendorff package refuses data with one value (or none) on pairable items."""
    pairable = answers[:, np.count_nonzero(np.isfinite(answers), axis=0) >= 2]
    return np.unique(pairable[np.isfinite(pairable)]).size < 2


def test_fleiss_kappa_equals_statsmodels_on_complete_campaigns():
    rng = np.random.default_rng(38)
    undefined = 0
    for _ in range(CASES):
        q, answers = _campaign(rng, missing=False)
        found = annotator_reliability(
            answers, np.arange(answers.shape[1]), LabelSet(tuple(range(q)))
        )
        table = label_counts(answers, q)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = statsmodels_fleiss(table)
        if math.isnan(expected):
            undefined += 1
            assert math.isnan(found.fleiss_kappa.value)
            assert found.fleiss_kappa.reason.startswith("every answer is")
        else:
            assert abs(found.fleiss_kappa.value - expected) <= 1e-12
            # the ceiling's κ over the pairs both ways is Fleiss' with as many raters per item
            ceiling = human_ceiling(answers, np.arange(answers.shape[1]), LabelSet(tuple(range(q))))
            assert abs(ceiling.kappa.value - expected) <= 1e-12
        assert found.n_items == answers.shape[1] and found.n_answers == answers.size
    assert undefined >= 10


def test_fleiss_kappa_with_missing_answers_uses_each_items_own_raters():
    # item 1: 3 answers (a a b), P = (4 + 1 − 3) / 6 = 1/3; item 2: 2 answers (b b), P = 1;
    # item 3: one answer, left out. P̄ = 2/3; shares a 2/5, b 3/5: P_e = 13/25;
    # κ = (2/3 − 13/25) / (12/25) = 11/36
    answers = np.array([[0, 1, 0], [0, 1, np.nan], [1, np.nan, np.nan]])
    sums = fleiss_sums(label_counts(answers, 2)).sum(axis=0)
    assert fleiss_kappa(sums) == pytest.approx(11 / 36, abs=1e-15)
    found = annotator_reliability(answers, [0, 0, 1], LabelSet(("a", "b")))
    assert found.n_items == 2 and found.n_answers == 5


def test_nominal_alpha_equals_the_krippendorff_package_with_missing_answers():
    rng = np.random.default_rng(39)
    refused = 0
    for _ in range(CASES):
        q, answers = _campaign(rng, missing=True)
        found = annotator_reliability(
            answers, np.arange(answers.shape[1]), LabelSet(tuple(range(q)))
        )
        if _single_value(answers):
            refused += 1  # the package raises: α is undefined, and says why
            assert math.isnan(found.krippendorff_alpha.value)
            assert found.krippendorff_alpha.reason is not None
            continue
        expected = krippendorff.alpha(reliability_data=answers, level_of_measurement="nominal")
        assert abs(found.krippendorff_alpha.value - expected) <= 1e-12
    assert refused >= 10


def test_ordinal_alpha_of_ordered_labels_equals_the_krippendorff_package():
    rng = np.random.default_rng(42)
    checked = 0
    for _ in range(60):
        q, answers = _campaign(rng, missing=True)
        if _single_value(answers):
            continue
        labels = LabelSet(tuple(range(q)), ordered=True)
        found = annotator_reliability(
            answers, np.arange(answers.shape[1]), labels, alpha_level="ordinal"
        )
        expected = krippendorff.alpha(
            reliability_data=answers, level_of_measurement="ordinal", value_domain=list(range(q))
        )
        assert abs(found.krippendorff_alpha.value - expected) <= 1e-12
        checked += 1
    assert checked >= 25
    with pytest.raises(ValueError, match="ordinal α needs ordered labels"):
        annotator_reliability(
            answers, np.arange(answers.shape[1]), LabelSet((0, 1)), alpha_level="ordinal"
        )


def test_each_pairs_cohen_kappa_equals_scikit_learn_on_the_items_both_answered():
    rng = np.random.default_rng(40)
    checked = 0
    for _ in range(60):
        q, answers = _campaign(rng, missing=True)
        found = annotator_reliability(
            answers, np.arange(answers.shape[1]), LabelSet(tuple(range(q)))
        )
        for pair in found.pairs:
            both = np.isfinite(answers[pair.first]) & np.isfinite(answers[pair.second])
            assert pair.n_items == both.sum() > 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = metrics.cohen_kappa_score(
                    answers[pair.first, both], answers[pair.second, both], labels=list(range(q))
                )
            if math.isnan(expected):
                assert math.isnan(pair.kappa.value) and "κ undefined" in pair.kappa.reason
            else:
                assert abs(pair.kappa.value - expected) <= 1e-12
            checked += 1
    assert checked >= 200


def test_reliability_intervals_come_by_document_and_are_reproducible():
    rng = np.random.default_rng(41)
    q, n = 3, 240
    truth = rng.integers(0, q, n)
    answers = np.where(rng.random((3, n)) < 0.75, truth, rng.integers(0, q, (3, n))).astype(float)
    docs = np.arange(n) // 6
    first, second = (
        annotator_reliability(
            answers, docs, LabelSet(("x", "y", "z")), rng=np.random.default_rng(1), resamples=300
        )
        for _ in range(2)
    )
    assert first.fleiss_kappa == second.fleiss_kappa and first.n_documents == 40
    for estimate in (first.fleiss_kappa, first.krippendorff_alpha, first.pairs[0].kappa):
        assert estimate.low < estimate.value < estimate.high


def _shared(name: str) -> list[dict]:
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"needs {path} (the shared data folder beside the repository)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _per_annotator(rows: list[dict], aspect: str, labels: LabelSet):
    """Annotators × outputs codes of ``aspect``, the annotators' ids, the documents."""
    names = sorted({a for r in rows for a in r.get("annotators", {}).get(aspect, {})})
    answers = [[r.get("annotators", {}).get(aspect, {}).get(name) for r in rows] for name in names]
    return labels.codes(answers, where=f"annotators.{aspect}"), names, [r["doc_id"] for r in rows]


SHARED = [
    ("xsumfaith.jsonl", "faithful", LabelSet.binary(0, 1)),
    ("xsumfaith.jsonl", "hallucination", LabelSet(("none", "intrinsic", "extrinsic", "both"))),
    ("wmt23_mqm_ende.jsonl", "major_error", LabelSet.binary(0, 1)),
    (
        "wmt23_mqm_ende.jsonl",
        "error_category",
        LabelSet(
            (
                "No-error",
                "Accuracy",
                "Fluency",
                "Style",
                "Terminology",
                "Locale convention",
                "Non-translation",
                "Other",
            )
        ),
    ),
]


@pytest.mark.parametrize("name,aspect,labels", SHARED, ids=[f"{s[0]}:{s[1]}" for s in SHARED])
def test_the_shared_per_annotator_files(name, aspect, labels):
    rows = _shared(name)
    answers, names, docs = _per_annotator(rows, aspect, labels)
    found = annotator_reliability(
        answers, docs, labels, rng=np.random.default_rng(0), resamples=200
    )
    counts = label_counts(answers, labels.q)
    complete = counts.sum(axis=1) == 3  # every item but a few has three annotators
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_complete = statsmodels_fleiss(counts[complete])
    mine_complete = fleiss_kappa(fleiss_sums(counts[complete]).sum(axis=0))
    assert abs(mine_complete - on_complete) <= 1e-12
    expected_alpha = krippendorff.alpha(reliability_data=answers, level_of_measurement="nominal")
    assert abs(found.krippendorff_alpha.value - expected_alpha) <= 1e-12
    assert found.fleiss_kappa.low < found.fleiss_kappa.value < found.fleiss_kappa.high
    # the ceiling: the annotators against each other, the statistics a judge gets; on
    # the items with three annotators its κ is Fleiss'
    ceiling = human_ceiling(answers, docs, labels, rng=np.random.default_rng(0), resamples=200)
    on_three = human_ceiling(answers[:, complete], np.asarray(docs)[complete], labels)
    assert abs(on_three.kappa.value - on_complete) <= 1e-12
    assert ceiling.mcc.low < ceiling.mcc.value < ceiling.mcc.high
    print(
        f"\n{name} {aspect}: {found.n_items} items, {found.n_documents} documents, "
        f"{len(names)} annotator ids; Fleiss κ {_figure(found.fleiss_kappa)}, nominal α "
        f"{_figure(found.krippendorff_alpha)}; ceiling accuracy {_figure(ceiling.accuracy)}, "
        f"κ {_figure(ceiling.kappa)}, MCC {_figure(ceiling.mcc)}, macro-F1 "
        f"{_figure(ceiling.macro_f1)}, majority share {ceiling.majority_share.value:.4f}"
    )


def _figure(estimate) -> str:
    return f"{estimate.value:.4f} [{estimate.low:.4f}, {estimate.high:.4f}]"
