"""Wire protocols behind :attr:`EndpointSpec.protocol <scoring.lm.served.spec.EndpointSpec>`:
one module per protocol, one line each in :data:`REGISTRY` (the engine asks
:func:`protocol_of` and speaks to :class:`~.base.WireProtocol` only)."""

from __future__ import annotations

from scoring.lm.served.protocols.base import Call, WireProtocol
from scoring.lm.served.protocols.openai import OpenAIProtocol
from scoring.lm.served.protocols.openai_batch import OpenAIBatchProtocol, VLLMBatchProtocol

REGISTRY: dict[str, type[WireProtocol]] = {
    "openai": OpenAIProtocol,
    "openai-batch": OpenAIBatchProtocol,
    "vllm-batch": VLLMBatchProtocol,
}


def protocol_of(name: str) -> WireProtocol:
    """The protocol named ``name`` (a ValueError naming the known ones otherwise)."""
    try:
        return REGISTRY[name]()
    except KeyError:
        raise ValueError(f"protocol must be one of {tuple(REGISTRY)}, not {name!r}") from None


__all__ = ["REGISTRY", "Call", "WireProtocol", "protocol_of"]
