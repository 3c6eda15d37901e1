"""ROUGE-1/2/L (Lin 2004) with Porter stemming, through Google's ``rouge-score``.

Against several references, the F-measures are averaged over the references by default
(SummEval's convention) or the best one is taken (``aggregation="max"``). Tokens and
n-grams of a text are computed once per process and reused: the outputs of a document
share its references, and the ROUGE-1, -2 and -L runs share every text.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from scoring.metrics.base import Item, ScoreResult

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
AGGREGATIONS = ("mean", "max")


@functools.cache
def _tokenizer() -> Any:
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=True)


@functools.lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """``rouge-score``'s tokens of ``text`` (lower-cased, stemmed), cached."""
    return tuple(_tokenizer().tokenize(text))


@functools.lru_cache(maxsize=65536)
def _ngrams(text: str, n: int) -> Counter[tuple[str, ...]]:
    from rouge_score import rouge_scorer

    counts: Counter[tuple[str, ...]] = rouge_scorer._create_ngrams(list(tokens(text)), n)
    return counts


def pair(rouge_type: str, reference: str, hypothesis: str) -> tuple[float, float, float]:
    """(precision, recall, F) of ``hypothesis`` against one ``reference``: exactly
    ``RougeScorer([rouge_type], use_stemmer=True).score(reference, hypothesis)``."""
    from rouge_score import rouge_scorer

    if rouge_type == "rougeL":
        found = rouge_scorer._score_lcs(list(tokens(reference)), list(tokens(hypothesis)))
    elif rouge_type in ("rouge1", "rouge2"):
        n = int(rouge_type[5:])
        found = rouge_scorer._score_ngrams(_ngrams(reference, n), _ngrams(hypothesis, n))
    else:
        raise ValueError(f"unknown ROUGE type {rouge_type!r}; use one of {ROUGE_TYPES}")
    return float(found.precision), float(found.recall), float(found.fmeasure)


def score(items: Sequence[Item], rouge_type: str, aggregation: str = "mean") -> list[ScoreResult]:
    """One result per item: the F-measure aggregated over its references."""
    if rouge_type not in ROUGE_TYPES:
        raise ValueError(f"unknown ROUGE type {rouge_type!r}; use one of {ROUGE_TYPES}")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"reference aggregation must be one of {AGGREGATIONS}")
    out = []
    for item in items:
        if not item.references:
            out.append(ScoreResult(item.key, None, error="the document has no reference"))
            continue
        scores = [pair(rouge_type, ref, item.hypothesis) for ref in item.references]
        f = [s[2] for s in scores]
        value = max(f) if aggregation == "max" else math.fsum(f) / len(f)
        details = {
            "aggregation": aggregation,
            "precision": [s[0] for s in scores],
            "recall": [s[1] for s in scores],
            "f": f,
        }
        out.append(ScoreResult(item.key, value, details))
    return out
