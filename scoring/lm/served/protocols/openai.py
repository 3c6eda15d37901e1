"""The OpenAI-compatible wire protocol (vLLM, SGLang, hosted APIs): ``/v1/completions``
and ``/v1/chat/completions``, every field name of their requests and answers.

* next-token candidates: ``logprobs`` + ``top_logprobs`` (chat) or ``logprobs`` = k
  (completions);
* prompt log-probabilities: ``echo`` + ``logprobs`` 0 (completions), or vLLM's
  ``prompt_logprobs`` (completions; a chat completion continuing the assistant's answer
  with ``continue_final_message``, the answer's ``prompt_logprobs`` beside its choices);
* usage (``usage.prompt_tokens``, ``completion_tokens``), the model's version
  (``system_fingerprint``; ``root`` in ``GET /v1/models``), error bodies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scoring.lm.served.answers import counted_usage, estimate_tokens, server_message
from scoring.lm.served.protocols.base import Ask, Call, Chat, PromptTokens, WireProtocol

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"
LOGPROB_SLACK = 1e-3  # a log-probability a hair above 0 is rounding; more is no probability
PROBE_TEXT = "The capital of France is Paris. The capital of Italy is"


def logprob(value: Any, where: str) -> float:
    """``value`` as a log-probability: a JSON number, finite, at most 0 (a hair above
    is rounding); else a ValueError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} has a log-probability that is not a number")
    if not math.isfinite(value) or value > LOGPROB_SLACK:
        raise ValueError(f"{where} has the log-probability {value!r}, not a finite number ≤ 0")
    return min(float(value), 0.0)


def _messages(message: str, answer: str) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": message}]
    if answer:
        messages.append({"role": "assistant", "content": answer})
    return messages


def _chat_body(message: str, answer: str) -> dict[str, Any]:
    """A chat request's messages; an answer begun is continued, not closed."""
    body: dict[str, Any] = {"messages": _messages(message, answer)}
    if answer:
        body.update(continue_final_message=True, add_generation_prompt=False)
    return body


class OpenAIProtocol(WireProtocol):
    name = "openai"
    VERSION_IN_ANSWER = "system_fingerprint"
    VERSION_LISTED = "root"

    def with_model(self, body: Mapping[str, Any], model_id: str) -> dict[str, Any]:
        return {"model": model_id, **body}

    def next_token_call(self, prompt: str | Chat, k: int) -> Call:
        if isinstance(prompt, tuple):
            body = _chat_body(*prompt)
            body.update(logprobs=True, top_logprobs=k, max_tokens=1, temperature=0)
            return Call(CHAT, body)
        return Call(
            COMPLETIONS, {"prompt": prompt, "logprobs": k, "max_tokens": 1, "temperature": 0}
        )

    def target_call(self, prompt: str | Chat, target: str, *, echo: bool) -> Call:
        if isinstance(prompt, tuple):
            message, answer = prompt
            body: dict[str, Any] = {
                "messages": _messages(message, answer + target),
                "prompt_logprobs": 0,
                "max_tokens": 1,
                "temperature": 0,
                "continue_final_message": True,
                "add_generation_prompt": False,
            }
            return Call(CHAT, body)
        text = prompt + target
        if echo:
            return Call(COMPLETIONS, {"prompt": text, "echo": True, "logprobs": 0, "max_tokens": 0})
        return Call(
            COMPLETIONS, {"prompt": text, "prompt_logprobs": 0, "max_tokens": 1, "temperature": 0}
        )

    def text_call(
        self,
        prompt: str | Chat,
        max_new_tokens: int,
        temperature: float,
        *,
        n: int = 1,
        seed: int | None = None,
    ) -> Call:
        body: dict[str, Any] = {"max_tokens": max_new_tokens, "temperature": temperature}
        if n > 1:
            body["n"] = n
        if temperature > 0:
            body["top_p"] = 1.0
        if seed is not None:
            body["seed"] = seed
        if isinstance(prompt, tuple):
            return Call(CHAT, {**body, **_chat_body(*prompt)})
        return Call(COMPLETIONS, {"prompt": prompt, **body})

    def texts(self, answer: dict[str, Any]) -> list[str]:
        choices = sorted(answer.get("choices") or [], key=lambda c: int(c.get("index", 0)))
        out = []
        for choice in choices:
            if "message" in choice:
                out.append(str((choice.get("message") or {}).get("content") or ""))
            else:
                out.append(str(choice.get("text") or ""))
        return out

    def candidates(self, answer: dict[str, Any]) -> dict[str, float]:
        """The most probable entry when a text appears twice."""
        choice = answer["choices"][0]
        found: dict[str, float] = {}
        logprobs = choice.get("logprobs") or {}
        if "content" in logprobs:
            entries = (logprobs.get("content") or [{}])[0].get("top_logprobs") or []
            pairs = [(str(e["token"]), logprob(e["logprob"], "a candidate")) for e in entries]
        else:
            tops = logprobs.get("top_logprobs") or [{}]
            pairs = [(str(t), logprob(v, "a candidate")) for t, v in (tops[0] or {}).items()]
        for token, value in pairs:
            if value > found.get(token, -math.inf):
                found[token] = value
        return found

    def prompt_tokens(
        self, answer: dict[str, Any], prompt: str | Chat, target: str
    ) -> PromptTokens:
        if isinstance(prompt, tuple):
            return _chat_prompt_tokens(answer, prompt[1] + target)
        text = prompt + target
        tokens, logprobs, offsets = _prompt_tokens(answer, text)
        return tokens, logprobs, offsets, text

    def usage(
        self, answer: dict[str, Any], body: Mapping[str, Any], what: str
    ) -> tuple[int, int, int]:
        return counted_usage(answer.get("usage"), body, what)

    def estimate_tokens(self, body: Mapping[str, Any]) -> tuple[int, int]:
        return estimate_tokens(body)

    def model_version(self, answer: dict[str, Any]) -> str:
        return str(answer.get("system_fingerprint") or "")

    def model_reported(self, answer: dict[str, Any]) -> str:
        return str(answer.get("model") or "")

    def error_message(self, content: bytes) -> str:
        return server_message(content)

    # -- the probe ----------------------------------------------------------------------

    def probe_top_k(self, ask: Ask, chat: bool, k: int) -> tuple[bool, str]:
        if chat:
            call = self.next_token_call(("Say yes.", ""), k)
        else:
            call = self.next_token_call(PROBE_TEXT, k)
        answer = ask(call)
        version = self.model_version(answer) if answer else ""
        try:
            if chat:
                content = answer["choices"][0]["logprobs"]["content"] if answer else None
                return bool(content and content[0].get("top_logprobs")), version
            tops = answer["choices"][0]["logprobs"]["top_logprobs"] if answer else None
            return bool(tops and tops[0]), version
        except (KeyError, IndexError, TypeError):
            return False, version

    def probe_echo(self, ask: Ask) -> tuple[bool, bool]:
        answer = ask(self.target_call(PROBE_TEXT, "", echo=True))
        if not answer:
            return False, False
        try:
            lp = answer["choices"][0]["logprobs"]
            values = lp["token_logprobs"]
            spelled = "".join(str(t) for t in lp["tokens"]) == PROBE_TEXT
            works = (
                len(values) >= 2
                and values[0] is None
                and all(isinstance(v, float) for v in values[1:])
                and len(lp["text_offset"]) == len(values)
            )
            return works, spelled
        except (KeyError, IndexError, TypeError):
            return False, False

    def probe_prompt_logprobs(self, ask: Ask, chat: bool) -> tuple[bool, bool]:
        if chat:
            answer = ask(self.target_call(("Say yes.", ""), "Yes", echo=False))
            found = answer.get("prompt_logprobs") if answer else None
            works = (
                isinstance(found, list)
                and len(found) >= 2
                and found[0] is None
                and all(isinstance(entry, dict) and entry for entry in found[1:])
            )
            return works, False
        answer = ask(self.target_call(PROBE_TEXT, "", echo=False))
        if not answer:
            return False, False
        try:
            found = answer["choices"][0].get("prompt_logprobs")
            spelled = isinstance(found, list) and _spells(found)
            return isinstance(found, list) and len(found) >= 2 and found[0] is None, spelled
        except (KeyError, IndexError, TypeError, AttributeError):
            return False, False

    def probe_samples(self, ask: Ask, seed: int | None) -> list[str] | None:
        answer = ask(self.text_call(PROBE_TEXT, 4, 1.0, n=2, seed=seed))
        if not answer:
            return None
        return [str(c.get("text", "")) for c in answer.get("choices", [])]

    def models_route(self) -> str:
        return "/v1/models"

    def listed_version(self, listed: dict[str, Any], model_id: str) -> str:
        for entry in listed.get("data") or []:
            if isinstance(entry, dict) and entry.get("id") == model_id and entry.get("root"):
                return str(entry["root"])
        return ""


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


def _prompt_logprob_entries(entries: list[Any]) -> tuple[list[str], list[float | None]]:
    """Tokens and log-probabilities from vLLM's ``prompt_logprobs`` (per position,
    ``{token id: {logprob, decoded_token}}``, the first ``None``; the prompt's own token
    first, as ``prompt_logprobs=0`` asks for it alone)."""
    tokens: list[str] = []
    logprobs: list[float | None] = []
    for position in entries:
        if position is None:
            tokens.append("")
            logprobs.append(None)
            continue
        entry = next(iter(position.values()))
        tokens.append(str(entry.get("decoded_token") or ""))
        logprobs.append(logprob(entry["logprob"], f"prompt token {len(logprobs)}"))
    return tokens, logprobs


def _prompt_tokens(
    answer: dict[str, Any], text: str
) -> tuple[list[str], list[float | None], list[int]]:
    """(tokens, log-probabilities, character offsets) of the prompt, from an ``echo``
    answer (``logprobs``: tokens, token_logprobs, text_offset) or a ``prompt_logprobs``
    one. Offsets are checked against the text (:func:`align`)."""
    choice = answer["choices"][0]
    if choice.get("prompt_logprobs") is not None:
        tokens, logprobs = _prompt_logprob_entries(choice["prompt_logprobs"])
        return tokens, logprobs, align(tokens, text, None)
    lp = choice["logprobs"]
    tokens = [str(t) for t in lp["tokens"]]
    values = [
        None if v is None else logprob(v, f"prompt token {k}")
        for k, v in enumerate(lp["token_logprobs"])
    ]
    # An echo answer with max_tokens > 0 goes on past the prompt: keep the prompt's part.
    offsets = [int(o) for o in lp.get("text_offset") or []]
    n = len(tokens)
    if offsets:
        n = next((k for k, o in enumerate(offsets) if o >= len(text)), len(tokens))
    tokens, values = tokens[:n], values[:n]
    return tokens, values, align(tokens, text, offsets[:n] if offsets else None)


def _chat_prompt_tokens(answer: dict[str, Any], tail: str) -> PromptTokens:
    """A chat completion's ``prompt_logprobs`` (vLLM's, beside the choices). The server
    rendered the chat template itself, so the text is what its tokens spell; it must end
    with ``tail`` (the assistant's answer so far and the target)."""
    tokens, logprobs = _prompt_logprob_entries(answer["prompt_logprobs"])
    text = "".join(tokens)
    if not text.endswith(tail):
        raise ValueError("the prompt tokens do not end with the answer")
    offsets, pos = [], 0
    for token in tokens:
        offsets.append(pos)
        pos += len(token)
    return tokens, logprobs, offsets, text


def align(tokens: list[str], text: str, offsets: list[int] | None) -> list[int]:
    """Character offsets of ``tokens`` in ``text``.

    When the tokens spell the text, their cumulative lengths are the offsets (and must
    equal the server's). A byte-level tokenizer can split a character over tokens,
    which then read as ``"\\ufffd"`` or as nothing: such a run of tokens is placed where
    the next readable token is found, and a boundary inside it is resolved by the
    caller as a straddle.
    """
    if "".join(tokens) == text:
        out, pos = [], 0
        for token in tokens:
            out.append(pos)
            pos += len(token)
        if offsets is not None and offsets != out:
            raise ValueError("the token offsets do not match the tokens")
        return out
    out = []
    pos = 0
    pending: list[int] = []  # tokens waiting for the next readable one
    for k, token in enumerate(tokens):
        if not token or "\ufffd" in token or token.startswith("bytes:"):
            pending.append(k)
            out.append(pos)
            continue
        found = text.find(token, pos)
        if found < 0 or (found > pos and not pending):
            raise ValueError(f"token {k} ({token!r}) is not where the text says")
        if pending and found > pos:
            # the unreadable run covers text[pos:found]: spread it so every token of the
            # run starts inside it (the first at pos).
            for j, index in enumerate(pending):
                out[index] = min(found - 1, pos + j)
        pending = []
        out.append(found)
        pos = found + len(token)
    if pending and pos < len(text):
        for j, index in enumerate(pending):
            out[index] = min(len(text) - 1, pos + j)
    return out
