"""What an endpoint can do, found by tiny real requests (never assumed).

:func:`probe` asks, each with a prompt of a few tokens and at most a few generated
tokens, bypassing the response cache:

* chat ``top_logprobs``: 1000, 100, 20, 10, 5, until one is accepted and answered;
* completion ``logprobs`` (the next token's candidates), the same way;
* ``echo`` with ``logprobs`` on ``/v1/completions``: the prompt's token log-probabilities;
* vLLM's ``prompt_logprobs``, on completions and on a chat completion continuing the
  assistant's answer (rating labels after a chat turn, scored exactly);
* ``n`` = 2 samples in one request;
* a ``seed``: accepted, and the same samples twice;
* the model's version: the chat answer's ``system_fingerprint`` (hosted APIs), else the
  ``root`` (the weights) that ``GET /v1/models`` gives for the model id (vLLM, SGLang);
* the tokenizer check: the prompt tokens the server returns for the probe text spell it
  exactly, so a target's tokens can be taken by character offsets.

A refusal (a 4xx) means "not available"; an endpoint that is down or refuses the key or
the model raises, so a probe never records a broken endpoint as a weak one, and so does
one whose answers cannot be read (:class:`~scoring.lm.served.errors.BadAnswer`: never a
crash that leaves the probe unfinished).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from scoring.lm.served.client import ServedClient
from scoring.lm.served.errors import BadAnswer, EndpointError, RequestRefused
from scoring.lm.served.protocols import WireProtocol
from scoring.lm.served.protocols.base import Ask, Call
from scoring.lm.served.spec import EXACT_ROUTES, Capabilities

logger = logging.getLogger(__name__)

TOP_K_TRIES = (1000, 100, 20, 10, 5)


def _asker(client: ServedClient) -> Ask:
    """The probe's question: the answer, ``None`` when the endpoint refuses the request;
    endpoint-wide failures (down, key, model) are raised."""

    def ask(call: Call) -> dict[str, Any] | None:
        outcome = client.run([call], use_cache=False)[0]
        if isinstance(outcome, RequestRefused) and not outcome.endpoint_wide:
            logger.info("probe: %s refused: %s", call.route, outcome)
            return None
        if isinstance(outcome, EndpointError):
            raise outcome
        return outcome

    return ask


def _top_k(wire: WireProtocol, ask: Ask, chat: bool, seen: dict[str, str]) -> int:
    """The largest of :data:`TOP_K_TRIES` accepted and answered (0: none)."""
    for k in TOP_K_TRIES:
        works, version = wire.probe_top_k(ask, chat, k)
        if chat and version:
            seen["fingerprint"] = version[:200]
        if works:
            return k
    return 0


def _model_version(client: ServedClient, seen: dict[str, str]) -> tuple[str, str]:
    """``(version, where from)``: the version a chat answer reported (vLLM's
    fingerprint hashes its version and the model's configuration), else the model's
    entry in the server's list of models."""
    wire = client.wire
    if seen.get("fingerprint"):
        return seen["fingerprint"], wire.VERSION_IN_ANSWER
    listed = client.get(wire.models_route()) or {}
    version = wire.listed_version(listed, client.spec.model_id)
    return (version[:200], wire.VERSION_LISTED) if version else ("", "")


IGNORABLE = EXACT_ROUTES


def probe(client: ServedClient, *, ignore: Sequence[str] = ()) -> Capabilities:
    """The endpoint's capabilities (about a dozen tiny requests). ``ignore`` names
    capabilities of :data:`IGNORABLE` to record as absent (not even asked): an endpoint
    treated as a hosted API that gives top-k candidates only."""
    unknown = set(ignore) - set(IGNORABLE)
    if unknown:
        raise ValueError(f"only {', '.join(IGNORABLE)} can be ignored, not {sorted(unknown)}")
    try:
        return _probe(client, frozenset(ignore))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise BadAnswer(
            f"the answers of {client.spec.host} cannot be read as an OpenAI-compatible "
            f"server's ({type(exc).__name__})"
        ) from exc


def _probe(client: ServedClient, ignore: frozenset[str]) -> Capabilities:
    wire, ask = client.wire, _asker(client)
    notes: list[str] = []
    plain = wire.probe_samples(ask, None)
    sampling_n = plain is not None and len(plain) == 2
    first = wire.probe_samples(ask, 1234) if sampling_n else None
    second = wire.probe_samples(ask, 1234) if first is not None else None
    seed = first is not None and first == second
    if first is not None and not seed:
        notes.append("a seed is accepted but the same seed gave different samples")
    seen: dict[str, str] = {}
    chat_top = _top_k(wire, ask, True, seen)
    echo = prompt_lp = chat_prompt_lp = spelled = False
    ask_echo, ask_prompt, ask_chat = (name not in ignore for name in EXACT_ROUTES)
    if ask_echo:
        echo, spelled = wire.probe_echo(ask)
    if ask_prompt:
        prompt_lp, spelled_too = wire.probe_prompt_logprobs(ask, False)
        spelled = spelled or spelled_too
    if ask_chat:
        chat_prompt_lp, _ = wire.probe_prompt_logprobs(ask, True)
    if (echo or prompt_lp) and not spelled:
        notes.append("the prompt tokens the server returned do not spell the probe text")
    version, source = _model_version(client, seen)
    found = Capabilities(
        chat_top_logprobs=chat_top,
        completion_top_logprobs=_top_k(wire, ask, False, seen),
        echo_logprobs=echo,
        prompt_logprobs=prompt_lp,
        sampling_n=sampling_n,
        seed=seed,
        model_version=version,
        version_source=source,
        tokens_spell_text=spelled,
        chat_prompt_logprobs=chat_prompt_lp,
        ignored=tuple(sorted(ignore)),
        notes=tuple(notes),
    )
    logger.info("probe of %s: %s", client.spec.host, found)
    return found
