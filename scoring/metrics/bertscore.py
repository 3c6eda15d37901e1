"""BERTScore-style similarity (Zhang et al. 2019): greedy matching of contextual token
embeddings by cosine similarity, with any Hugging Face encoder.

Precision averages, over the output's tokens, the best cosine with a reference token;
recall does the same over the reference's tokens; F is their harmonic mean. No idf
weighting and no baseline rescaling (both optional in the original). Against several
references the best F is taken by default (the ``bert-score`` package's convention) or
the mean. Each distinct text of a call is embedded once: a document's references are
shared by all its outputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from scoring.metrics.base import Item, ScoreResult

AGGREGATIONS = ("max", "mean")


class Encoder(Protocol):
    def embed(self, texts: Sequence[str]) -> Sequence[Any]: ...


def pair(hyp: Any, ref: Any) -> tuple[float, float, float]:
    """(precision, recall, F) between two :class:`~scoring.lm.encoder.Embedded` texts."""
    if hyp.vectors.shape[0] == 0 or ref.vectors.shape[0] == 0:
        return 0.0, 0.0, 0.0
    sim = hyp.vectors @ ref.vectors.T
    precision = float(sim.max(dim=1).values.mean())
    recall = float(sim.max(dim=0).values.mean())
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f


def score(encoder: Encoder, items: Sequence[Item], aggregation: str = "max") -> list[ScoreResult]:
    """One result per item: F against its references, aggregated."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"reference aggregation must be one of {AGGREGATIONS}")
    texts = sorted({t for item in items for t in (item.hypothesis, *item.references)})
    embedded = dict(zip(texts, encoder.embed(texts), strict=True))
    out = []
    for item in items:
        if not item.references:
            out.append(ScoreResult(item.key, None, error="the document has no reference"))
            continue
        hyp = embedded[item.hypothesis]
        scores = [pair(hyp, embedded[ref]) for ref in item.references]
        f = [s[2] for s in scores]
        value = max(f) if aggregation == "max" else math.fsum(f) / len(f)
        truncated = hyp.truncated or any(embedded[r].truncated for r in item.references)
        details = {
            "aggregation": aggregation,
            "precision": [s[0] for s in scores],
            "recall": [s[1] for s in scores],
            "f": f,
            "truncated": truncated,
        }
        out.append(ScoreResult(item.key, value, details))
    return out
