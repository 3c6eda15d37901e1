"""Reference values from mt-metrics-eval for ``tests/scoring/test_stats_wmt.py``.

mt-metrics-eval is not a dependency of Concordia (its code is not copied here): this
script runs it from a checkout of github.com/google-research/mt-metrics-eval on random
ragged inputs (missing human scores, ties, constant documents) and writes the inputs
with its outputs, which the tests compare Concordia's implementation against::

    python tests/data/make_mtme_reference.py --mtme ~/src/mt-metrics-eval \\
        --revision "$(git -C ~/src/mt-metrics-eval rev-parse HEAD)" > tests/data/mtme_reference.json

Its layout: ``num_sys`` systems × ``num_items`` documents, packed system by system, a
missing human score as null (mt-metrics-eval filters those; metric scores are complete).

It also measures how far mt-metrics-eval's SPA strays on one-decimal scores, where its
float32 sums round (``spa_rounding``: per shape, over random cases, the largest
difference from its own value on the same scores × 10, integers whose float32 sums are
exact, with the same p-values in exact arithmetic; printed to stderr and stored with
each shape's worst case), and records its ``TaskSetResults.AverageRanks`` on random rank
tables with weights that sum to 1 and weights that do not (``average_ranks``).
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from typing import Any

import numpy as np


def ragged_case(rng: np.random.Generator, num_sys: int, num_items: int) -> dict[str, Any]:
    gold = rng.integers(1, 6, size=(num_sys, num_items)).astype(float)
    metric = np.round(gold + rng.normal(0, 1.2, size=gold.shape), 1)
    metric[:, 0] = 2.5  # a document the metric cannot tell apart
    gold[:, 1] = 3.0  # a document the humans cannot tell apart
    missing = rng.random(gold.shape) < 0.2
    missing[:, 2] = True  # a document nobody judged
    missing[1:, 3] = True  # a document with one judgment
    gold_list: list[float | None] = [
        None if m else float(g) for g, m in zip(gold.ravel(), missing.ravel(), strict=True)
    ]
    return {"num_sys": num_sys, "gold": gold_list, "metric": [float(v) for v in metric.ravel()]}


def complete_case(rng: np.random.Generator, num_sys: int, num_items: int) -> dict[str, Any]:
    # Halves and small integers: float32 sums are exact, so mt-metrics-eval's float32
    # permutation sums and Concordia's float64 ones count the same ties.
    gold = rng.integers(1, 6, size=(num_sys, num_items)) + rng.integers(0, 3, size=(num_sys, 1))
    metric = (gold + rng.integers(-3, 4, size=gold.shape)) * 0.5
    return {
        "num_sys": num_sys,
        "gold": [float(v) for v in gold.ravel()],
        "metric": [float(v) for v in metric.ravel()],
    }


SPA_SHAPES = [(2, 2), (2, 3), (3, 5), (4, 10), (6, 25), (12, 60), (15, 500)]
SPA_CASES = 2000


def spa_rounding(stats: Any, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Per shape, SPA_CASES random cases of scores 0.0-10.0 in steps of 0.1: how often and
    how far mt-metrics-eval's SPA differs from its exact value, and the worst case."""
    out = []
    for num_sys, num_items in SPA_SHAPES:
        worst: dict[str, Any] = {}
        differences = []
        for _ in range(SPA_CASES):
            tenths = rng.integers(0, 101, size=(2, num_sys * num_items))
            gold, metric = (tenths / 10).tolist()
            rounded = float(stats.PairwiseConfidenceError(gold, metric, num_sys=num_sys)[0])
            exact = float(stats.PairwiseConfidenceError(*tenths.tolist(), num_sys=num_sys)[0])
            differences.append(abs(rounded - exact))
            if not worst or differences[-1] > worst["difference"]:
                worst = {
                    "num_sys": num_sys,
                    "num_items": num_items,
                    "gold": gold,
                    "metric": metric,
                    "float32": rounded,
                    "exact": exact,
                    "difference": differences[-1],
                }
        spread = np.array(differences)
        worst["share_differing"] = float(np.mean(spread > 1e-12))
        worst["median_difference"] = float(np.median(spread))
        worst["cases"] = SPA_CASES
        if num_sys * num_items > 1000:  # a WMT-sized set: its summary, not its 15,000 scores
            del worst["gold"], worst["metric"]
        print(
            f"SPA float32, {num_sys} systems x {num_items} documents, {SPA_CASES} cases: "
            f"{worst['share_differing']:.0%} differ, median {worst['median_difference']:.4f}, "
            f"max {worst['difference']:.4f}",
            file=sys.stderr,
        )
        out.append(worst)
    return out


def average_ranks_cases(tasks: Any, rng: np.random.Generator) -> list[dict[str, Any]]:
    """mt-metrics-eval's weighted average rank over random tables (a metric missing from
    a table is left out), with no weights, weights summing to 1, and weights that do not."""
    out = []
    for _ in range(10):
        n_tables, names = int(rng.integers(2, 6)), [f"m{k}" for k in range(int(rng.integers(3, 8)))]
        tables = []
        for _ in range(n_tables):
            kept = [m for m in names if rng.random() > 0.15]
            tables.append(
                {m: int(r) for m, r in zip(kept, rng.integers(1, 5, len(kept)), strict=True)}
            )
        raw = rng.uniform(0.5, 3, n_tables)
        for weights in (None, (raw / raw.sum()).tolist(), raw.tolist()):
            results = tasks.TaskSetResults(
                [types.SimpleNamespace(metrics=list(t), Rank=t.__getitem__) for t in tables]
            )
            out.append(
                {"tables": tables, "weights": weights, "expected": results.AverageRanks(weights)}
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mtme", required=True, help="root of an mt-metrics-eval checkout")
    parser.add_argument("--revision", default="unknown", help="the checkout's commit")
    args = parser.parse_args()
    sys.path.insert(0, args.mtme)
    # data.py (AssignRanks) imports these at load time; the functions used here never call them.
    for unused in ("apache_beam", "dacite"):
        sys.modules.setdefault(unused, types.ModuleType(unused))
    import scipy.stats
    from mt_metrics_eval import data, stats, tasks

    rng = np.random.default_rng(2025)
    cases = []
    shapes = [(3, 6), (4, 9), (5, 12), (7, 10), (6, 15), (8, 5), (20, 30)]
    for num_sys, num_items in shapes:
        case = ragged_case(rng, num_sys, num_items)
        corr = stats.Correlation(num_sys, case["gold"], case["metric"])
        out: dict[str, Any] = {}
        for eps in (0.0, 0.2, 1.0):
            for variant, name in (("acc23", "acc23"), ("23", "tau23")):
                out[f"{name}_item_eps{eps}"] = corr.KendallVariants("item", variant, eps)[0]
                out[f"{name}_none_eps{eps}"] = corr.KendallVariants("none", variant, eps)[0]
        micro = stats.AverageCorrelation(
            stats.KendallVariants, num_sys, "item", macro=False, variant="acc23"
        )
        out["acc23_item_micro"] = micro(case["gold"], case["metric"])[0]
        for average in ("item", "none"):
            for variant, name in (("acc23", "acc23"), ("23", "tau23")):
                value, eps, _ = stats.KendallWithTiesOpt(
                    case["gold"], case["metric"], variant, num_sys, average, sample_rate=1.0
                )
                out[f"{name}_opt_{average}"] = [value, eps]
        for thresh in (1.0, 2.0):
            out[f"like_item_micro_t{thresh}"] = corr.KendallLike("item", thresh)[0]
            out[f"like_none_t{thresh}"] = corr.KendallLike("none", thresh)[0]
            macro = stats.AverageCorrelation(stats.KendallLike, num_sys, "item", thresh=thresh)
            out[f"like_item_macro_t{thresh}"] = macro(case["gold"], case["metric"])[0]
        out["pdp_item"] = corr.Pearson("item", pdp=True)[0]
        out["pdp_none"] = corr.Pearson("none", pdp=True)[0]
        for fn, name in ((scipy.stats.pearsonr, "pearson"), (scipy.stats.kendalltau, "kendall")):
            micro = stats.AverageCorrelation(fn, num_sys, "item", macro=False)
            out[f"{name}_item_micro"] = micro(case["gold"], case["metric"])[0]
        case["expected"] = {
            k: float(v) if not isinstance(v, list) else [float(x) for x in v]
            for k, v in out.items()
        }
        cases.append(case)

    spa_cases = []
    for num_sys, num_items in [(2, 3), (4, 10), (6, 25), (9, 40), (12, 60)]:
        case = complete_case(rng, num_sys, num_items)
        case["expected"] = float(
            stats.PairwiseConfidenceError(case["gold"], case["metric"], num_sys=num_sys)[0]
        )
        spa_cases.append(case)

    williams = []
    for _ in range(20):
        n = int(rng.integers(5, 200))
        base = rng.normal(size=(n, 3))
        base[:, 1] += base[:, 0] * rng.uniform(0, 2)
        base[:, 2] += base[:, 0] * rng.uniform(0, 2)
        r = np.corrcoef(base.T)
        r12, r13, r23 = float(r[0, 1]), float(r[0, 2]), float(r[1, 2])
        williams.append(
            {
                "r12": r12,
                "r13": r13,
                "r23": r23,
                "n": n,
                "one_sided": float(stats.WilliamsTest(r12, r13, r23, n, one_sided=True)),
                "two_sided": float(stats.WilliamsTest(r12, r13, r23, n, one_sided=False)),
            }
        )

    ranks = []
    for _ in range(30):
        n = int(rng.integers(2, 10))
        sig = np.triu(rng.random((n, n)) ** 3, 1)
        for pval in (0.05, 0.2):
            ranks.append(
                {
                    "sig": sig.tolist(),
                    "pval": pval,
                    "ranks": [int(r) for r in data.AssignRanks(sig, pval)],
                }
            )

    # Drawn from a generator of their own, so the sections above stay as they were.
    extra = np.random.default_rng(2026)
    rounding = spa_rounding(stats, extra)
    average = average_ranks_cases(tasks, extra)
    json.dump(
        {
            "source": "google-research/mt-metrics-eval",
            "revision": args.revision,
            "cases": cases,
            "spa": spa_cases,
            "williams": williams,
            "assign_ranks": ranks,
            "spa_rounding": rounding,
            "average_ranks": average,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
