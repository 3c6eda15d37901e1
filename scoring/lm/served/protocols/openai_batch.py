"""The OpenAI Batch file format: a run's requests written as one JSON line each
(``custom_id``, ``method``, ``url``, ``body``), answered by a batch processor (a
provider's batch job, or ``vllm run-batch`` on one's own GPUs), and its output file read
back line by line (``custom_id``, ``response.status_code``, ``response.body``,
``error``).

The request bodies are the online protocol's own (:class:`OpenAIBatchProtocol` is an
:class:`~.openai.OpenAIProtocol`): a batch answer is read exactly as the online answer.
:class:`VLLMBatchProtocol` is the dialect of vLLM's ``run-batch``, which answers
``/v1/chat/completions`` only: a completions request (GPTScore's prompt
log-probabilities) goes there as a chat completion continuing one message through a
verbatim chat template (``run-batch --trust-request-chat-template``), so the model sees
the same text and tokens; its ``prompt_logprobs`` are read as the completion's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from scoring.lm.served.protocols.base import Call
from scoring.lm.served.protocols.openai import CHAT, COMPLETIONS, OpenAIProtocol

# the chat template that renders one message as its text, nothing around it
VERBATIM_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"
# a damaged line's custom_id, when it can still be read
_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]{1,200})"')
# statuses that answer a request for good (the request is at fault: a prompt past the
# context, a parameter the server does not take), as online; any other is asked again
REFUSED = (400, 413, 422)


@dataclass(frozen=True)
class Refusal:
    """An output line refusing its request for good (a status in :data:`REFUSED`)."""

    status: int
    message: str


# an answer line: (custom_id, the answer's body, its refusal, or why it has no answer)
Line = tuple[str, "dict[str, Any] | Refusal | str"]


class BatchLineError(ValueError):
    """An output line with no readable ``custom_id``."""


class OpenAIBatchProtocol(OpenAIProtocol):
    """The online OpenAI protocol's requests and answers, in the Batch file format."""

    name = "openai-batch"

    def request_line(self, custom_id: str, call: Call) -> str:
        """One line of the request file (``call.body`` names the model already)."""
        line = {"custom_id": custom_id, "method": "POST", "url": call.route, "body": call.body}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))

    def read_line(self, text: str) -> Line:
        """(``custom_id``, the answer) of one output line, or (``custom_id``, why it is
        unusable: an error line, a status other than 200, a damaged line whose id can
        still be read); :class:`BatchLineError` when no ``custom_id`` can be read."""
        try:
            line = json.loads(text)
        except ValueError:
            found = _CUSTOM_ID.search(text)
            if found is None:
                raise BatchLineError(
                    "a line that is not JSON, with no readable custom_id"
                ) from None
            return found.group(1), "its line is not valid JSON"
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str) or not custom_id:
            raise BatchLineError("a line without a custom_id")
        if line.get("error"):
            return custom_id, f"the batch reported an error: {_short(line['error'])}"
        response = line.get("response")
        if not isinstance(response, dict):
            return custom_id, "its line has no response"
        status = response.get("status_code")
        body = response.get("body")
        if status in REFUSED:
            return custom_id, Refusal(int(status), _short(body))
        if status != 200:
            return custom_id, f"status {status}: {_short(body)}"
        if not isinstance(body, dict) or not body.get("choices"):
            return custom_id, "its response has no body with choices"
        return custom_id, self.answer_of(body)

    def answer_of(self, body: dict[str, Any]) -> dict[str, Any]:
        """A response body as the online answer to the same request."""
        return body


class VLLMBatchProtocol(OpenAIBatchProtocol):
    """vLLM's ``run-batch`` dialect: every request a chat completion (see the module)."""

    name = "vllm-batch"

    def request_line(self, custom_id: str, call: Call) -> str:
        if call.route == COMPLETIONS:
            call = Call(CHAT, as_chat(call.body))
        return super().request_line(custom_id, call)

    def answer_of(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat answer's ``prompt_logprobs`` (beside its choices) also where a
        completion has them (in its choice)."""
        found = body.get("prompt_logprobs")
        choice = body["choices"][0]
        if found is not None and isinstance(choice, dict) and choice.get("prompt_logprobs") is None:
            choice["prompt_logprobs"] = found
        return body


def as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A completions body as the chat completion that renders its prompt verbatim: the
    prompt is the one message, continued; echo is asked as prompt log-probabilities,
    candidates as ``top_logprobs``."""
    out = {k: v for k, v in body.items() if k not in ("prompt", "echo", "logprobs")}
    out.update(
        messages=[{"role": "assistant", "content": body["prompt"]}],
        chat_template=VERBATIM_TEMPLATE,
        continue_final_message=True,
        add_generation_prompt=False,
    )
    if body.get("echo"):
        out.update(prompt_logprobs=0, max_tokens=1, temperature=0)
    elif isinstance(body.get("logprobs"), int) and "prompt_logprobs" not in body:
        out.update(logprobs=True, top_logprobs=body["logprobs"])
    return out


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:200]
