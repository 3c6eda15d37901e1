"""Reference values from the alt-test's authors for ``tests/scoring/test_stats_alttest.py``.

The reference implementation of the alternative-annotator test (Calderon, Reichart & Dror,
ACL 2025; github.com/nitaytech/AltTest) lives in a notebook, ``alt_test_example.ipynb``.
It is not a dependency of Concordia and none of its code is copied here: this script
reads the notebook from a checkout of that repository, runs its definitions (the first
two code cells: imports, then ``alt_test`` and its helpers; numpy and scipy only) and
records, besides the two numbers ``alt_test`` returns (the winning rate and the average
advantage probability), what it computes on the way, by wrapping its ``ttest`` and
``by_procedure`` helpers: each tested annotator's differences of indicators (from which
its p-value and its advantage probability, the share of differences ≤ 0, follow) and
the annotators the Benjamini–Yekutieli procedure rejects. Its "Skipping annotator"
messages name the annotators with too few items::

    git -C ~/src/AltTest rev-parse HEAD   # the revision the JSON records
    python tests/data/make_alttest_reference.py --checkout ~/src/AltTest \\
        --revision "$(git -C ~/src/AltTest rev-parse HEAD)" > tests/data/alttest_reference.json

(only the notebook and ``data/{mtbench,wax,cebab_stars}/*_annotations.json`` are read).

The cases: three of the authors' example datasets with the notebook's settings (MT-Bench
and WAX with ``accuracy``, CEBaB stars with ``neg_rmse``; item ids and WAX's labels are
replaced by short codes, which changes nothing for these scores), and random data
(categories and real numbers; sparse and full designs; annotators of mixed quality, so
that the procedure rejects some and not others). Each case stores its inputs with the
outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

NOTEBOOK = "alt_test_example.ipynb"


def load_reference(checkout: Path) -> dict[str, Any]:
    """The namespace of the notebook's first two code cells, with recording wrappers."""
    cells = json.loads((checkout / NOTEBOOK).read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"][:2]
    namespace: dict[str, Any] = {}
    for source in code:
        exec(compile(source, f"{NOTEBOOK}", "exec"), namespace)  # the authors' code, run as is
    ttest, by_procedure = namespace["ttest"], namespace["by_procedure"]

    def recording_ttest(indicators: list[int], epsilon: float) -> float:
        p = ttest(indicators, epsilon)
        namespace["recorded"]["differences"].append(list(indicators))
        namespace["recorded"]["p_values"].append(float(p))
        return p

    def recording_by(p_values: list[float], q: float) -> list[int]:
        rejected = by_procedure(p_values, q)
        namespace["recorded"]["rejected"] = [int(i) for i in rejected]
        return list(rejected)

    namespace["ttest"], namespace["by_procedure"] = recording_ttest, recording_by
    return namespace


def run_reference(
    namespace: dict[str, Any],
    judge: dict[str, Any],
    annotations: dict[str, dict[str, Any]],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The reference's outputs on one case."""
    namespace["recorded"] = {"differences": [], "p_values": [], "rejected": None}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        winning_rate, advantage = namespace["alt_test"](
            judge,
            annotations,
            settings["metric"],
            epsilon=settings["epsilon"],
            q_fdr=settings["alpha"],
            min_humans_per_instance=settings["min_annotators_per_item"],
            min_instances_per_human=settings["min_items"],
        )
    skipped = {
        name: int(n)
        for name, n in re.findall(
            r"Skipping annotator (\S+) with only (\d+) instances", printed.getvalue()
        )
    }
    tested = [a for a in annotations if a not in skipped]
    differences = namespace["recorded"]["differences"]
    p_values = namespace["recorded"]["p_values"]
    rho = [float(np.mean(np.asarray(d) <= 0)) for d in differences]
    assert len(tested) == len(differences)
    assert float(np.mean(rho)) == advantage, "advantage probabilities do not add up"
    rejected = set(namespace["recorded"]["rejected"])
    return {
        "winning_rate": winning_rate,
        "advantage_probability": advantage,
        "annotators": tested,
        "n_items": [len(d) for d in differences],
        "p_values": p_values,
        "rho_judge": rho,
        "judge_wins": [k in rejected for k in range(len(tested))],
        "skipped": skipped,
    }


def example_dataset(checkout: Path, name: str, judges: list[str]) -> dict[str, Any]:
    """One of the authors' datasets, item ids (and string labels) replaced by codes."""
    folder = checkout / "data" / name
    humans = json.loads((folder / "human_annotations.json").read_text())
    llms = json.loads((folder / "llm_annotations.json").read_text())
    items = sorted({i for answers in humans.values() for i in answers} | set(llms[judges[0]]))
    item_code = {item: str(k) for k, item in enumerate(items)}
    values = {v for answers in humans.values() for v in answers.values()}
    values |= {v for j in judges for v in llms[j].values()}
    strings = all(isinstance(v, str) for v in values)
    label_code = {v: k for k, v in enumerate(sorted(values))} if strings else None

    def code(answers: dict[str, Any]) -> dict[str, Any]:
        return {
            item_code[i]: (label_code[v] if label_code else v)
            for i, v in answers.items()
            if i in item_code
        }

    return {
        "annotations": {h: code(answers) for h, answers in humans.items()},
        "judges": {j: code(llms[j]) for j in judges},
    }


def random_dataset(
    seed: int,
    n_items: int,
    quality: list[float],
    per_item: tuple[int, int],
    judge_quality: list[float],
    n_labels: int | None,
) -> dict[str, Any]:
    """Annotators of the given qualities on random items: with ``n_labels``, an answer is
    the true label with probability ``quality`` and a random label otherwise; without,
    it is the true value plus normal noise of standard deviation ``1 − quality``."""
    rng = np.random.default_rng(seed)
    n_annotators = len(quality)
    truth = rng.integers(0, n_labels, n_items) if n_labels else rng.normal(0, 1, n_items)

    def answer(q: float, t: Any) -> Any:
        if n_labels:
            return int(t) if rng.random() < q else int(rng.integers(0, n_labels))
        return float(t + rng.normal(0, 1 - q))

    annotations: dict[str, dict[str, Any]] = {f"a{k}": {} for k in range(n_annotators)}
    for i in range(n_items):
        chosen = rng.choice(n_annotators, rng.integers(per_item[0], per_item[1] + 1), replace=False)
        for k in sorted(chosen):
            annotations[f"a{k}"][str(i)] = answer(quality[k], truth[i])
    judges = {
        f"judge{j}": {str(i): answer(q, truth[i]) for i in range(n_items) if rng.random() < 0.95}
        for j, q in enumerate(judge_quality)
    }
    return {"annotations": annotations, "judges": judges}


def build(checkout: Path, revision: str) -> dict[str, Any]:
    namespace = load_reference(checkout)
    datasets = {
        "mtbench": example_dataset(checkout, "mtbench", ["gpt-4o", "gemini_flash", "llama-31"]),
        "wax": example_dataset(checkout, "wax", ["gpt-4o", "gemini_flash"]),
        "cebab_stars": example_dataset(checkout, "cebab_stars", ["gpt-4o", "mistral-v03"]),
        "random_categories": random_dataset(
            1, 90, [0.8, 0.7, 0.6, 0.75, 0.5, 0.65, 0.3], (2, 5), [0.85, 0.6, 0.3], 4
        ),
        "random_many": random_dataset(
            2,
            120,
            [0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.7, 0.55, 0.65, 0.75, 0.45],
            (3, 6),
            [0.72, 0.8],
            5,
        ),
        "random_numbers": random_dataset(
            3, 70, [0.6, 0.5, 0.7, 0.4, 0.55, 0.3, 0.65], (3, 7), [0.62, 0.2], None
        ),
    }
    grid = [
        ("mtbench", "accuracy", [0.2], [2]),
        ("wax", "accuracy", [0.1, 0.2], [2, 3]),
        ("cebab_stars", "neg_rmse", [0.1], [2, 3]),
        ("random_categories", "accuracy", [0.0, 0.1, 0.2], [2, 3]),
        ("random_many", "accuracy", [0.05, 0.15], [3]),
        ("random_numbers", "neg_rmse", [0.0, 0.15, 0.3], [2, 3]),
    ]
    cases = []
    for dataset, metric, epsilons, minimums in grid:
        data = datasets[dataset]
        for judge in data["judges"]:
            for epsilon in epsilons:
                for minimum in minimums:
                    settings = {
                        "metric": metric,
                        "epsilon": epsilon,
                        "alpha": 0.05,
                        "min_annotators_per_item": minimum,
                        "min_items": 30,
                    }
                    expected = run_reference(
                        namespace, data["judges"][judge], data["annotations"], settings
                    )
                    cases.append(
                        {"dataset": dataset, "judge": judge, **settings, "expected": expected}
                    )
    return {
        "reference": {
            "repository": "github.com/nitaytech/AltTest",
            "revision": revision,
            "code": f"{NOTEBOOK}, code cells 1-2 (alt_test, by_procedure, ttest, accuracy, neg_rmse)",
        },
        "datasets": datasets,
        "cases": cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkout", type=Path, required=True, help="a checkout of nitaytech/AltTest"
    )
    parser.add_argument("--revision", required=True, help="its commit (git rev-parse HEAD)")
    args = parser.parse_args()
    json.dump(build(args.checkout, args.revision), sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
