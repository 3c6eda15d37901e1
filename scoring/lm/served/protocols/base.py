"""The wire-protocol seam: what the engine (``backend``, ``probe``, ``client``) asks of
a protocol, in Concordia's own terms. One class per protocol implements it (its module
in this package, one line in :data:`scoring.lm.served.protocols.REGISTRY`); the engine
never names a field of any protocol's requests or answers.

A request is a :class:`Call` (a route and a JSON body); what comes back is read by the
same protocol. A chat turn is passed as ``(message, answer so far)``: the protocol
decides how a server is asked to continue the assistant's answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Chat = tuple[str, str]  # (the user's message, the start of the assistant's answer)
# the probe's question: the answer, or None when the endpoint refused the request
Ask = Callable[["Call"], "dict[str, Any] | None"]
# a prompt's tokens, their log-probabilities (None: unscored, the first) and the text
# they spell, with each token's character offset in it
PromptTokens = tuple[list[str], list[float | None], list[int], str]


@dataclass(frozen=True)
class Call:
    """One request: the route under the endpoint's root and the JSON body (without the
    model id, which the protocol adds: :meth:`WireProtocol.with_model`)."""

    route: str
    body: dict[str, Any]


class WireProtocol(ABC):
    """How one wire protocol asks an endpoint for what the scoring protocols need, and
    reads its answers. Reading methods raise KeyError, IndexError, TypeError,
    ValueError or AttributeError on an answer they cannot read."""

    name: str = ""
    # where the model's version was found (Capabilities.version_source): in an answer,
    # or in the list of served models
    VERSION_IN_ANSWER: str = "answer"
    VERSION_LISTED: str = "models list"

    # -- requests -----------------------------------------------------------------------

    @abstractmethod
    def with_model(self, body: Mapping[str, Any], model_id: str) -> dict[str, Any]:
        """``body`` naming the model it is for."""

    @abstractmethod
    def next_token_call(self, prompt: str | Chat, k: int) -> Call:
        """The top-``k`` candidates of the token after ``prompt`` (greedy, one token)."""

    @abstractmethod
    def target_call(self, prompt: str | Chat, target: str, *, echo: bool) -> Call:
        """The prompt log-probabilities of ``prompt`` continued by ``target`` (``echo``:
        by echoing the prompt, else by the server's prompt log-probabilities)."""

    @abstractmethod
    def text_call(
        self,
        prompt: str | Chat,
        max_new_tokens: int,
        temperature: float,
        *,
        n: int = 1,
        seed: int | None = None,
    ) -> Call:
        """A continuation of ``prompt`` (``n`` samples; ``seed`` when given)."""

    # -- answers ------------------------------------------------------------------------

    @abstractmethod
    def texts(self, answer: dict[str, Any]) -> list[str]:
        """The answer's texts, in order."""

    @abstractmethod
    def candidates(self, answer: dict[str, Any]) -> dict[str, float]:
        """The next token's candidates and their log-probabilities."""

    @abstractmethod
    def prompt_tokens(
        self, answer: dict[str, Any], prompt: str | Chat, target: str
    ) -> PromptTokens:
        """The prompt tokens of an answer to :meth:`target_call`; the text they spell
        ends with ``target``."""

    @abstractmethod
    def usage(
        self, answer: dict[str, Any], body: Mapping[str, Any], what: str
    ) -> tuple[int, int, int]:
        """(prompt, completion) tokens to count for the answer to ``body``, and 1 when
        the reported usage was implausible (replaced by :meth:`estimate_tokens`)."""

    @abstractmethod
    def estimate_tokens(self, body: Mapping[str, Any]) -> tuple[int, int]:
        """(prompt, completion) tokens a request may use (limits, the cost cap)."""

    @abstractmethod
    def model_version(self, answer: dict[str, Any]) -> str:
        """The model version an answer reports ("" when none)."""

    @abstractmethod
    def model_reported(self, answer: dict[str, Any]) -> str:
        """The model an answer says it came from ("" when none)."""

    @abstractmethod
    def error_message(self, content: bytes) -> str:
        """The message of an error answer's body, cut short."""

    # -- the probe ----------------------------------------------------------------------

    @abstractmethod
    def probe_top_k(self, ask: Ask, chat: bool, k: int) -> tuple[bool, str]:
        """Does a request for ``k`` candidates get them (and the version it reports)?"""

    @abstractmethod
    def probe_echo(self, ask: Ask) -> tuple[bool, bool]:
        """(echo gives prompt log-probabilities, its tokens spell the probe text)."""

    @abstractmethod
    def probe_prompt_logprobs(self, ask: Ask, chat: bool) -> tuple[bool, bool]:
        """(the server's prompt log-probabilities are given, their tokens spell it)."""

    @abstractmethod
    def probe_samples(self, ask: Ask, seed: int | None) -> list[str] | None:
        """Two samples in one request (None: refused)."""

    @abstractmethod
    def models_route(self) -> str:
        """The route listing the served models."""

    @abstractmethod
    def listed_version(self, listed: dict[str, Any], model_id: str) -> str:
        """The version of ``model_id`` in the models list ("" when none)."""
