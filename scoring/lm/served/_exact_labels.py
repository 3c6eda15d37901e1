"""Rating-label probabilities read exactly, from prompt log-probabilities.

When a label is not among the top-k candidates a server returns (vLLM's default
``--max-logprobs`` is 20; hosted APIs cap ``top_logprobs`` at 20 too), its continuation
is scored as GPTScore scores a target: the tokens of ``prompt + label`` that follow the
prompt, each with its log-probability (the backend's prompt log-probability path). A
label's probability is the product along its tokens; a label whose tokens begin another
label's (``1`` of ``10``) gets the probability of stopping there: times one minus the
probability of the tokens that would continue it into the other labels, read from the
other labels' answers at that position. This is the local engine's rule
(:mod:`scoring.lm._rating`), token by token, so the numbers are the same.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence

from scoring.lm.rating import RatingDistribution

# a label's tokens after the prompt and their log-probabilities, or why there are none
LabelTokens = tuple[tuple[str, ...], tuple[float, ...]]


def exact_distribution(
    key: Hashable, labels: Sequence[str], read: Sequence[LabelTokens | str]
) -> RatingDistribution:
    """The labels' distribution from each label's tokens (``read``, aligned with
    ``labels``); the first label's error fails the request."""
    parts: list[LabelTokens] = []
    for part in read:
        if isinstance(part, str):
            return RatingDistribution.failed(key, part)
        parts.append(part)
    paths = [tokens for tokens, _ in parts]
    if len(set(paths)) != len(paths):
        return RatingDistribution.failed(key, "two rating labels tokenise to the same tokens")
    values: list[float] = []
    for i, (tokens, logprobs) in enumerate(parts):
        value = math.fsum(logprobs)
        n = len(tokens)
        children: dict[str, float] = {}
        for j, (other, other_logprobs) in enumerate(parts):
            if j != i and len(other) > n and other[:n] == tokens:
                children.setdefault(other[n], other_logprobs[n])
        if children:
            going_on = math.fsum(math.exp(v) for v in children.values())
            value = value + math.log(1.0 - going_on) if going_on < 1.0 else -math.inf
        values.append(value)
    found = RatingDistribution.from_logprobs(key, labels, values)
    return dataclasses.replace(found, label_mode="exact") if found.ok else found
