"""A dataset file with three annotators per output on coherence and three judges as
metric columns (no model), for the tuning tests, and the study made of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from studies.models import Aspect, MetricRun, Study
from studies.services.imports import ImportOptions, import_file

N_DOCS, N_SYSTEMS = 30, 4
JUDGES = ("judge_a", "judge_b", "judge_c")


def lines(seed: int = 11) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for d in range(N_DOCS):
        for s in range(N_SYSTEMS):
            quality = rng.normal() + 0.4 * s
            raters = np.clip(np.round(quality + 3 + rng.normal(0, 0.6, 3)), 1, 5)
            out.append(
                {
                    "doc_id": f"doc{d:02d}",
                    "system_id": f"sys{s}",
                    "source": f"Source {d}.",
                    "references": [f"Reference {d}."],
                    "output": f"Output {s} of {d}.",
                    "annotators": {"coherence": {f"r{k}": float(v) for k, v in enumerate(raters)}},
                    "metrics": {
                        # a good judge on a squashed scale, a noisy one, a coarse one
                        "judge_a": float(np.round(np.tanh(quality / 2) + 3, 3)),
                        "judge_b": float(np.clip(np.round(quality + 3 + rng.normal(0, 1.2)), 1, 5)),
                        "judge_c": float(np.clip(np.round(quality + 3 + rng.normal(0, 0.8)), 1, 5)),
                    },
                }
            )
    return out


def judged_study(owner: Any, folder: Path) -> Study:
    """The file imported as the dataset ``judged`` and a study of it on coherence."""
    path = folder / "judged.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines()) + "\n", encoding="utf-8")
    import_file(
        path,
        ImportOptions(
            dataset="judged",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=owner,
        ),
    )
    found = Study.objects.create(
        name="tuning",
        dataset_id=MetricRun.objects.get(label="judge_a").dataset_id,
        owner=owner,
    )
    found.aspects.add(Aspect.objects.get(code="COH"))
    return found
