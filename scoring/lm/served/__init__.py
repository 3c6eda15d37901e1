"""Served models (an OpenAI-compatible endpoint: vLLM, SGLang, a hosted API) behind the
same protocols as the local engine, so every LM metric runs on them unchanged.

* :mod:`.spec`: the endpoint, its capabilities, the usage;
* :mod:`.egress`: where a researcher's endpoint may be reached, checked at connect time;
* :mod:`.limits`: rate limits and slots shared across processes (memory, file, Redis);
* :mod:`.cache`: the response cache;
* :mod:`.errors`: what can go wrong, each message safe to show;
* :mod:`.answers`: reading answers within bounds (size, JSON, usage);
* :mod:`.client`: the HTTP engine (concurrency, limits, retries, cache, cost);
* :mod:`.backend`: :class:`ServedModel`, the scoring protocols on top;
* :mod:`.labels`: label probabilities (G-Eval on a label aspect): top-k, else exact;
* :mod:`.probe`: what an endpoint can do;
* :mod:`.local_server`: a real vLLM server on this machine (tests, benchmarks).

Pure Python: no Django, no torch.
"""

from scoring.lm.served import labels as labels  # registers the served label reader
from scoring.lm.served.backend import CapabilityMissing, ServedModel, chat_prompt
from scoring.lm.served.cache import MemoryCache, ResponseCache, cache_key
from scoring.lm.served.client import ServedClient
from scoring.lm.served.egress import EgressPolicy, EgressRefused
from scoring.lm.served.errors import (
    BadAnswer,
    CostCapReached,
    EndpointBlocked,
    EndpointError,
    EndpointUnavailable,
    ModelChanged,
    RequestRefused,
)
from scoring.lm.served.limits import (
    FileLimiter,
    FileSlots,
    Limiter,
    MemoryLimiter,
    MemorySlots,
    RedisLimiter,
    RedisSlots,
    Slots,
)
from scoring.lm.served.probe import probe
from scoring.lm.served.protocols.base import Call
from scoring.lm.served.spec import Capabilities, EndpointSpec, Usage

__all__ = [
    "BadAnswer",
    "Call",
    "Capabilities",
    "CapabilityMissing",
    "CostCapReached",
    "EgressPolicy",
    "EgressRefused",
    "EndpointBlocked",
    "EndpointError",
    "EndpointSpec",
    "EndpointUnavailable",
    "FileLimiter",
    "FileSlots",
    "Limiter",
    "MemoryCache",
    "MemoryLimiter",
    "MemorySlots",
    "ModelChanged",
    "RedisLimiter",
    "RedisSlots",
    "RequestRefused",
    "ResponseCache",
    "ServedClient",
    "ServedModel",
    "Slots",
    "Usage",
    "cache_key",
    "chat_prompt",
    "probe",
]
