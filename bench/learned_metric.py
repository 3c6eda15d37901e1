"""Benchmark of the learned (HEAP-style) metric on SummEval.

Run from the repository root::

    .venv/bin/python bench/learned_metric.py                 # every row
    .venv/bin/python bench/learned_metric.py --rows single   # the single-task row only

SummEval (``../shared/data/summeval.jsonl``) is imported into a throwaway SQLite
database under a temporary ``CONCORDIA_DATA_DIR`` (an empty feature cache, so the time
includes computing every feature). Rows:

* ``single``: ``train_metric --aspect coherence --setup single --mode head`` on the default
  backbone (SmolLM2-135M-Instruct; ``--layer`` blocks). Printed: the whole training
  time, the pairs, Base (the untrained head) vs trained test pairwise accuracy and
  sample-level Spearman. Then, on the same test documents, the trained metric run
  through the normal run path, GPTScore (default model, IST, src→hypo) and ROUGE-2: the
  report page's comparison. Targets: training ≤ 15 min, trained accuracy ≥ 0.63 and ≥
  Base + 0.10, Spearman above every other run.
* ``multi``: SummEval's four aspects together, tested on coherence.
* ``cross``: the other three aspects, tested on coherence (features shared with multi).
* ``ablation``: the single-task row again with the paper's pooling (the last token
  alone, ``--pooling last``) and with the default pooling on every block (30): why the
  defaults are ``last+answer`` and 12 blocks.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from io import StringIO
from pathlib import Path

from _common import SUMMEVAL, need_summeval, scratch_dir
from _django import setup_django


def train(
    setup: str, args: argparse.Namespace, *, pooling: str = "", layer: int | None = None
) -> tuple[dict[str, object], float]:
    from django.core.management import call_command

    out = StringIO()
    started = time.perf_counter()
    call_command(
        "train_metric",
        "--dataset",
        "summeval",
        "--aspect",
        "coherence",
        "--setup",
        setup,
        "--backbone",
        args.backbone,
        "--mode",
        "head",
        "--layer",
        str(layer or args.layer),
        "--seed",
        str(args.seed),
        "--format",
        "json",
        "--pooling",
        pooling,
        stdout=out,
    )
    return json.loads(out.getvalue().strip().splitlines()[-1]), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="single,multi,cross")
    parser.add_argument("--backbone", default="default")
    parser.add_argument("--layer", type=int, default=12, help="backbone blocks used (of 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--docs", type=int, default=0, help="only the first N documents (0: all)")
    args = parser.parse_args()
    need_summeval()
    import torch

    torch.set_num_threads(args.threads)
    with scratch_dir("concordia-learned-bench-") as tmp:
        setup_django(tmp)
        measure(args, tmp)


def measure(args: argparse.Namespace, tmp: Path) -> None:
    """Import SummEval (its first ``--docs`` documents), train and print each row asked."""
    from django.core.management import call_command

    from learned.models import TrainedMetric
    from learned.services.report import compare_on_test
    from studies.services.imports import ImportOptions, import_file

    source = SUMMEVAL
    if args.docs:
        lines = SUMMEVAL.read_text().splitlines()
        keep = list(dict.fromkeys(json.loads(line)["doc_id"] for line in lines))[: args.docs]
        source = tmp / "summeval-subset.jsonl"
        source.write_text("\n".join(li for li in lines if json.loads(li)["doc_id"] in keep) + "\n")
    import_file(
        source,
        ImportOptions(
            dataset="summeval", task="summarization", file_format="jsonl", file_name=SUMMEVAL.name
        ),
    )
    print(f"load average at start: {os.getloadavg()}")
    rows = args.rows.split(",")
    if "single" in rows:
        summary, seconds = train("single", args)
        print(
            f"single-task (coherence, head, {args.backbone}, {args.layer} blocks): "
            f"{seconds:.1f} s, pairs {summary['pairs']}, timings {summary['timings']}"
        )
        print(json.dumps(summary))
        job = TrainedMetric.objects.get(pk=summary["model"])
        for metric, extra in (
            ("learned", ["--model", str(job.pk)]),
            ("gptscore", ["--aspect", "coherence"]),
            ("rouge2", []),
        ):
            started = time.perf_counter()
            call_command(
                "run_metric",
                "--dataset",
                "summeval",
                "--metric",
                metric,
                *extra,
                "--test-docs-of",
                str(job.pk),
                stdout=StringIO(),
            )
            print(
                f"run {metric} on the {len(job.test_docs())} test documents: {time.perf_counter() - started:.1f} s"
            )
        t = summary["test"]
        print(f"\n{'':34} {'pairwise acc':>12} {'Spearman':>9}")
        print(
            f"{'Base (untrained head)':34} {t['base']['pairwise_accuracy']:>12.3f} {t['base']['spearman']:>9.3f}"
        )
        print(
            f"{'trained, single-task':34} {t['trained']['pairwise_accuracy']:>12.3f} {t['trained']['spearman']:>9.3f}"
        )
        for row in compare_on_test(job):
            print(
                f"{'run ' + row['run'].label[:30]:34} {row['pairwise_accuracy']:>12.3f} {row['spearman']:>9.3f}"
            )
        others = [r["spearman"] for r in compare_on_test(job) if not r["learned"]]
        trained_acc, base_acc = t["trained"]["pairwise_accuracy"], t["base"]["pairwise_accuracy"]
        print(
            f"\ntargets: time {seconds / 60:.1f} min ≤ 15: {seconds <= 900}; accuracy "
            f"{trained_acc:.3f} ≥ 0.63: {trained_acc >= 0.63}; ≥ Base + 0.10 ({base_acc + 0.10:.3f}): "
            f"{trained_acc >= base_acc + 0.10}; Spearman {t['trained']['spearman']:.3f} above every "
            f"other run ({max(others):.3f}): {t['trained']['spearman'] > max(others)}"
        )
    for setup in ("multi", "cross"):
        if setup in rows:
            summary, seconds = train(setup, args)
            t = summary["test"]
            print(
                f"{setup}-task → coherence: {seconds:.1f} s, pairs {summary['pairs']}, Base "
                f"{t['base']['pairwise_accuracy']:.3f} / {t['base']['spearman']:.3f}, trained "
                f"{t['trained']['pairwise_accuracy']:.3f} / {t['trained']['spearman']:.3f} "
                f"(pairwise accuracy / Spearman)"
            )
    if "ablation" in rows:
        for name, pooling, layer in (
            ("last token alone, 12 blocks", "last", None),
            ("last+answer, every block", "", 30),
        ):
            summary, seconds = train("single", args, pooling=pooling, layer=layer)
            t = summary["test"]
            print(
                f"single-task, {name}: {seconds:.1f} s, Base {t['base']['pairwise_accuracy']:.3f} / "
                f"{t['base']['spearman']:.3f}, trained {t['trained']['pairwise_accuracy']:.3f} / "
                f"{t['trained']['spearman']:.3f} (pairwise accuracy / Spearman)"
            )
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
