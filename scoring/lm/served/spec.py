"""What Concordia knows about a served model: where it is and its limits
(:class:`EndpointSpec`), what it can do (:class:`Capabilities`, found by
:mod:`scoring.lm.served.probe`), and what using it cost (:class:`Usage`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

from scoring.lm.served.egress import EgressPolicy
from scoring.lm.served.protocols import REGISTRY

PROTOCOLS = tuple(REGISTRY)  # the wire protocols (:mod:`scoring.lm.served.protocols`)
# the routes to exact label probabilities, as Capabilities names them (a probe can be
# told to ignore them: an endpoint treated as a hosted API's top-k only)
EXACT_ROUTES = ("echo_logprobs", "prompt_logprobs", "chat_prompt_logprobs")
RETRY_REASONS = ("429", "5xx", "timeout", "connect")
# The bounds of an endpoint's settings (forms, API, command and the engine check them):
# a finite value a real deployment needs, never one that holds a worker for ever or
# overflows a cost.
BOUNDS: dict[str, tuple[float, float]] = {
    "max_concurrency": (1, 256),  # requests in flight per client (one io process)
    "rpm": (1, 1_000_000),  # requests a minute
    "tpm": (1, 1_000_000_000),  # tokens a minute
    "timeout": (0.1, 600.0),  # seconds, the whole request: connect, send, every byte back
    "price_in": (0.0, 10_000.0),  # per million tokens
    "price_out": (0.0, 10_000.0),
}
MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # an answer's body, read while it streams


def out_of_bounds(name: str, value: float | None) -> str | None:
    """Why ``value`` is not a valid ``name`` (:data:`BOUNDS`), or None."""
    if value is None:
        return None if name in ("rpm", "tpm") else f"{name} is required"
    low, high = BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"{name} must be a finite number"
    if not low <= value <= high:
        return f"{name} must be between {low:g} and {high:g}, not {value:g}"
    return None


@dataclass(frozen=True)
class EndpointSpec:
    """An OpenAI-compatible endpoint serving one model.

    ``base_url`` is the server's root (``http://host:8000``; a trailing ``/v1`` is
    accepted and dropped). ``max_concurrency`` bounds the requests in flight from one
    client; ``rpm`` and ``tpm`` (requests and tokens per minute, ``None``: no limit) are
    enforced across processes by a shared limiter. ``timeout`` is per request, in
    seconds: the whole exchange (connect, send, headers and every byte of the answer),
    which is read while it streams and refused past ``max_response_bytes``. Prices are
    per million tokens. Each setting is within :data:`BOUNDS`. The API key never
    appears in ``repr``.

    ``egress`` (a researcher's endpoint): where the client may connect
    (:class:`~scoring.lm.served.egress.EgressPolicy`, checked again at connect time);
    None: an operator's endpoint, trusted (it may run on an internal host, and its
    error messages are quoted in ours). ``cache_scope`` names who answers and for whom
    (cache keys hold it, so no other server's answer is ever taken for this one's).
    """

    base_url: str
    model_id: str
    api_key: str | None = field(default=None, repr=False)
    max_concurrency: int = 8
    rpm: int | None = None
    tpm: int | None = None
    timeout: float = 60.0
    price_in: float = 0.0
    price_out: float = 0.0
    protocol: str = "openai"
    model_version: str = ""  # what the probe found the server reports (cache keys hold it)
    egress: EgressPolicy | None = field(default=None, repr=False)
    cache_scope: str = ""
    max_response_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http(s) URL, not {self.base_url!r}")
        if not self.model_id:
            raise ValueError("model_id is required")
        for name in BOUNDS:
            problem = out_of_bounds(name, getattr(self, name))
            if problem:
                raise ValueError(problem)
        if self.max_response_bytes < 1024:
            raise ValueError("max_response_bytes must be at least 1024")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}")

    @property
    def root(self) -> str:
        """``base_url`` without a trailing slash or ``/v1``."""
        url = self.base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    @property
    def host(self) -> str:
        """The host (and port) alone: what provenance records of the URL."""
        return urlsplit(self.base_url).netloc.rsplit("@", 1)[-1]

    @property
    def trusted(self) -> bool:
        """An operator's endpoint: no egress policy, its own error messages quoted."""
        return self.egress is None

    @property
    def limiter_key(self) -> str:
        """What rate limits are shared by: the host and the model."""
        return f"{self.host}/{self.model_id}"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The price of so many tokens, in the prices' currency."""
        return (prompt_tokens * self.price_in + completion_tokens * self.price_out) / 1e6


@dataclass(frozen=True)
class Capabilities:
    """What an endpoint was found to give (:func:`scoring.lm.served.probe.probe`).

    ``chat_top_logprobs``: the largest ``top_logprobs`` a chat completion accepted (0:
    none); ``echo_logprobs``: a completion with ``echo`` returns the prompt's token
    log-probabilities; ``prompt_logprobs``: vLLM's ``prompt_logprobs`` does;
    ``completion_top_logprobs``: the largest ``logprobs`` a plain completion accepted;
    ``sampling_n``: ``n`` > 1 samples in one request; ``seed``: a seed is accepted and
    gives the same samples twice. ``model_version``: the version the server reports of
    its model (a hosted API's ``system_fingerprint``, else the weights a vLLM or SGLang
    server names as the model's ``root``; "" when it reports neither). ``tokens_spell_text``:
    the tokens the server returned for the probe text spell it exactly (the tokenizer
    check: a target's tokens can be taken by character offsets).
    ``chat_prompt_logprobs``: a chat completion continuing the assistant's answer
    returns the prompt's token log-probabilities (vLLM's ``prompt_logprobs``), so a
    rating label after a chat turn is scored exactly.
    """

    chat_top_logprobs: int = 0
    echo_logprobs: bool = False
    prompt_logprobs: bool = False
    sampling_n: bool = False
    seed: bool = False
    completion_top_logprobs: int = 0
    model_version: str = ""
    version_source: str = ""  # "system_fingerprint", "root" or "" (none reported)
    tokens_spell_text: bool = False
    chat_prompt_logprobs: bool = False
    ignored: tuple[str, ...] = ()  # capabilities the probe was told to record as absent
    notes: tuple[str, ...] = ()

    @property
    def target_logprobs(self) -> bool:
        """Can GPTScore run here (prompt log-probabilities by either route)?"""
        return self.echo_logprobs or self.prompt_logprobs

    @property
    def exact_labels(self) -> bool:
        """Can a rating label outside the top-k be scored exactly (on either route)?"""
        return self.target_logprobs or self.chat_prompt_logprobs

    @property
    def version_label(self) -> str:
        """A short form of ``model_version`` for labels: a path's last part, at most 40
        characters ("" when unknown)."""
        return self.model_version.rstrip("/").rsplit("/", 1)[-1][:40]

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "notes": list(self.notes),
            "ignored": list(self.ignored),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capabilities:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["notes"] = tuple(values.get("notes", ()))
        values["ignored"] = tuple(values.get("ignored", ()))
        return cls(**values)


def quantile(sorted_values: list[float], q: float) -> float | None:
    """Linear-interpolation quantile (numpy's default) of already sorted values."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


@dataclass
class Usage:
    """What a client spent: HTTP requests answered, tokens, retries by reason (``429``,
    ``5xx``, ``timeout``, ``connect``), answers taken from the cache, latencies of the
    answered requests (seconds) and their cost. ``implausible``: answers whose reported
    usage could not be true (fewer prompt tokens than the prompt's characters allow,
    more than its bytes), counted at the client's own estimate instead."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RETRY_REASONS, 0))
    cache_hits: int = 0
    failures: int = 0
    implausible: int = 0
    cost: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def add_response(
        self, seconds: float, prompt_tokens: int, completion_tokens: int, cost: float
    ) -> None:
        self.requests += 1
        self.latencies.append(seconds)
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cost += cost

    def add_retry(self, reason: str) -> None:
        self.retries[reason] = self.retries.get(reason, 0) + 1

    @property
    def total_retries(self) -> int:
        return sum(self.retries.values())

    @property
    def p50(self) -> float | None:
        return quantile(sorted(self.latencies), 0.5)

    @property
    def p95(self) -> float | None:
        return quantile(sorted(self.latencies), 0.95)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (latencies as p50/p95, not the list)."""
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "retries": dict(self.retries),
            "cache_hits": self.cache_hits,
            "failures": self.failures,
            "implausible": self.implausible,
            "cost": self.cost,
            "latency_p50": self.p50,
            "latency_p95": self.p95,
        }
