"""What the pages show about a trained metric: the curve as SVG points, and its test
documents scored by every run of the dataset (the paper's Table 2, with the others)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from learned.models import TrainedMetric
from scoring.learned.evaluate import pairwise_accuracy, sample_spearman
from scoring.learned.pairs import likert_pairs
from studies.services.frames import load_frame


def curve_points(
    curves: list[dict[str, float]], *, width: int = 320, height: int = 120
) -> dict[str, Any]:
    """Polyline points for the loss (scaled to its range) and the validation accuracy
    (0 to 1), one point per epoch."""
    if not curves:
        return {"loss": "", "accuracy": "", "width": width, "height": height, "epochs": 0}
    losses = [c["loss"] for c in curves]
    low, high = min(losses), max(losses)
    span = (high - low) or 1.0
    step = width / max(len(curves) - 1, 1)

    def y(value: float) -> float:
        return round(height - value * height, 1)

    loss = " ".join(f"{round(i * step, 1)},{y((v - low) / span)}" for i, v in enumerate(losses))
    accuracy = " ".join(
        f"{round(i * step, 1)},{y(c['validation_accuracy'])}"
        for i, c in enumerate(curves)
        if not math.isnan(c["validation_accuracy"])
    )
    return {"loss": loss, "accuracy": accuracy, "width": width, "height": height,
            "epochs": len(curves), "loss_range": (low, high)}  # fmt: skip


def compare_on_test(trained: TrainedMetric) -> list[dict[str, Any]]:
    """Every scored run of the target dataset on the trained metric's test documents:
    sample-level Spearman against the target aspect and pairwise accuracy on the test
    pairs (Likert pairs with the job's margin). Best first."""
    dataset = trained.dataset
    frame = load_frame(dataset)
    column = next((i for i, a in enumerate(frame.aspects) if a.pk == trained.aspect_id), None)
    if column is None:
        return []
    test = set(trained.test_docs(dataset.name))
    rows = np.array([frame.doc_keys[c] in test for c in frame.doc_codes])
    human = frame.human[rows, column]
    docs = [frame.doc_keys[c] for c in frame.doc_codes[rows]]
    keys = [int(k) for k in frame.output_ids[rows]]
    pairs, _ = likert_pairs("test", docs, keys, [float(v) for v in human],
                            margin=float(trained.config.get("margin", 0.5)))  # fmt: skip
    out = []
    for j, run in enumerate(frame.runs):
        values = frame.metrics[rows, j]
        if np.isnan(values).all():
            continue
        scores = {
            k: (float(v) if not np.isnan(v) else -math.inf)
            for k, v in zip(keys, values, strict=True)
        }
        valid = ~np.isnan(values) & ~np.isnan(human)
        out.append({
            "run": run, "learned": run.metric == "learned",
            "spearman": sample_spearman(list(values[valid]), list(human[valid]),
                                        [d for d, ok in zip(docs, valid, strict=True) if ok]),
            "pairwise_accuracy": pairwise_accuracy(scores, pairs), "outputs": int(valid.sum()),
        })  # fmt: skip
    return sorted(out, key=lambda r: -(r["spearman"] if not math.isnan(r["spearman"]) else -2))
