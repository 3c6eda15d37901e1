"""Reference values from the MACE tool for ``tests/scoring/test_stats_competence.py``.

The MACE tool (Hovy et al. 2013; github.com/dirkhovy/MACE) is not a dependency of
Concordia and none of its code is copied here: this script runs its ``MACE.jar`` (Java)
on simulated answers and writes the inputs with its outputs, which the tests compare
Concordia's :func:`scoring.stats.competence.mace` against::

    python tests/data/make_mace_reference.py --mace ~/src/MACE \\
        --revision "$(git -C ~/src/MACE rev-parse HEAD)" > tests/data/mace_reference.json

Each case is the tool's input, one CSV line per item and one column per annotator (an
empty cell: no answer), and per run (``vb``: its default, variational Bayes; ``em``: its
``--em``; ``vb_alpha2``: variational Bayes with ``--alpha 2``) the competence it wrote
for each annotator. The tool's random starts are not seeded, so it runs with many
restarts and iterations to reach the best optimum it can.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

RUNS = {"vb": [], "em": ["--em"], "vb_alpha2": ["--alpha", "2"]}
RESTARTS, ITERATIONS = 20, 1000


def simulate(
    rng: np.random.Generator,
    competences: list[float],
    n_items: int,
    per_item: tuple[int, int],
    n_labels: int,
    habit: float = 0.5,
) -> list[str]:
    """CSV lines: each item answered by ``per_item`` annotators (at random); an annotator
    answers the item's true label with its competence, else a label drawn from its own
    Dirichlet(``habit``) habit."""
    n_annotators = len(competences)
    habits = rng.dirichlet(np.full(n_labels, habit), n_annotators)
    lines = []
    for _ in range(n_items):
        truth = int(rng.integers(n_labels))
        row = [""] * n_annotators
        for j in rng.choice(n_annotators, int(rng.integers(*per_item)), replace=False):
            knows = rng.random() < competences[j]
            row[j] = str(truth if knows else int(rng.choice(n_labels, p=habits[j])))
        lines.append(",".join(row))
    return lines


def cases(rng: np.random.Generator) -> dict[str, list[str]]:
    found = {
        "spread": simulate(rng, list(np.linspace(0.2, 0.95, 8)), 150, (3, 5), 5),
        "binary": simulate(rng, [0.9, 0.8, 0.7, 0.6, 0.5, 0.3], 120, (3, 6), 2),
    }
    # Four good annotators on every item, and a fifth who answers 2 whatever the item.
    good = simulate(rng, [0.9, 0.85, 0.8, 0.75], 100, (4, 5), 4)
    found["spammer"] = [line + ",2" for line in good]
    # Three annotators on every one of 40 items, and a fourth who answered the first
    # four only, as the first did: where the priors matter.
    few = simulate(rng, [0.9, 0.8, 0.7], 40, (3, 4), 3)
    found["few_answers"] = [
        line + "," + (line.split(",")[0] if k < 4 else "") for k, line in enumerate(few)
    ]
    return found


def run_tool(jar: Path, lines: list[str], options: list[str]) -> list[float]:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "answers.csv"
        data.write_text("".join(line + "\n" for line in lines))
        prefix = str(Path(folder) / "out")
        subprocess.run(
            [
                "java",
                "-jar",
                str(jar),
                "--prefix",
                prefix,
                "--restarts",
                str(RESTARTS),
                "--iterations",
                str(ITERATIONS),
                *options,
                str(data),
            ],
            check=True,
            capture_output=True,
        )
        return [float(v) for v in Path(prefix + ".competence").read_text().split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mace", required=True, help="root of a MACE checkout (has MACE.jar)")
    parser.add_argument("--revision", default="unknown", help="the checkout's commit")
    args = parser.parse_args()
    jar = Path(args.mace) / "MACE.jar"
    out: list[dict[str, Any]] = []
    for name, lines in cases(np.random.default_rng(2026)).items():
        runs = {run: run_tool(jar, lines, options) for run, options in RUNS.items()}
        out.append({"name": name, "csv": lines, "competence": runs})
    json.dump(
        {
            "source": "dirkhovy/MACE (MACE.jar)",
            "revision": args.revision,
            "restarts": RESTARTS,
            "iterations": ITERATIONS,
            "cases": out,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
