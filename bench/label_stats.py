"""The label statistics at scale, beside the scale aspect's agreement on the same sizes.

Run from the repository root::

    .venv/bin/python bench/label_stats.py                       # 100,000 items, 3 annotators
    .venv/bin/python bench/label_stats.py --items 20000 --judges 5 --repeat 1

Simulated study: ``--items`` outputs in documents of ``--per-doc``, ``--annotators``
answers each, ``--judges`` judges; one bootstrap plan of ``--resamples`` document draws
shared by everything (as the report card shares it). Timed, ``--repeat`` times each:

* **scale** (the baseline): :func:`scoring.stats.judge_agreement.pointwise_agreement` on
  a 1..5 scale for each judge, the annotators' own intervals with the first judge only
  (as the card computes them once per aspect);
* **binary** (pass/fail): :func:`scoring.stats.labels.human_ceiling` and
  :func:`scoring.stats.labels.annotator_reliability` (Fleiss' κ and nominal α; no
  per-pair κ, which a campaign's page shows, not the card) once, then for each judge
  :func:`scoring.stats.labels.label_agreement` (confusion table, accuracy, κ, MCC,
  F1s, TPR/TNR, base rates), :func:`scoring.stats.prevalence.prevalence` (Rogan–Gladen,
  PPI++) and :func:`scoring.stats.calibration.calibration` (ECE, MCE, Brier) of its
  label distributions;
* **categorical** (four labels): the same without prevalence.

Printed: the median (min-max) seconds of each, and each label card's median over the
scale one's (the issue's target: within 2×). Intervals studentized (the card's default).
Measured on this machine's kind (2 cores, load average 7–8 from other work), defaults:
scale 34.25 s (32.58-44.25), binary 4.79 s (0.14×), categorical 16.61 s (0.49×);
``--judges 5 --repeat 1``: 111.4 s, 30.9 s (0.28×), 76.1 s (0.68×).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from _common import REPO, median_range, print_table, timed

sys.path.insert(0, str(REPO))

from scoring.stats.calibration import calibration  # noqa: E402
from scoring.stats.draws import Resamples, Unit, draw_resamples  # noqa: E402
from scoring.stats.judge_agreement import pointwise_agreement  # noqa: E402
from scoring.stats.label_tables import LabelSet  # noqa: E402
from scoring.stats.labels import (  # noqa: E402
    annotator_reliability,
    human_ceiling,
    label_agreement,
)
from scoring.stats.prevalence import prevalence  # noqa: E402
from scoring.stats.ranking import Groups  # noqa: E402

Study = tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]  # humans, judges, distributions


def likert_study(rng: np.random.Generator, items: int, annotators: int, judges: int) -> Study:
    quality = rng.normal(size=items)
    humans = np.clip(np.round(3 + quality + rng.normal(0, 0.7, (annotators, items))), 1, 5)
    scores = [
        np.clip(np.round(3 + quality + rng.normal(0, 0.5 + 0.2 * j, items)), 1, 5)
        for j in range(judges)
    ]
    return humans, scores, []


def label_study(
    rng: np.random.Generator, items: int, annotators: int, judges: int, q: int
) -> Study:
    """Label codes: a latent quality cut into q labels, the annotators and judges noisy
    cuts of it; each judge's distribution a softmax around its own noisy reading."""
    quality = rng.normal(size=items)
    cuts = np.quantile(quality, np.linspace(0, 1, q + 1)[1:-1])
    humans = np.searchsorted(cuts, quality + rng.normal(0, 0.4, (annotators, items))).astype(float)
    answers, distributions = [], []
    for j in range(judges):
        reading = quality + rng.normal(0, 0.5 + 0.2 * j, items)
        logits = -((reading[:, None] - np.linspace(-1.5, 1.5, q)[None, :]) ** 2)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        distributions.append(p)
        answers.append(p.argmax(axis=1).astype(float))
    return humans, answers, distributions


def scale_card(study: Study, docs: Groups, plan: Resamples) -> Callable[[], object]:
    humans, judges, _ = study

    def run() -> object:
        return [
            pointwise_agreement(
                j, humans, docs, [1, 2, 3, 4, 5], plan=plan, annotator_intervals=k == 0
            )
            for k, j in enumerate(judges)
        ]

    return run


def label_card(
    study: Study, docs: Groups, plan: Resamples, labels: LabelSet
) -> Callable[[], object]:
    humans, judges, distributions = study

    def run() -> object:
        out: list[object] = [
            human_ceiling(humans, docs, labels, plan=plan),
            annotator_reliability(humans, docs, labels, plan=plan, pairs=()),
        ]
        for judge, dist in zip(judges, distributions, strict=True):
            out.append(
                label_agreement(judge, humans, docs, labels, plan=plan, annotator_intervals=False)
            )
            if labels.is_binary:
                out.append(
                    prevalence(judge, humans, docs, labels, probability=dist[:, 1], plan=plan)
                )
            out.append(calibration(dist, humans, docs, labels, plan=plan))
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--per-doc", type=int, default=10)
    parser.add_argument("--judges", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    docs = Groups.from_keys(np.arange(args.items) // args.per_doc)
    started = time.perf_counter()
    plan = draw_resamples(rng, docs, unit=Unit.DOCUMENTS, resamples=args.resamples)
    assert plan.doc_counts is not None
    drawn = time.perf_counter() - started
    print(
        f"{args.items:,} items × {args.annotators} annotators, {docs.n_groups:,} documents, "
        f"{args.judges} judge(s), {args.resamples} resamples (drawn once: {drawn:.2f} s), "
        f"{args.repeat} runs each"
    )
    n, a, j = args.items, args.annotators, args.judges
    cards = {
        "scale (pointwise_agreement, 1..5)": scale_card(likert_study(rng, n, a, j), docs, plan),
        "binary (labels, prevalence, calibration)": label_card(
            label_study(rng, n, a, j, 2), docs, plan, LabelSet.binary(0, 1)
        ),
        "categorical, 4 labels (labels, calibration)": label_card(
            label_study(rng, n, a, j, 4), docs, plan, LabelSet(("a", "b", "c", "d"))
        ),
    }
    seconds = {name: timed(run, args.repeat)[0] for name, run in cards.items()}
    baseline = statistics.median(next(iter(seconds.values())))
    rows = [
        [name, median_range(times, ".2f"), f"{statistics.median(times) / baseline:.2f}×"]
        for name, times in seconds.items()
    ]
    print_table(["card", "seconds: median (min-max)", "over scale"], rows, left=1)


if __name__ == "__main__":
    main()
