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

from scoring.lm.served.client import Call, ServedClient
from scoring.lm.served.errors import BadAnswer, EndpointError, RequestRefused
from scoring.lm.served.spec import Capabilities

logger = logging.getLogger(__name__)

TOP_K_TRIES = (1000, 100, 20, 10, 5)
PROBE_TEXT = "The capital of France is Paris. The capital of Italy is"
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"


def _ask(client: ServedClient, route: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The answer, ``None`` when the endpoint refuses the request; endpoint-wide
    failures (down, key, model) are raised."""
    outcome = client.run([Call(route, body)], use_cache=False)[0]
    if isinstance(outcome, RequestRefused) and not outcome.endpoint_wide:
        logger.info("probe: %s refused: %s", route, outcome)
        return None
    if isinstance(outcome, EndpointError):
        raise outcome
    return outcome


def _chat_top(client: ServedClient, seen: dict[str, str]) -> int:
    for k in TOP_K_TRIES:
        answer = _ask(
            client,
            CHAT,
            {
                "messages": [{"role": "user", "content": "Say yes."}],
                "max_tokens": 1,
                "logprobs": True,
                "top_logprobs": k,
                "temperature": 0,
            },
        )
        if answer and answer.get("system_fingerprint"):
            seen["fingerprint"] = str(answer["system_fingerprint"])[:200]
        try:
            content = answer["choices"][0]["logprobs"]["content"] if answer else None
            if content and content[0].get("top_logprobs"):
                return k
        except (KeyError, IndexError, TypeError):
            continue
    return 0


def _completion_top(client: ServedClient) -> int:
    for k in TOP_K_TRIES:
        answer = _ask(
            client,
            COMPLETIONS,
            {"prompt": PROBE_TEXT, "max_tokens": 1, "logprobs": k, "temperature": 0},
        )
        try:
            tops = answer["choices"][0]["logprobs"]["top_logprobs"] if answer else None
            if tops and tops[0]:
                return k
        except (KeyError, IndexError, TypeError):
            continue
    return 0


def _echo(client: ServedClient, seen: dict[str, str]) -> bool:
    answer = _ask(
        client, COMPLETIONS, {"prompt": PROBE_TEXT, "echo": True, "logprobs": 0, "max_tokens": 0}
    )
    if not answer:
        return False
    try:
        lp = answer["choices"][0]["logprobs"]
        values = lp["token_logprobs"]
        if "".join(str(t) for t in lp["tokens"]) == PROBE_TEXT:
            seen["spelled"] = "yes"
        return (
            len(values) >= 2
            and values[0] is None
            and all(isinstance(v, float) for v in values[1:])
            and len(lp["text_offset"]) == len(values)
        )
    except (KeyError, IndexError, TypeError):
        return False


def _model_version(client: ServedClient, seen: dict[str, str]) -> tuple[str, str]:
    """``(version, where from)``: the fingerprint a chat answer gave (vLLM's hashes its
    version and the model's configuration), else the model's ``root`` in ``/v1/models``."""
    if seen.get("fingerprint"):
        return seen["fingerprint"], "system_fingerprint"
    listed = client.get("/v1/models") or {}
    for entry in listed.get("data") or []:
        if (
            isinstance(entry, dict)
            and entry.get("id") == client.spec.model_id
            and entry.get("root")
        ):
            return str(entry["root"])[:200], "root"
    return "", ""


def _prompt_logprobs(client: ServedClient, seen: dict[str, str]) -> bool:
    answer = _ask(
        client,
        COMPLETIONS,
        {"prompt": PROBE_TEXT, "prompt_logprobs": 0, "max_tokens": 1, "temperature": 0},
    )
    if not answer:
        return False
    try:
        found = answer["choices"][0].get("prompt_logprobs")
        if isinstance(found, list) and _spells(found):
            seen["spelled"] = "yes"
        return isinstance(found, list) and len(found) >= 2 and found[0] is None
    except (KeyError, IndexError, TypeError, AttributeError):
        return False


def _chat_prompt_logprobs(client: ServedClient) -> bool:
    answer = _ask(
        client,
        CHAT,
        {
            "messages": [
                {"role": "user", "content": "Say yes."},
                {"role": "assistant", "content": "Yes"},
            ],
            "prompt_logprobs": 0,
            "max_tokens": 1,
            "temperature": 0,
            "continue_final_message": True,
            "add_generation_prompt": False,
        },
    )
    if not answer:
        return False
    found = answer.get("prompt_logprobs")
    return (
        isinstance(found, list)
        and len(found) >= 2
        and found[0] is None
        and all(isinstance(entry, dict) and entry for entry in found[1:])
    )


def _spells(prompt_logprobs: list[Any]) -> bool:
    """vLLM's ``prompt_logprobs`` entries (a dict of candidates per position, the actual
    token among them) spell the probe text."""
    text = ""
    for entry in prompt_logprobs[1:]:
        if not isinstance(entry, dict):
            return False
        ranked = [v for v in entry.values() if isinstance(v, dict)]
        decoded = [str(v.get("decoded_token", "")) for v in ranked]
        text += decoded[0] if decoded else ""
    return PROBE_TEXT.endswith(text) and len(text) > 0


def _samples(client: ServedClient, seed: int | None) -> list[str] | None:
    body: dict[str, Any] = {"prompt": PROBE_TEXT, "max_tokens": 4, "temperature": 1.0, "n": 2}
    if seed is not None:
        body["seed"] = seed
    answer = _ask(client, COMPLETIONS, body)
    if not answer:
        return None
    return [str(c.get("text", "")) for c in answer.get("choices", [])]


IGNORABLE = ("echo_logprobs", "prompt_logprobs", "chat_prompt_logprobs")


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
    notes: list[str] = []
    plain = _samples(client, None)
    sampling_n = plain is not None and len(plain) == 2
    first = _samples(client, 1234) if sampling_n else None
    second = _samples(client, 1234) if first is not None else None
    seed = first is not None and first == second
    if first is not None and not seed:
        notes.append("a seed is accepted but the same seed gave different samples")
    seen: dict[str, str] = {}
    chat_top = _chat_top(client, seen)
    echo = "echo_logprobs" not in ignore and _echo(client, seen)
    prompt_lp = "prompt_logprobs" not in ignore and _prompt_logprobs(client, seen)
    chat_prompt_lp = "chat_prompt_logprobs" not in ignore and _chat_prompt_logprobs(client)
    if ignore:
        notes.append(f"told to ignore: {', '.join(sorted(ignore))}")
    if (echo or prompt_lp) and not seen.get("spelled"):
        notes.append("the prompt tokens the server returned do not spell the probe text")
    version, source = _model_version(client, seen)
    found = Capabilities(
        chat_top_logprobs=chat_top,
        completion_top_logprobs=_completion_top(client),
        echo_logprobs=echo,
        prompt_logprobs=prompt_lp,
        sampling_n=sampling_n,
        seed=seed,
        model_version=version,
        version_source=source,
        tokens_spell_text=bool(seen.get("spelled")),
        chat_prompt_logprobs=chat_prompt_lp,
        notes=tuple(notes),
    )
    logger.info("probe of %s: %s", client.spec.host, found)
    return found
