"""The report card on a label aspect beside the same card on a scale aspect, cold, as the
light worker computes it (issue 38: within 2×).

Run from the repository root::

    .venv/bin/python bench/label_card.py                      # 100,000 outputs, 3 annotators, 5 judges
    .venv/bin/python bench/label_card.py --outputs 20000 --repeat 1

A throwaway SQLite database holds one dataset of ``--outputs`` outputs in documents of
``--per-doc``, two aspects (a 1..5 scale, a pass/fail binary one), ``--annotators``
imported annotators answering both, and ``--judges`` imported judges per aspect (each
prompted for its aspect, so each card has ``--judges`` rows): noisy readings of one
latent quality, rounded to the scale or cut into fail/pass. The dataset's snapshot is
built once first (both cards read it); then, alternating, each card is computed as the
light worker does (``report_card.store.compute_and_cache``) after the cache is cleared
(no card, matrix or ceiling cached: cold), ``--repeat`` times. Printed: each card's
median (min-max) seconds and the label card's median over the scale one's.

Measured on this machine's kind (2 cores shared with other work, load average 7-14),
``--repeat 1``: 5,000 outputs, scale 29.29 s, binary 9.93 s (0.34×); 20,000 outputs,
scale 84.02 s, binary 19.75 s (0.24×); the default, 100,000 outputs × 3 annotators × 5
judges (load average 4-8): scale 228.06 s, binary 26.74 s (0.12×). The scale card's cost is its ordinal agreement and
its alternative-annotator test on numbers; the label card's statistics come from
per-document tables.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _common import REPO, median_range, print_table, scratch_dir
from _django import setup_django

sys.path.insert(0, str(REPO))

BATCH = 20_000


def build(args: argparse.Namespace) -> tuple[object, str, str]:
    from django.contrib.auth import get_user_model

    from studies.models import (
        Aspect,
        Dataset,
        Document,
        Judgment,
        MetricRun,
        MetricScore,
        Output,
        TaskKind,
    )

    rng = np.random.default_rng(args.seed)
    owner = get_user_model().objects.create_user("bench", password="x")
    task = TaskKind.objects.get_or_create(code="summarization", defaults={"name": "s"})[0]
    dataset = Dataset.objects.create(name="label-card", task=task, owner=owner)
    scale = Aspect.objects.create(code="BSCALE", name="Bench scale", scale_min=1, scale_max=5)
    binary = Aspect(
        code="BPASS",
        name="Bench pass",
        kind="binary",
        labels=["fail", "pass"],
        positive="pass",
        definition="Does it pass?",
    )
    binary.full_clean()
    binary.save()
    n_docs = -(-args.outputs // args.per_doc)
    docs = Document.objects.bulk_create(
        Document(dataset=dataset, doc_key=f"d{d}", source=f"Source {d}.") for d in range(n_docs)
    )
    outputs = []
    for start in range(0, args.outputs, BATCH):
        outputs += Output.objects.bulk_create(
            Output(document=docs[k // args.per_doc], system_id=f"s{k % args.per_doc}", text=f"o{k}")
            for k in range(start, min(start + BATCH, args.outputs))
        )
    ids = [o.pk for o in outputs]
    quality = rng.normal(size=len(ids))
    answers = {
        scale: lambda noise: np.clip(np.round(3 + quality + noise), 1, 5),
        binary: lambda noise: (quality + noise > 0).astype(float),
    }
    for aspect, answer in answers.items():
        for r in range(args.annotators):
            values = answer(rng.normal(0, 0.6, len(ids)))
            for start in range(0, len(ids), BATCH):
                Judgment.objects.bulk_create(
                    Judgment(
                        output_id=pk,
                        aspect=aspect,
                        value=float(v),
                        import_file="bench.jsonl",
                        rater=f"a{r + 1}",
                    )
                    for pk, v in zip(
                        ids[start : start + BATCH], values[start : start + BATCH], strict=True
                    )
                )
        for j in range(args.judges):
            run = MetricRun.objects.create(
                dataset=dataset,
                metric=f"judge{j}",
                label=f"judge {j} {aspect.code}",
                kind=MetricRun.Kind.IMPORTED,
                status=MetricRun.Status.SUCCEEDED,
                config={"aspect": aspect.code},
            )
            values = answer(rng.normal(0, 0.5 + 0.2 * j, len(ids)))
            for start in range(0, len(ids), BATCH):
                MetricScore.objects.bulk_create(
                    MetricScore(run=run, output_id=pk, value=float(v))
                    for pk, v in zip(
                        ids[start : start + BATCH], values[start : start + BATCH], strict=True
                    )
                )
    return Dataset.objects.get(pk=dataset.pk), scale.code, binary.code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--judges", type=int, default=5)
    parser.add_argument("--per-doc", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with scratch_dir("label-card") as tmp:
        setup_django(tmp)
        from django.core.cache import cache

        from studies.services.analysis.dashboards import frame_for
        from studies.services.analysis.report_card import CardParams
        from studies.services.analysis.report_card.store import compute_and_cache

        started = time.perf_counter()
        dataset, scale, binary = build(args)
        built = time.perf_counter() - started
        started = time.perf_counter()
        frame_for(dataset, CardParams().matrix_params)  # the snapshot, shared by both
        snapshot = time.perf_counter() - started
        print(
            f"{args.outputs:,} outputs × {args.annotators} annotators × {args.judges} judges "
            f"per aspect; built in {built:.1f} s, snapshot {snapshot:.1f} s; "
            f"{args.repeat} run(s) each, cold"
        )
        seconds: dict[str, list[float]] = {"scale (1..5)": [], "binary (fail/pass)": []}
        rows: dict[str, int] = {}
        for _ in range(args.repeat):
            for name, code in zip(seconds, (scale, binary), strict=True):
                cache.clear()
                started = time.perf_counter()
                card = compute_and_cache(dataset, CardParams(aspects=(code,)))
                seconds[name].append(time.perf_counter() - started)
                rows[name] = len(card["rows"])
        baseline = statistics.median(seconds["scale (1..5)"])
        print_table(
            ["card", "rows", "seconds: median (min-max)", "over scale"],
            [
                [
                    name,
                    str(rows[name]),
                    median_range(times, ".2f"),
                    f"{statistics.median(times) / baseline:.2f}×",
                ]
                for name, times in seconds.items()
            ],
            left=1,
        )


if __name__ == "__main__":
    main()
