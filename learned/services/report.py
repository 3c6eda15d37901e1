"""What the pages show about a trained metric: the curves as a Vega-Lite chart, and its test
documents scored by every run of the dataset (the paper's Table 2, with the others)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from learned.models import TrainedMetric
from scoring.learned.evaluate import pairwise_accuracy, sample_spearman
from scoring.learned.pairs import likert_pairs
from studies.services.analysis import charts
from studies.services.analysis.frames import load_frame


def curve_points(curves: list[dict[str, float]]) -> dict[str, Any]:
    """The loss and validation-accuracy curves as a Vega-Lite chart (one point per epoch),
    with the number of epochs and the loss's range for the caption."""
    if not curves:
        return {"epochs": 0, "chart": None}
    losses = [c["loss"] for c in curves]
    return {
        "epochs": len(curves),
        "loss_range": (min(losses), max(losses)),
        "chart": charts.training_curves(curves),
    }


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
    pairs, _ = likert_pairs(
        "test",
        docs,
        keys,
        [float(v) for v in human],
        margin=float(trained.config.get("margin", 0.5)),
    )
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
        out.append(
            {
                "run": run,
                "learned": run.metric == "learned",
                "spearman": sample_spearman(
                    list(values[valid]),
                    list(human[valid]),
                    [d for d, ok in zip(docs, valid, strict=True) if ok],
                ),
                "pairwise_accuracy": pairwise_accuracy(scores, pairs),
                "outputs": int(valid.sum()),
            }
        )
    return sorted(out, key=lambda r: -(r["spearman"] if not math.isnan(r["spearman"]) else -2))
