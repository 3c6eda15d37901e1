"""Reading what a server answers, within bounds: the body while it streams (a size cap,
bounded decompression), strict JSON (no NaN or Infinity), the usage it reports (checked,
and replaced by the client's own estimate when it cannot be true), ``Retry-After`` and
an operator's server's error message."""

from __future__ import annotations

import email.utils
import json
import math
import time
import zlib
from collections.abc import Mapping
from typing import Any

import httpx

from scoring.lm.served.errors import BadAnswer

MAX_MESSAGE = 300  # characters of an operator's server's error message kept in ours


def prompt_size(body: Mapping[str, Any]) -> tuple[int, int]:
    """(characters, UTF-8 bytes) of a request's prompt or chat messages."""
    prompt = body.get("prompt", "")
    texts = [prompt if isinstance(prompt, str) else json.dumps(prompt)]
    messages = body.get("messages", ())
    texts += [str(m.get("content", "")) for m in messages if isinstance(m, dict)]
    return sum(len(t) for t in texts), sum(len(t.encode("utf-8", "replace")) for t in texts)


def estimate_tokens(body: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens a request may use, for limits and the cost cap: the
    prompt's characters / 3 (few tokenizers do better than 3 characters a token on
    English) and the requested ``max_tokens`` times ``n``."""
    chars, _ = prompt_size(body)
    n = int(body.get("n") or 1)
    out = body.get("max_tokens")
    completion = (16 if out is None else int(out)) * n
    return chars // 3 + 1, completion


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date), or ``None``."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def server_message(content: bytes) -> str:
    """The error text a server put in its answer (OpenAI's ``{"error": {"message"}}``,
    vLLM's ``{"message"}``, or the raw body), cut short."""
    text = content.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            text = str(error["message"])
        elif isinstance(error, str):
            text = error
        elif data.get("message"):
            text = str(data["message"])
        elif data.get("detail"):
            text = str(data["detail"])
    text = " ".join(text.split())
    return text[:MAX_MESSAGE] + ("…" if len(text) > MAX_MESSAGE else "")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(content: bytes) -> Any:
    """``content`` parsed as JSON, refusing NaN and Infinity (which JSON has not, and
    which no database column takes); ValueError or RecursionError when it is not."""
    return json.loads(content, parse_constant=_no_constant)


class TooLarge(Exception):
    """The answer's body passed the size cap."""


class Unreadable(Exception):
    """The answer's body is in an encoding that cannot be read (or is broken)."""


async def read_capped(response: httpx.Response, cap: int, *, truncate: bool = False) -> bytes:
    """The response's body, decoded (identity, gzip or deflate), read while it streams:
    past ``cap`` bytes :class:`TooLarge` (or, with ``truncate``, the first ``cap``).
    Decompression is bounded as well, so a small compressed bomb stays small. An
    encoding other than those: :class:`Unreadable` (with ``truncate``, no body)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap and not truncate:
        raise TooLarge
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        if truncate:
            return b""
        raise Unreadable
    decoder = zlib.decompressobj(wbits=47) if encoding not in ("", "identity") else None
    out = bytearray()
    async for chunk in response.aiter_raw():
        if decoder is not None:
            try:
                piece = decoder.decompress(chunk, cap + 1 - len(out))
            except zlib.error as exc:
                raise Unreadable from exc
            if decoder.unconsumed_tail:
                piece += b"?"  # more than the cap decodes from this chunk
        else:
            piece = chunk
        out += piece
        if len(out) > cap:
            if truncate:
                return bytes(out[:cap])
            raise TooLarge
    return bytes(out)


def counted_usage(usage: Any, body: Mapping[str, Any], what: str) -> tuple[int, int, int]:
    """(prompt, completion) tokens to count for an answer to ``body``, and 1 when the
    reported usage was implausible. A usage that is not an object, or a count that is not
    a whole number ≥ 0, makes the answer a :class:`~.errors.BadAnswer`; a count that
    cannot be true (fewer prompt tokens than the prompt's characters / 64, more than its
    bytes + 4096; more completion tokens than asked + 64) or none at all is replaced by
    the client's own estimate (:func:`estimate_tokens`), so a server cannot lower what
    the cost cap counts."""
    guess_prompt, guess_completion = estimate_tokens(body)
    if usage is None:
        return guess_prompt, guess_completion, 0
    if not isinstance(usage, dict):
        raise BadAnswer(f"{what}: the answer's usage is not an object")
    counts: dict[str, int | None] = {}
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and value >= 0 and value == int(value))
        ):
            raise BadAnswer(
                f"{what}: the answer's usage.{name} is not a token count (a whole number "
                "of at least 0)"
            )
        counts[name] = None if value is None else int(value)
    chars, size = prompt_size(body)
    most = 10**9 if body.get("max_tokens") is None else guess_completion + 64
    prompt, completion = counts["prompt_tokens"], counts["completion_tokens"]
    odd = 0
    if prompt is None or not chars // 64 <= prompt <= size + 4096:
        odd, prompt = int(prompt is not None), guess_prompt
    if completion is None or completion > most:
        odd, completion = max(odd, int(completion is not None)), guess_completion
    return prompt, completion, odd
