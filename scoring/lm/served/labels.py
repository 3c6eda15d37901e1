"""Label probabilities through an endpoint: the next token's ``top_logprobs`` first,
and each label that is not among the candidates scored exactly.

:meth:`ServedModel.rating_distributions` walks the labels' pieces among the
candidates and, where a label is not among them and the endpoint gives prompt
log-probabilities (``echo`` or ``prompt_logprobs``; for a chat prompt on chat
completions), scores every label of that request exactly, as GPTScore scores a target
(``label_mode`` ``"exact"``). An endpoint with no ``top_logprobs`` at all has every
label scored that way here. Where neither is possible the top-k reading is kept and
says which labels were ``outside``.
"""

from __future__ import annotations

from collections.abc import Sequence

import scoring.lm.served.backend as backend
from scoring.lm import labels
from scoring.lm.labels import LabelReading
from scoring.lm.rating import RatingDistribution, RatingRequest
from scoring.lm.served.backend import ServedModel
from scoring.lm.served.errors import CostCapReached

NO_TOP_K = (
    "the endpoint gives neither top_logprobs nor prompt log-probabilities: "
    "rate with estimation='sampled' instead"
)


def label_distributions(
    model: ServedModel, requests: Sequence[RatingRequest]
) -> list[LabelReading]:
    """One reading per request, in order (see the module's docstring)."""
    if not requests:
        return []
    try:
        walked = model.rating_distributions(requests)
    except backend.CapabilityMissing:  # no top_logprobs: every label exactly, where possible
        walked = _all_exact(model, requests)
    readings = []
    for request, dist in zip(requests, walked, strict=True):
        if dist.label_mode == "exact":
            readings.append(LabelReading(dist, "exact"))
        else:
            readings.append(LabelReading(dist, "top-k", _outside(request, dist) or ()))
    return readings


def _all_exact(model: ServedModel, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
    """Every label of each request scored exactly; a request that cannot be fails."""
    possible = [model.exact_possible(r.prompt) for r in requests]
    try:
        exact = model.exact_distributions(
            [r for r, ok in zip(requests, possible, strict=True) if ok]
        )
    except CostCapReached as capped:
        capped.partial = [None] * len(requests)
        raise
    found = iter(exact)
    return [
        next(found) if ok else RatingDistribution.failed(r.key, NO_TOP_K)
        for r, ok in zip(requests, possible, strict=True)
    ]


def _outside(request: RatingRequest, dist: RatingDistribution) -> tuple[str, ...] | None:
    """The labels the walk gave no probability (all of them when none had any); None
    for a request that failed for another reason."""
    if dist.ok:
        return tuple(label for label, p in zip(request.labels, dist.probs, strict=True) if p == 0)
    if dist.error in (NO_TOP_K, "the model gave no finite probability to any label"):
        return request.labels
    return None


labels.register_reader(ServedModel, label_distributions)
