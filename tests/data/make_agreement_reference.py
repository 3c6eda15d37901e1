"""Reference values of Cohen's κ and Gwet's AC1 for ``tests/scoring/test_stats_judge_agreement.py``.

Neither scikit-learn nor irrCAC is a dependency of Concordia: this script, run in a
throwaway environment that has them (``pip install scikit-learn irrCAC``), draws random
pairs of answers and writes them with ``sklearn.metrics.cohen_kappa_score`` (unweighted,
linear and quadratic weights, ``labels`` the whole scale) and irrCAC's Gwet AC1 (the
Python port of Gwet's R package, ``irrCAC.raw.CAC(...).gwet()`` with ``categories`` the
whole scale, unrounded)::

    python tests/data/make_agreement_reference.py > tests/data/agreement_reference.json
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from typing import Any

import numpy as np
import pandas as pd
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score


def case(rng: np.random.Generator) -> dict[str, Any]:
    q = int(rng.integers(2, 8))
    n = int(rng.integers(8, 150))
    first = rng.integers(0, q, n)
    # the second rater agrees often, otherwise a neighbour or anything
    second = np.where(
        rng.random(n) < 0.5,
        first,
        np.clip(first + rng.integers(-2, 3, n), 0, q - 1),
    )
    labels = list(range(q))
    kappa = {
        name: float(cohen_kappa_score(first, second, labels=labels, weights=weights))
        for name, weights in (("identity", None), ("linear", "linear"), ("quadratic", "quadratic"))
    }
    frame = pd.DataFrame({"first": first, "second": second})
    ac1 = CAC(frame, categories=labels, digits=17).gwet()["est"]["coefficient_value"]
    return {
        "q": q,
        "first": first.tolist(),
        "second": second.tolist(),
        "kappa": kappa,
        "ac1": float(ac1),
    }


def main() -> None:
    rng = np.random.default_rng(2025)
    out = {
        "versions": {"scikit-learn": version("scikit-learn"), "irrCAC": version("irrCAC")},
        "cases": [case(rng) for _ in range(30)],
    }
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
