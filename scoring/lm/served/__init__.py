"""Served models (an OpenAI-compatible endpoint: vLLM, SGLang, a hosted API) behind the
same protocols as the local engine, so every LM metric runs on them unchanged.

* :mod:`.spec`: the endpoint, its capabilities, the usage;
* :mod:`.limits`: rate limits shared across processes (memory, file, Redis);
* :mod:`.cache`: the response cache;
* :mod:`.client`: the HTTP engine (concurrency, limits, retries, cache, cost);
* :mod:`.backend`: :class:`ServedModel`, the scoring protocols on top;
* :mod:`.probe`: what an endpoint can do;
* :mod:`.local_server`: a real vLLM server on this machine (tests, benchmarks).

Pure Python: no Django, no torch.
"""

from scoring.lm.served.backend import CapabilityMissing, ServedModel, chat_prompt
from scoring.lm.served.cache import MemoryCache, ResponseCache, cache_key
from scoring.lm.served.client import (
    Call,
    CostCapReached,
    EndpointError,
    EndpointUnavailable,
    ModelChanged,
    RequestRefused,
    ServedClient,
)
from scoring.lm.served.limits import FileLimiter, Limiter, MemoryLimiter, RedisLimiter
from scoring.lm.served.probe import probe
from scoring.lm.served.spec import Capabilities, EndpointSpec, Usage

__all__ = [
    "Call",
    "Capabilities",
    "CapabilityMissing",
    "CostCapReached",
    "EndpointError",
    "EndpointSpec",
    "EndpointUnavailable",
    "FileLimiter",
    "Limiter",
    "MemoryCache",
    "MemoryLimiter",
    "ModelChanged",
    "RedisLimiter",
    "RequestRefused",
    "ResponseCache",
    "ServedClient",
    "ServedModel",
    "Usage",
    "cache_key",
    "chat_prompt",
    "probe",
]
