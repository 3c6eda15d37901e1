"""Batch runs by file: a served model's requests written to a request file instead of
sent, and answered later from the batch processor's output file.

:class:`BatchClient` stands where :class:`~scoring.lm.served.client.ServedClient` does
(the same request keys, the same response cache) but never sends: a request is answered
from the cache or from the answers read from an output file, and every other one is
recorded as :attr:`~BatchClient.pending` and comes back as :class:`AwaitingBatch`, that
request's own error. So the scoring code runs unchanged: an output whose requests are
all answered is scored exactly as online, the others wait. A request's ``custom_id`` is
its cache key, so the answers read are stored under the keys the online path reads too.

The file format is the batch protocol's (:class:`~.protocols.openai_batch.OpenAIBatchProtocol`):
it only wraps the bodies the online protocol builds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.lm.served.cache import ResponseCache
from scoring.lm.served.client import Outcome, ServedClient
from scoring.lm.served.errors import BadAnswer, RequestRefused
from scoring.lm.served.protocols import protocol_of
from scoring.lm.served.protocols.base import Call
from scoring.lm.served.protocols.openai_batch import (
    BatchLineError,
    OpenAIBatchProtocol,
    Refusal,
)
from scoring.lm.served.spec import EndpointSpec

AWAITING = "awaiting its batch answer"  # in the error of every output still waiting
FORMATS = ("openai-batch", "vllm-batch")


class AwaitingBatch(BadAnswer):
    """A request whose answer has not come back from a batch file (yet): to the scoring
    code, that request's own error (as an unusable answer is)."""


def batch_format(name: str) -> OpenAIBatchProtocol:
    """The batch file format named ``name`` (one of :data:`FORMATS`)."""
    found = protocol_of(name) if name in FORMATS else None
    if not isinstance(found, OpenAIBatchProtocol):
        raise ValueError(f"the batch format must be one of {FORMATS}, not {name!r}")
    return found


@dataclass
class Results:
    """What an output file held: the answers by ``custom_id``, the lines that cannot be
    used (by ``custom_id``: why), and the line numbers with no readable ``custom_id``."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: dict[str, Refusal] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    unreadable: list[int] = field(default_factory=list)


def read_results(lines: Iterable[str], fmt: OpenAIBatchProtocol) -> Results:
    """Read an output file's lines (blank ones skipped). A ``custom_id`` answered twice
    keeps its usable answer."""
    found = Results()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            custom_id, answer = fmt.read_line(text)
        except BatchLineError:
            found.unreadable.append(number)
            continue
        if isinstance(answer, str):
            if custom_id not in found.answers and custom_id not in found.refused:
                found.failed[custom_id] = answer
        elif isinstance(answer, Refusal):
            if custom_id not in found.answers:
                found.refused[custom_id] = answer
                found.failed.pop(custom_id, None)
        else:
            found.answers[custom_id] = answer
            found.failed.pop(custom_id, None)
            found.refused.pop(custom_id, None)
    return found


class BatchClient(ServedClient):
    """A client that answers from the cache and from ``answers`` (an output file's, by
    ``custom_id``), and records every other request in :attr:`pending` instead of
    sending it. The answers it uses are written to the cache; a request the results
    refused for good (``refused``) is that request's :class:`RequestRefused`, as online."""

    def __init__(
        self,
        spec: EndpointSpec,
        *,
        answers: Mapping[str, dict[str, Any]] | None = None,
        refused: Mapping[str, Refusal] | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        super().__init__(spec, cache=cache)
        self.answers = dict(answers or {})
        self.refused = dict(refused or {})
        self.pending: dict[str, Call] = {}  # custom_id → the request (its body names the model)
        self.used: set[str] = set()  # custom_ids answered from ``answers``

    def run(self, calls: Sequence[Call], *, use_cache: bool = True) -> list[Outcome]:
        if not calls:
            return []
        keys: list[str] = []
        unique: dict[str, Call] = {}
        for call in calls:
            body = self.wire.with_model(call.body, self.spec.model_id)
            keys.append(self.key_of(call.route, body))
            unique.setdefault(keys[-1], Call(call.route, body))
        found: dict[str, Outcome] = {}
        if self.cache is not None and use_cache:
            found.update(self.cache.get_many(list(unique)))
        fresh = {k: self.answers[k] for k in unique if k not in found and k in self.answers}
        if fresh and self.cache is not None:
            self.cache.set_many(fresh)
        found.update(fresh)
        self.used.update(fresh)
        for answer in found.values():
            if isinstance(answer, dict):
                self._note(answer)
        for key, call in unique.items():
            if key not in found and key in self.refused:
                refusal = self.refused[key]
                found[key] = RequestRefused(
                    f"the batch refused the request ({key}): {refusal.status}: {refusal.message}",
                    refusal.status,
                )
            elif key not in found:
                self.pending[key] = call
                found[key] = AwaitingBatch(f"{AWAITING} ({key})")
        return [found[key] for key in keys]

    def get(self, route: str) -> dict[str, Any] | None:
        return None  # nothing is sent

    def request_lines(self, fmt: OpenAIBatchProtocol) -> list[str]:
        """The request file's lines: one per pending request, by ``custom_id``."""
        return [fmt.request_line(key, call) for key, call in sorted(self.pending.items())]


__all__ = [
    "AWAITING",
    "FORMATS",
    "AwaitingBatch",
    "BatchClient",
    "Results",
    "batch_format",
    "read_results",
]
