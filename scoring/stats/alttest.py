"""The alternative-annotator test (alt-test) of Calderon, Reichart & Dror (ACL 2025): may a
judge replace the human annotators?

Leave one annotator out at a time. On each item that annotator judged, score how well
the judge and the left-out annotator each agree with the *remaining* annotators (the
alignment score: ``accuracy``, the share of the remaining answers equal to one's own, for
categories; ``neg_rmse``, minus the root mean squared difference, for numbers). The
judge is at least as good on the item when its score is ≥ the annotator's, and the
annotator when theirs is ≥ the judge's (a tie counts for both; scores equal to
:data:`TIE_TOLERANCE` are a tie, which the authors' code settles by rounding). With ``d_i`` the
annotator's indicator minus the judge's (−1, 0 or 1), a one-sided one-sample t-test asks
whether the mean of ``d`` is below ε, the cost-benefit margin granted to the judge
(H0: the annotator's advantage is at least ε). The p-values of all the annotators tested
go through the Benjamini–Yekutieli procedure at level ``alpha``; the judge *wins*
against each annotator whose null is rejected. The winning rate ω is the share of the
annotators tested that the judge wins against, and the judge passes when ω ≥ 0.5. The
advantage probability ρ is, per annotator, the share of their items on which the judge
is at least as good, and overall their mean: it ranks judges, ω decides.

As in the authors' reference implementation (github.com/nitaytech/AltTest), an item takes
part when the judge judged it and at least ``min_annotators_per_item`` annotators did,
and an annotator is tested when at least ``min_items`` such items are theirs (the t-test
leans on normality: the authors ask for 30). The authors recommend three annotators or
more, so that the left-out annotator faces a consensus rather than one other person;
three per item is the default here (the reference's default is two per item).
``tests/scoring/test_stats_alttest.py`` compares this implementation with the
reference's outputs. For label aspects :func:`alt_test_labels` runs the test on label
codes with the ``accuracy`` score (the reference's for categorical answers: the share of
the remaining annotators whose answer equals one's own), vectorised over items and equal
to :func:`alt_test` on the same answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

Metric = Literal["accuracy", "neg_rmse"] | Callable[[Any, Sequence[Any]], float]
"""An alignment score: one answer against the remaining annotators' answers on an item,
higher is better."""

Tested = tuple[Hashable, int, float, float, float]  # annotator, items, ρ judge, ρ human, p

PASSING_RATE = 0.5
# Two alignment scores this close (relative) are a tie: the judge's and an annotator's
# RMSE against the same answers are equal whenever their squared differences are the
# same numbers (a judge's 1.8 and an annotator's 4.2 against 4.5, 1.5 and 3), but summed
# in another order they can differ in the last bit, and an exact comparison would settle
# the tie by rounding (it did so in 130 of 2,546 ties of one-decimal answers, unlike the
# authors' code in some, like it in others).
TIE_TOLERANCE = 1e-9
NO_ITEMS = "no_items"
TOO_FEW_ITEMS = "too_few_items"


def accuracy(answer: Any, others: Sequence[Any]) -> float:
    """The share of ``others`` equal to ``answer`` (for categories)."""
    return float(sum(bool(answer == other) for other in others) / len(others))


def neg_rmse(answer: Any, others: Sequence[Any]) -> float:
    """Minus the root mean squared difference between ``answer`` and ``others`` (for
    numbers)."""
    differences = np.asarray(others, dtype=np.float64) - float(answer)
    return -float(np.sqrt(np.mean(differences**2)))


def neg_rmse_plain(answer: Any, others: Sequence[Any]) -> float:
    """:func:`neg_rmse` in plain Python: for the few answers of one item it is about
    twenty times faster (numpy's overhead per call dominates there). It may differ from
    it in the last bit; the test compares scores to :data:`TIE_TOLERANCE`, so a tie
    stays one whichever function computed it."""
    own = float(answer)
    return -math.sqrt(math.fsum((float(o) - own) ** 2 for o in others) / len(others))


METRICS: dict[str, Callable[[Any, Sequence[Any]], float]] = {
    "accuracy": accuracy,
    "neg_rmse": neg_rmse,
}


@dataclass(frozen=True)
class AnnotatorTest:
    """The judge against one left-out annotator, on the ``n_items`` items both judged.

    ``rho_judge`` is the share of those items on which the judge aligned with the other
    annotators at least as well as this annotator did (the judge's advantage
    probability), ``rho_human`` the share on which the annotator did at least as well as
    the judge. ``p_value`` is the one-sided t-test's of H0: ``rho_human − rho_judge ≥ ε``
    (NaN with fewer than two items), ``adjusted_p_value`` its Benjamini–Yekutieli
    adjustment over the annotators tested, and ``judge_wins`` whether the procedure
    rejected H0 at the test's ``alpha``."""

    annotator: Hashable
    n_items: int
    rho_judge: float
    rho_human: float
    p_value: float
    adjusted_p_value: float
    judge_wins: bool


@dataclass(frozen=True)
class AltTestResult:
    """The alt-test's verdict.

    ``winning_rate`` (ω) is the share of the tested annotators the judge wins against,
    ``advantage_probability`` (ρ) the mean of their ``rho_judge``; both NaN, and
    ``passed`` False, when no annotator could be tested, and then ``problem`` says why
    (:data:`NO_ITEMS` or :data:`TOO_FEW_ITEMS`) and ``message`` what is missing.
    ``skipped`` lists the annotators with fewer than ``min_items`` usable items, with
    their count. ``n_items`` items were used (judged by the judge and at least
    ``min_annotators_per_item`` annotators); ``n_items_with_three`` items were judged
    by the judge and at least three annotators, the paper's requirement."""

    winning_rate: float
    advantage_probability: float
    passed: bool
    per_annotator: tuple[AnnotatorTest, ...]
    skipped: tuple[tuple[Hashable, int], ...]
    n_items: int
    n_items_with_three: int
    epsilon: float
    alpha: float
    min_annotators_per_item: int
    min_items: int
    problem: str | None = None
    message: str = ""


def at_least(score: float, other: float) -> bool:
    """``score ≥ other``, a tie to :data:`TIE_TOLERANCE` counting as equal."""
    return score >= other or math.isclose(score, other, rel_tol=TIE_TOLERANCE, abs_tol=1e-12)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _metric(metric: Metric) -> Callable[[Any, Sequence[Any]], float]:
    if callable(metric):
        return metric
    if metric not in METRICS:
        raise ValueError(f"unknown alignment score {metric!r}: use one of {sorted(METRICS)}")
    return METRICS[metric]


def one_sided_p_value(differences: npt.ArrayLike, epsilon: float) -> float:
    """One-sample t-test of H0: mean ≥ ε against H1: mean < ε (``scipy.stats.ttest_1samp``
    with ``alternative="less"``). NaN with fewer than two values; when every value is the
    same the mean is known exactly: p is 0 below ε and 1 otherwise."""
    values = np.asarray(differences, dtype=np.float64)
    if values.size < 2:
        return math.nan
    if np.all(values == values[0]):
        return 0.0 if values[0] < epsilon else 1.0
    return float(stats.ttest_1samp(values, epsilon, alternative="less").pvalue)


def benjamini_yekutieli(p_values: Sequence[float], alpha: float) -> tuple[list[bool], list[float]]:
    """The Benjamini–Yekutieli step-up procedure (FDR control under any dependence): with
    the m p-values sorted, reject the k smallest for the largest k with
    ``p_(k) ≤ k / m · alpha / H_m`` (H_m = 1 + 1/2 + … + 1/m). Returns, in the given
    order, whether each is rejected and its adjusted p-value (the smallest ``alpha`` at
    which it would be). NaN p-values count in m and are never rejected."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return [], []
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    ranks = np.arange(1, m + 1)
    order = np.argsort(p, kind="stable")  # NaN sorts last
    ordered = p[order]
    below = np.flatnonzero(ordered <= ranks / m * (alpha / harmonic))
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    scaled = np.minimum(1.0, ordered * m * harmonic / ranks)
    finite = np.isfinite(scaled)
    adjusted_sorted = np.full(m, np.nan)
    adjusted_sorted[finite] = np.minimum.accumulate(scaled[finite][::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return [bool(r) for r in rejected], [float(a) for a in adjusted]


def alt_test(
    judge: Mapping[Hashable, Any],
    annotations: Mapping[Hashable, Mapping[Hashable, Any]],
    *,
    epsilon: float,
    alpha: float = 0.05,
    metric: Metric = "accuracy",
    min_annotators_per_item: int = 3,
    min_items: int = 30,
) -> AltTestResult:
    """Run the alt-test of ``judge`` (item → answer) against ``annotations`` (annotator →
    item → answer). ``epsilon`` is the cost-benefit margin (the authors suggest 0.2 for
    experts, 0.15 for skilled annotators, 0.1 for crowd workers), ``alpha`` the
    Benjamini–Yekutieli FDR level, ``metric`` the alignment score. A missing answer
    (None or NaN) counts as not given. See the module's docstring."""
    if min_annotators_per_item < 2:
        raise ValueError(
            "the left-out annotator needs at least one other: min_annotators_per_item ≥ 2"
        )
    score = _metric(metric)
    judged = {item for item, answer in judge.items() if not _missing(answer)}
    answers = {
        annotator: {item: a for item, a in given.items() if not _missing(a)}
        for annotator, given in annotations.items()
    }
    per_item: dict[Hashable, list[Hashable]] = {}
    for annotator, given in answers.items():
        for item in given:
            per_item.setdefault(item, []).append(annotator)
    n_with_three = sum(1 for item in judged if len(per_item.get(item, ())) >= 3)
    usable = {item for item in judged if len(per_item.get(item, ())) >= min_annotators_per_item}

    tested: list[Tested] = []
    skipped: list[tuple[Hashable, int]] = []
    for left_out, given in answers.items():
        items = [item for item in given if item in usable]
        if len(items) < min_items:
            skipped.append((left_out, len(items)))
            continue
        judge_ok = np.empty(len(items))
        human_ok = np.empty(len(items))
        for k, item in enumerate(items):
            others = [answers[a][item] for a in per_item[item] if a != left_out]
            judge_score = score(judge[item], others)
            human_score = score(given[item], others)
            judge_ok[k] = at_least(judge_score, human_score)
            human_ok[k] = at_least(human_score, judge_score)
        p = one_sided_p_value(human_ok - judge_ok, epsilon)
        tested.append((left_out, len(items), float(judge_ok.mean()), float(human_ok.mean()), p))

    return _verdict(
        tested,
        skipped,
        len(usable),
        n_with_three,
        epsilon=epsilon,
        alpha=alpha,
        min_annotators_per_item=min_annotators_per_item,
        min_items=min_items,
    )


def _verdict(
    tested: list[Tested],
    skipped: list[tuple[Hashable, int]],
    n_usable: int,
    n_with_three: int,
    *,
    epsilon: float,
    alpha: float,
    min_annotators_per_item: int,
    min_items: int,
) -> AltTestResult:
    """The Benjamini–Yekutieli procedure over the tested annotators' p-values, and the
    result."""
    wins, adjusted = benjamini_yekutieli([t[4] for t in tested], alpha)
    per_annotator = tuple(
        AnnotatorTest(name, n, rho_judge, rho_human, p, adj, win)
        for (name, n, rho_judge, rho_human, p), win, adj in zip(tested, wins, adjusted, strict=True)
    )
    problem, message = None, ""
    if not per_annotator:
        problem, message = _what_is_missing(n_usable, skipped, min_annotators_per_item, min_items)
    omega = sum(wins) / len(wins) if wins else math.nan
    rho = float(np.mean([t.rho_judge for t in per_annotator])) if per_annotator else math.nan
    return AltTestResult(
        winning_rate=omega,
        advantage_probability=rho,
        passed=bool(wins) and omega >= PASSING_RATE,
        per_annotator=per_annotator,
        skipped=tuple(skipped),
        n_items=n_usable,
        n_items_with_three=n_with_three,
        epsilon=epsilon,
        alpha=alpha,
        min_annotators_per_item=min_annotators_per_item,
        min_items=min_items,
        problem=problem,
        message=message,
    )


def alt_test_labels(
    judge: npt.ArrayLike,
    humans: npt.ArrayLike,
    annotators: Sequence[Hashable],
    *,
    epsilon: float,
    alpha: float = 0.05,
    min_annotators_per_item: int = 3,
    min_items: int = 30,
) -> AltTestResult:
    """The alt-test of a judge's labels with AltTest's ``accuracy`` alignment score (the
    share of the remaining annotators who gave one's own label), on label codes:
    ``judge`` one per item, ``humans`` annotators × items (row r is ``annotators[r]``),
    NaN = no answer. Equal to :func:`alt_test` with ``metric="accuracy"`` on the same
    answers, vectorised: on an item with m answers and c_k of them label k, the judge's
    score against the others when annotator h (label a) is left out is
    (c_j − [a = j]) / (m − 1) and h's is (c_a − 1) / (m − 1), so comparing them is
    comparing counts."""
    if min_annotators_per_item < 2:
        raise ValueError(
            "the left-out annotator needs at least one other: min_annotators_per_item ≥ 2"
        )
    j = np.asarray(judge, dtype=np.float64).reshape(-1)
    h = np.asarray(humans, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != j.size or h.shape[0] != len(annotators):
        raise ValueError("humans must be annotators × items: one row per annotator named")
    given, judged = np.isfinite(h), np.isfinite(j)
    answers = np.concatenate([h[given], j[judged]])
    if np.any((answers < 0) | (answers != np.round(answers))):
        raise ValueError("label codes must be whole numbers from 0 (NaN = no answer)")
    codes = np.where(given, h, 0.0).astype(np.intp)
    q = int(answers.max(initial=0.0)) + 1
    counts = np.zeros((j.size, q))
    np.add.at(counts, (np.nonzero(given)[1], codes[given]), 1.0)
    m = counts.sum(axis=1)
    judge_code = np.where(judged, j, 0.0).astype(np.intp)
    usable = judged & (m >= min_annotators_per_item)
    n_with_three = int(np.count_nonzero(judged & (m >= 3)))
    items = np.arange(j.size)
    agree_judge = counts[items, judge_code]
    tested: list[Tested] = []
    skipped: list[tuple[Hashable, int]] = []
    for r, name in enumerate(annotators):
        mine = given[r] & usable
        n = int(np.count_nonzero(mine))
        if n < min_items:
            skipped.append((name, n))
            continue
        own = codes[r, mine]
        judge_score = agree_judge[mine] - (own == judge_code[mine])
        human_score = counts[items[mine], own] - 1.0
        judge_ok = (judge_score >= human_score).astype(np.float64)
        human_ok = (human_score >= judge_score).astype(np.float64)
        p = one_sided_p_value(human_ok - judge_ok, epsilon)
        tested.append((name, n, float(judge_ok.mean()), float(human_ok.mean()), p))
    return _verdict(
        tested,
        skipped,
        int(np.count_nonzero(usable)),
        n_with_three,
        epsilon=epsilon,
        alpha=alpha,
        min_annotators_per_item=min_annotators_per_item,
        min_items=min_items,
    )


def _what_is_missing(
    n_usable: int,
    skipped: list[tuple[Hashable, int]],
    min_annotators_per_item: int,
    min_items: int,
) -> tuple[str, str]:
    if n_usable == 0:
        return NO_ITEMS, (
            f"no item is judged by the judge and at least {min_annotators_per_item} "
            "annotators: the alt-test needs items that several annotators judged"
        )
    most = max((n for _, n in skipped), default=0)
    return TOO_FEW_ITEMS, (
        f"{n_usable} items are judged by the judge and at least {min_annotators_per_item} "
        f"annotators, but no annotator judged {min_items} of them (the most: {most}); "
        f"each annotator tested needs {min_items} such items"
    )
