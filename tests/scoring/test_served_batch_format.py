"""The batch file format and the batch client, without a server: request lines wrap the
online protocol's bodies (vLLM's dialect turns a completion into the chat completion
that renders it verbatim); results lines are read by ``custom_id``, damaged ones named;
the client answers from a results file and the cache and records the rest, sending
nothing."""

from __future__ import annotations

import json

import pytest

from scoring.lm.served import EndpointSpec, MemoryCache, RequestRefused
from scoring.lm.served.batch import (
    AWAITING,
    AwaitingBatch,
    BatchClient,
    batch_format,
    read_results,
)
from scoring.lm.served.protocols import protocol_of
from scoring.lm.served.protocols.base import Call
from scoring.lm.served.protocols.openai_batch import VERBATIM_TEMPLATE, Refusal

SPEC = EndpointSpec("http://127.0.0.1:9", "judge")
ANSWER = {"choices": [{"index": 0, "text": "4"}], "usage": {"prompt_tokens": 3}}


def output_line(custom_id: str, body: object, status: int = 200) -> str:
    response = {"status_code": status, "request_id": "r", "body": body}
    return json.dumps({"id": "b", "custom_id": custom_id, "response": response, "error": None})


def test_a_request_line_wraps_the_online_body_exactly() -> None:
    online = protocol_of("openai")
    call = online.target_call("The capital is", " Paris", echo=False)
    body = online.with_model(call.body, "judge")
    line = json.loads(batch_format("openai-batch").request_line("k1", Call(call.route, body)))
    assert line == {"custom_id": "k1", "method": "POST", "url": call.route, "body": body}


def test_vllms_dialect_sends_a_completion_as_a_verbatim_chat_completion() -> None:
    vllm = batch_format("vllm-batch")
    echo = vllm.target_call("The capital is", " Paris", echo=True)
    line = json.loads(vllm.request_line("k", echo))
    assert line["url"] == "/v1/chat/completions"
    body = line["body"]
    assert body["messages"] == [{"role": "assistant", "content": "The capital is Paris"}]
    assert body["chat_template"] == VERBATIM_TEMPLATE and body["continue_final_message"]
    assert body["prompt_logprobs"] == 0 and "echo" not in body and "prompt" not in body
    chat = vllm.next_token_call(("Rate it.", "Score: "), 5)
    assert json.loads(vllm.request_line("c", chat))["body"] == chat.body  # chat: as online
    # its answer's prompt_logprobs are read where a completion has them
    answer = vllm.answer_of({"choices": [{"index": 0}], "prompt_logprobs": [None]})
    assert answer["choices"][0]["prompt_logprobs"] == [None]


def test_results_are_read_by_custom_id_and_damaged_lines_are_named() -> None:
    fmt = batch_format("openai-batch")
    good = output_line("a", ANSWER)
    lines = [
        good,
        good[: len(good) // 2],  # cut short: its id still readable
        output_line("b", ANSWER)[:5],  # no id left
        output_line("c", {"error": "too long"}, status=400),  # refused for good
        output_line("f", {"error": "busy"}, status=503),  # to be asked again
        output_line("d", None),
        json.dumps({"custom_id": "e", "response": None, "error": {"message": "boom"}}),
        "",
    ]
    found = read_results(lines, fmt)
    assert found.answers == {"a": ANSWER}  # a's good line wins over its damaged copy
    assert set(found.failed) == {"d", "e", "f"} and "status 503" in found.failed["f"]
    assert set(found.refused) == {"c"} and found.refused["c"].status == 400
    assert "boom" in found.failed["e"] and found.unreadable == [3]
    assert "not valid JSON" in read_results(lines[1:2], fmt).failed["a"]


def test_the_client_answers_from_the_results_and_the_cache_and_records_the_rest() -> None:
    cache = MemoryCache()
    wire = protocol_of("openai")
    calls = [Call("/v1/completions", {"prompt": p, "max_tokens": 1}) for p in "xyzw"]
    probe = BatchClient(SPEC)
    keys = [probe.key_of(c.route, wire.with_model(c.body, "judge")) for c in calls]
    cache.set(keys[0], ANSWER)
    client = BatchClient(
        SPEC,
        answers={keys[1]: {**ANSWER, "id": "from-file"}},
        refused={keys[3]: Refusal(400, "too long")},
        cache=cache,
    )
    outcomes = client.run([*calls, calls[2]])
    assert outcomes[0] == ANSWER and outcomes[1]["id"] == "from-file"
    assert isinstance(outcomes[2], AwaitingBatch) and AWAITING in str(outcomes[2])
    assert isinstance(outcomes[3], RequestRefused) and outcomes[3].status == 400
    assert not outcomes[3].endpoint_wide  # that output's error, as online
    assert isinstance(outcomes[4], AwaitingBatch)  # the same request, recorded once
    assert list(client.pending) == [keys[2]] and client.used == {keys[1]}
    assert cache.get(keys[1]) is not None  # an answer read is kept for the next step
    (line,) = client.request_lines(batch_format("openai-batch"))
    assert json.loads(line)["custom_id"] == keys[2]
    assert json.loads(line)["body"] == {"model": "judge", "prompt": "z", "max_tokens": 1}
    with pytest.raises(ValueError, match="batch format"):
        batch_format("openai")
