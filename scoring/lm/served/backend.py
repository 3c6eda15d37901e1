"""A served model behind the scoring protocols: GPTScore, G-Eval and evaluation steps
run on it with no code of their own.

:class:`ServedModel` implements

* :class:`~scoring.lm.base.LanguageModel` (``score_targets``) from the prompt's token
  log-probabilities: ``/v1/completions`` with ``echo`` (or vLLM's ``prompt_logprobs``)
  on ``prompt + target``, the target's tokens taken by character offsets;
* :class:`~scoring.lm.rating.RatingModel` (``rating_distributions``) from the
  ``top_logprobs`` of the next token, label by label (:mod:`._rating_walk`);
* :class:`~scoring.lm.rating.ChatFormatter`, :class:`~scoring.lm.rating.TextGenerator`
  and :class:`~scoring.lm.rating.TextSampler`.

A chat turn is sent as a chat completion, so the server applies the model's own chat
template: :meth:`ServedModel.chat_prompt` marks the message (:func:`chat_prompt`)
instead of rendering a template it does not have, and every method sends a marked
prompt to ``/v1/chat/completions`` and a plain one to ``/v1/completions``.

Endpoint-wide failures (unavailable, refused key or model, cost cap) are raised; a
request the server refuses on its own (a prompt past the context) is that request's
error result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.lm.base import TargetRequest, TargetScore
from scoring.lm.rating import RatingDistribution, RatingRequest
from scoring.lm.served._exact_labels import LabelTokens, exact_distribution
from scoring.lm.served._rating_walk import Walk
from scoring.lm.served.client import Outcome, ServedClient
from scoring.lm.served.errors import BadAnswer, CostCapReached, EndpointError, RequestRefused
from scoring.lm.served.probe import probe
from scoring.lm.served.protocols import WireProtocol, protocol_of
from scoring.lm.served.protocols.base import Call, Chat
from scoring.lm.served.spec import Capabilities

CHAT_OPEN = "<|served:user|>\n"
CHAT_CLOSE = "\n<|served:assistant|>\n"
STRADDLE = ("target", "error")


class CapabilityMissing(EndpointError):
    """The endpoint lacks what a metric needs (found by the probe); nothing was sent."""


def chat_prompt(message: str) -> str:
    """``message`` marked as a chat turn's user message, the assistant's answer to
    follow. It ends in a newline, as a rendered chat template does, so rating labels
    follow it without a leading space."""
    return f"{CHAT_OPEN}{message}{CHAT_CLOSE}"


def split_chat(prompt: str) -> tuple[str, str] | None:
    """``(message, start of the assistant's answer)`` of a marked prompt, else ``None``."""
    if not prompt.startswith(CHAT_OPEN):
        return None
    message, found, answer = prompt[len(CHAT_OPEN) :].rpartition(CHAT_CLOSE)
    return (message, answer) if found else None


def _raise_endpoint_wide(outcomes: Sequence[Outcome]) -> None:
    """Raise the first failure that no request can escape (unavailable, refused key or
    model, blocked); a request's own refusal or unusable answer is left to become its
    error result."""
    for outcome in outcomes:
        if (
            isinstance(outcome, EndpointError)
            and not isinstance(outcome, CostCapReached | BadAnswer)
            and (not isinstance(outcome, RequestRefused) or outcome.endpoint_wide)
        ):
            raise outcome


class ServedModel:
    """A model behind an OpenAI-compatible endpoint (:class:`ServedClient`).

    ``capabilities`` are the probe's findings (probed on first use when not given).
    ``top_logprobs`` caps the candidates read per rating step (default: the most the
    endpoint accepts). ``straddle`` decides a token that is part prompt, part target
    (a prompt ending in a space before ``Ġword``): ``"target"`` counts it as the
    target's first token, the local engine's rule (every target character is scored);
    ``"error"`` refuses the request instead.
    """

    def __init__(
        self,
        client: ServedClient,
        *,
        capabilities: Capabilities | None = None,
        top_logprobs: int | None = None,
        straddle: str = "target",
    ) -> None:
        if straddle not in STRADDLE:
            raise ValueError(f"straddle must be one of {STRADDLE}")
        if top_logprobs is not None and top_logprobs < 1:
            raise ValueError("top_logprobs must be at least 1")
        self.client = client
        self.wire: WireProtocol = protocol_of(client.spec.protocol)
        self._capabilities = capabilities
        self.top_logprobs = top_logprobs
        self.straddle = straddle

    def __repr__(self) -> str:
        return f"ServedModel({self.client.spec!r})"

    @property
    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            self._capabilities = probe(self.client)
        return self._capabilities

    @property
    def model_id(self) -> str:
        return self.client.spec.model_id

    def provenance(self) -> dict[str, Any]:
        """Where and how it scored: the endpoint's host, the model id and the versions
        the server reported, the capabilities used, and the usage so far."""
        spec = self.client.spec
        return {
            "backend": "served",
            "protocol": spec.protocol,
            "host": spec.host,
            "model_id": spec.model_id,
            "models_reported": sorted(self.client.models_seen),
            "system_fingerprints": sorted(self.client.fingerprints),
            "capabilities": self.capabilities.as_dict(),
            "straddle": self.straddle,
            "top_logprobs": self.top_logprobs,
            "usage": self.client.usage.as_dict(),
        }

    # -- GPTScore: target log-probabilities ---------------------------------------------

    def score_targets(self, requests: Sequence[TargetRequest]) -> list[TargetScore]:
        """One result per request, in order, from the prompt log-probabilities of
        ``prompt + target``; failures carry ``error``."""
        if not requests:
            return []
        caps = self.capabilities
        if not caps.target_logprobs:
            raise CapabilityMissing(
                f"{self.model_id} at {self.client.spec.host} gives no prompt log-probabilities "
                "(neither echo nor prompt_logprobs): GPTScore cannot run on it"
            )
        results: list[TargetScore | None] = [None] * len(requests)
        calls: list[Call] = []
        where: list[int] = []
        for i, request in enumerate(requests):
            if not isinstance(request.prompt, str) or not isinstance(request.target, str):
                results[i] = TargetScore.failed(request.key, "prompt and target must be strings")
            elif request.target == "":
                results[i] = TargetScore.failed(
                    request.key, "the target is empty: there is nothing to score"
                )
            elif not self.exact_possible(request.prompt):
                results[i] = TargetScore.failed(
                    request.key, "the endpoint gives no prompt log-probabilities for a chat turn"
                )
            else:
                calls.append(self._target_call(request.prompt, request.target))
                where.append(i)
        outcomes = self.client.run(calls)
        _raise_endpoint_wide(outcomes)
        capped: CostCapReached | None = None
        for i, outcome in zip(where, outcomes, strict=True):
            request = requests[i]
            if isinstance(outcome, CostCapReached):
                capped = capped or outcome
            elif isinstance(outcome, EndpointError):
                results[i] = TargetScore.failed(request.key, str(outcome))
            else:
                results[i] = self._target_score(request, outcome)
        if capped is not None:
            capped.partial = results
            raise capped
        return [r for r in results if r is not None]

    def exact_possible(self, prompt: str) -> bool:
        """Can a continuation of ``prompt`` be scored from prompt log-probabilities
        (a chat turn's needs them on chat completions)?"""
        caps = self.capabilities
        if split_chat(prompt) is not None:
            return caps.chat_prompt_logprobs
        return caps.target_logprobs

    def _target_call(self, prompt: str, target: str) -> Call:
        """The request for the prompt log-probabilities of ``prompt + target`` (for a
        chat turn, the assistant's answer continued by ``target``)."""
        return self.wire.target_call(_turn(prompt), target, echo=self.capabilities.echo_logprobs)

    def _target_score(self, request: TargetRequest, answer: dict[str, Any]) -> TargetScore:
        found = self._target_part(request.prompt, request.target, answer, self.straddle)
        if isinstance(found, str):
            return TargetScore.failed(request.key, found)
        return TargetScore.from_logprobs(request.key, list(found[1]))

    def _target_part(
        self, prompt: str, target: str, answer: dict[str, Any], straddle: str
    ) -> tuple[tuple[str, ...], tuple[float, ...]] | str:
        """The target's tokens and their log-probabilities in an answer to
        :meth:`_target_call`, or why they cannot be read."""
        try:
            tokens, logprobs, offsets, text = self.wire.prompt_tokens(answer, _turn(prompt), target)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            return f"the endpoint's answer has no usable prompt log-probabilities ({exc})"
        boundary = len(text) - len(target)
        ends = [*offsets[1:], len(text)]
        start = next(
            (k for k in range(len(tokens)) if ends[k] > boundary or offsets[k] >= boundary),
            len(tokens),
        )
        if start == len(tokens):
            return "the target has no tokens to score"
        if offsets[start] < boundary and straddle == "error":
            return (
                f"the token {tokens[start]!r} spans the end of the prompt and the start of the "
                "target; end the prompt with the separator or start the target with it"
            )
        if start == 0 or logprobs[start] is None:
            return (
                "nothing precedes the target, so the endpoint gives its first token no probability"
            )
        values = logprobs[start:]
        if any(v is None for v in values):
            return "the endpoint left a target token unscored"
        return tuple(tokens[start:]), tuple(float(v) for v in values if v is not None)

    # -- G-Eval: rating distributions ---------------------------------------------------

    def rating_distributions(self, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
        """Label distributions from the next-token ``top_logprobs`` (a chat completion
        for a marked prompt, a plain completion otherwise), walking multi-token labels
        one token at a time (``label_mode`` ``"top-k"``). When a label is not among the
        top-k candidates, every label of that request is scored exactly from prompt
        log-probabilities where the endpoint gives them (``"exact"``,
        :mod:`._exact_labels`); where it does not, the labels outside the top-k are
        recorded with the upper bound on their probability (``outside_top_k``)."""
        if not requests:
            return []
        walks = [Walk(r.prompt, r.labels) for r in requests]
        while True:
            wanted: dict[str, Call] = {}
            for walk in walks:
                for prefix in walk.missing():
                    call = self._next_token_call(walk.prompt, prefix)
                    wanted[walk.node_id(prefix)] = call
            if not wanted:
                break
            ids = list(wanted)
            outcomes = self.client.run([wanted[i] for i in ids])
            _raise_endpoint_wide(outcomes)
            found = dict(zip(ids, outcomes, strict=True))
            for walk in walks:
                for prefix in walk.missing():
                    outcome = found[walk.node_id(prefix)]
                    if isinstance(outcome, CostCapReached):
                        outcome.partial = [None] * len(requests)
                        raise outcome
                    if isinstance(outcome, EndpointError):
                        walk.fail(str(outcome))
                        continue
                    try:
                        candidates = self.wire.candidates(outcome)
                    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                        walk.fail(f"the endpoint's answer has no usable top_logprobs ({exc})")
                    else:
                        walk.add(prefix, candidates)
        results = [walk.result(r.key) for walk, r in zip(walks, requests, strict=True)]
        exact = [
            i
            for i, (walk, result) in enumerate(zip(walks, results, strict=True))
            if walk.error is None and walk.outside() and self.exact_possible(walk.prompt)
        ]
        if exact:
            try:
                found_exact = self.exact_distributions([requests[i] for i in exact])
            except CostCapReached as capped:
                capped.partial = [None] * len(requests)
                raise
            for i, distribution in zip(exact, found_exact, strict=True):
                results[i] = distribution
        return results

    def exact_distributions(self, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
        """Each request's labels scored as targets (the GPTScore path), combined by
        :func:`._exact_labels.exact_distribution`. A label merging with the end of the prompt
        is refused, as the local engine refuses it."""
        calls = [self._target_call(r.prompt, label) for r in requests for label in r.labels]
        answered = self.client.run(calls)
        _raise_endpoint_wide(answered)
        outcomes = iter(answered)
        out: list[RatingDistribution] = []
        for request in requests:
            read: list[LabelTokens | str] = []
            for label in request.labels:
                outcome = next(outcomes)
                if isinstance(outcome, CostCapReached):
                    raise outcome
                if isinstance(outcome, EndpointError):
                    read.append(str(outcome))
                    continue
                part = self._target_part(request.prompt, label, outcome, "error")
                if isinstance(part, str) and "spans the end of the prompt" in part:
                    part = (
                        f"the label {label!r} merges with the end of the prompt when "
                        "tokenised; end the prompt with a separator (a space or a newline)"
                    )
                read.append(part)
            out.append(exact_distribution(request.key, request.labels, read))
        return out

    def _k(self, chat: bool) -> int:
        caps = self.capabilities
        most = caps.chat_top_logprobs if chat else caps.completion_top_logprobs
        if most < 1:
            kind = "chat" if chat else "completion"
            raise CapabilityMissing(
                f"{self.model_id} at {self.client.spec.host} gives no {kind} top_logprobs: "
                "rate with estimation='sampled' instead"
            )
        return min(most, self.top_logprobs or most)

    def _next_token_call(self, prompt: str, prefix: str) -> Call:
        chat = split_chat(prompt)
        if chat is not None:
            message, answer = chat
            return self.wire.next_token_call((message, answer + prefix), self._k(True))
        return self.wire.next_token_call(prompt + prefix, self._k(False))

    # -- text: chat template, greedy generation, sampling --------------------------------

    def chat_prompt(self, message: str) -> str:
        """The message as a chat turn (the server applies the model's own template)."""
        return chat_prompt(message)

    def generate(self, prompt: str, *, max_new_tokens: int = 256) -> str:
        """Greedy continuation (temperature 0)."""
        call = self.wire.text_call(_turn(prompt), max_new_tokens, 0)
        return self._texts(self.client.post(call.route, call.body))[0]

    def sample(
        self,
        prompt: str,
        *,
        n: int = 20,
        temperature: float = 1.0,
        max_new_tokens: int = 8,
        seed: int = 0,
    ) -> list[str]:
        """``n`` answers at ``temperature`` (top-p 1): one request with ``n`` where the
        endpoint takes it, else ``n`` requests with seeds ``seed``, ``seed + 1``, …"""
        if n < 1 or temperature <= 0:
            raise ValueError("sampling needs n ≥ 1 and a temperature above 0")
        caps = self.capabilities
        turn = _turn(prompt)
        if caps.sampling_n:
            call = self.wire.text_call(
                turn, max_new_tokens, temperature, n=n, seed=seed if caps.seed else None
            )
            return self._texts(self.client.post(call.route, call.body))
        # Distinct seeds keep the requests distinct (identical ones are sent once).
        calls = [
            self.wire.text_call(turn, max_new_tokens, temperature, seed=seed + i) for i in range(n)
        ]
        out: list[str] = []
        for outcome in self.client.run(calls):
            if isinstance(outcome, EndpointError):
                raise outcome
            out.extend(self._texts(outcome))
        return out

    def _texts(self, answer: dict[str, Any]) -> list[str]:
        """The answers' texts, in choice order."""
        try:
            out = self.wire.texts(answer)
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise BadAnswer(f"the endpoint's answer has no readable choices ({exc})") from exc
        if not out:
            raise EndpointError("the endpoint answered with no choices")
        return out


def _turn(prompt: str) -> str | Chat:
    """A marked prompt as its chat turn, a plain one as it is."""
    return split_chat(prompt) or prompt


__all__ = [
    "CapabilityMissing",
    "ServedModel",
    "chat_prompt",
    "split_chat",
]
