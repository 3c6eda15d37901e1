"""Label probabilities through an endpoint: the next token's ``top_logprobs`` first,
and each label that is not among the candidates scored exactly.

The top-k walk (:meth:`ServedModel.rating_distributions`) reads the labels whose
pieces are among the candidates. A request where a label was not (it got probability
0), or where the endpoint gives no top_logprobs, is read again exactly: every label's
continuation scored by prompt log-probabilities, as GPTScore scores a target
(:meth:`ServedModel.score_targets`: ``echo`` or ``prompt_logprobs`` on a plain
prompt), or for a chat prompt by a chat completion that continues the assistant's
answer with the label and returns ``prompt_logprobs`` (vLLM), the label's tokens being
the last ones of the rendered prompt. Where neither is possible the top-k reading is
kept and says which labels were ``outside``. Labels where one begins another are read
exactly only through the walk (their stopping probability needs the candidates).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import scoring.lm.served.backend as backend
from scoring.lm import labels
from scoring.lm.base import TargetRequest
from scoring.lm.labels import LabelReading
from scoring.lm.rating import RatingDistribution, RatingRequest
from scoring.lm.served.backend import ServedModel
from scoring.lm.served.errors import CostCapReached, EndpointError
from scoring.lm.served.protocols import openai as wire
from scoring.lm.served.protocols.base import Call

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
    except backend.CapabilityMissing:  # no top_logprobs: every label exactly
        walked = [RatingDistribution.failed(r.key, NO_TOP_K) for r in requests]
    readings: list[LabelReading | None] = [None] * len(requests)
    again: list[int] = []
    for i, (request, dist) in enumerate(zip(requests, walked, strict=True)):
        if dist.label_mode == "exact":  # the backend scored every label (one was outside)
            readings[i] = LabelReading(dist, "exact")
            continue
        outside = _outside(request, dist)
        if not outside:  # every label among the candidates, or a failure of its own
            readings[i] = LabelReading(dist, "top-k")
        elif _exact_possible(model, request):
            again.append(i)
        else:
            readings[i] = LabelReading(dist, "top-k", outside)
    exact = _exact(model, [requests[i] for i in again])
    for i, dist in zip(again, exact, strict=True):
        request = requests[i]
        readings[i] = LabelReading(dist, "exact", _outside(request, walked[i]) or ())
    return [r for r in readings if r is not None]


def _outside(request: RatingRequest, dist: RatingDistribution) -> tuple[str, ...] | None:
    """The labels the walk gave no probability (all of them when none had any); None
    for a request that failed for another reason."""
    if dist.ok:
        return tuple(label for label, p in zip(request.labels, dist.probs, strict=True) if p == 0)
    if dist.error in (NO_TOP_K, "the model gave no finite probability to any label"):
        return request.labels
    return None


def _exact_possible(model: ServedModel, request: RatingRequest) -> bool:
    labels = request.labels
    if any(a != b and b.startswith(a) for a in labels for b in labels):
        return False
    caps = model.capabilities
    if backend.split_chat(request.prompt) is not None:
        return caps.prompt_logprobs
    return caps.target_logprobs


def _exact(model: ServedModel, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
    """Every label of each request scored by prompt log-probabilities."""
    if not requests:
        return []
    plain = [
        (i, j)
        for i, r in enumerate(requests)
        if backend.split_chat(r.prompt) is None
        for j in range(len(r.labels))
    ]
    chat = [
        (i, j)
        for i, r in enumerate(requests)
        if backend.split_chat(r.prompt) is not None
        for j in range(len(r.labels))
    ]
    values: dict[tuple[int, int], float | str] = {}
    scored = model.score_targets(
        [TargetRequest((i, j), requests[i].prompt, requests[i].labels[j]) for i, j in plain]
    )
    for (i, j), target in zip(plain, scored, strict=True):
        values[i, j] = target.sum if target.ok and target.sum is not None else str(target.error)
    calls = [_chat_call(requests[i].prompt, requests[i].labels[j]) for i, j in chat]
    outcomes = model.client.run(calls)
    backend._raise_endpoint_wide(outcomes)
    for (i, j), outcome in zip(chat, outcomes, strict=True):
        if isinstance(outcome, CostCapReached):
            outcome.partial = [None] * len(requests)
            raise outcome
        if isinstance(outcome, EndpointError):
            values[i, j] = str(outcome)
            continue
        try:
            values[i, j] = _label_logprob(outcome, requests[i].labels[j])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            values[i, j] = f"the endpoint's answer has no usable prompt log-probabilities ({exc})"
    out = []
    for i, request in enumerate(requests):
        found = [values[i, j] for j in range(len(request.labels))]
        error = next((v for v in found if isinstance(v, str)), None)
        if error is not None:
            out.append(RatingDistribution.failed(request.key, error))
        else:
            logprobs = [float(v) for v in found]
            out.append(RatingDistribution.from_logprobs(request.key, request.labels, logprobs))
    return out


def _chat_call(prompt: str, label: str) -> Call:
    """A chat turn whose assistant answer is continued by ``label``; the server renders
    the model's template and returns every prompt token's log-probability."""
    chat = backend.split_chat(prompt)
    assert chat is not None
    message, answer = chat
    return Call(
        wire.CHAT,
        {
            "messages": [
                {"role": "user", "content": message},
                {"role": "assistant", "content": answer + label},
            ],
            "continue_final_message": True,
            "add_generation_prompt": False,
            "prompt_logprobs": 0,
            "max_tokens": 1,
            "temperature": 0,
        },
    )


def _label_logprob(answer: dict[str, Any], label: str) -> float:
    """The sum of the log-probabilities of the prompt's last tokens, those that spell
    ``label``; a ValueError when they do not (a token shared with the prompt's end)."""
    positions = answer.get("prompt_logprobs")
    if positions is None:
        positions = answer["choices"][0]["prompt_logprobs"]
    if not positions:
        raise ValueError("no prompt_logprobs in the answer")
    text, total = "", 0.0
    for k in range(len(positions) - 1, 0, -1):
        entry = next(iter(positions[k].values()))
        text = str(entry.get("decoded_token") or "") + text
        total += wire.logprob(entry["logprob"], f"prompt token {k}")
        if len(text) >= len(label):
            break
    if text != label:
        raise ValueError(
            f"the prompt's last tokens spell {text[-len(label) - 8 :]!r}, not the label "
            f"{label!r}: the label merges with the end of the prompt"
        )
    if not math.isfinite(total):
        raise ValueError("a label token has no finite log-probability")
    return total


labels.register_reader(ServedModel, label_distributions)
