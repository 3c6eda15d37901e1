"""Sentence-level BLEU and chrF through ``sacrebleu``, against all of a document's
references at once (sacrebleu's own multi-reference definitions: BLEU clips n-gram
counts by the most generous reference and takes the closest reference length; chrF
keeps the best-matching reference). Scores are on sacrebleu's 0-100 scale."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from scoring.metrics.base import Item, ScoreResult

METRICS = ("bleu", "chrf")


@functools.cache
def scorer(metric: str) -> Any:
    """The sacrebleu metric object (sentence BLEU uses effective order, as sacrebleu
    recommends for single sentences)."""
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

    if metric == "bleu":
        return BLEU(effective_order=True)
    if metric == "chrf":
        return CHRF()
    raise ValueError(f"unknown metric {metric!r}; use one of {METRICS}")


def signature(metric: str, n_references: int = 1) -> str:
    """sacrebleu's reproducibility signature, stored with a run."""
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

    fresh = BLEU(effective_order=True) if metric == "bleu" else CHRF()
    fresh.corpus_score(["a"], [["a"]] * n_references)  # the signature names the ref count
    return str(fresh.get_signature())


def score(items: Sequence[Item], metric: str) -> list[ScoreResult]:
    """One result per item: the sentence score against all its references."""
    metric_obj = scorer(metric)
    out = []
    for item in items:
        if not item.references:
            out.append(ScoreResult(item.key, None, error="the document has no reference"))
            continue
        found = metric_obj.sentence_score(item.hypothesis, list(item.references))
        out.append(
            ScoreResult(item.key, float(found.score), {"n_references": len(item.references)})
        )
    return out
