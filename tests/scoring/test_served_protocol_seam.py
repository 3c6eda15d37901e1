"""The wire-protocol seam (issue 37, item 3): the engine (``backend``, ``probe``,
``client``) speaks to a protocol class only, so the OpenAI wire format lives in its
protocol module and a second protocol is one module plus one registry line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from scoring.lm.served import EndpointSpec
from scoring.lm.served.protocols import REGISTRY, WireProtocol, protocol_of
from scoring.lm.served.protocols.openai import OpenAIProtocol
from scoring.lm.served.protocols.openai_batch import OpenAIBatchProtocol, VLLMBatchProtocol

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ("backend.py", "probe.py", "client.py")
# the OpenAI wire format's routes and field names (requests and answers)
OPENAI_NAMES = {
    "/v1/completions",
    "/v1/chat/completions",
    "/v1/models",
    "choices",
    "message",
    "messages",
    "content",
    "text",
    "logprobs",
    "top_logprobs",
    "token_logprobs",
    "tokens",
    "text_offset",
    "echo",
    "prompt_logprobs",
    "decoded_token",
    "logprob",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "n",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "system_fingerprint",
    "model",
    "root",
    "data",
    "continue_final_message",
    "add_generation_prompt",
    "role",
    "prompt",
    "index",
}
# Concordia's own record, spelled like the wire's: the provenance's keys
ALLOWED = {"backend.py": {"top_logprobs", "usage"}}


def _strings(path: Path) -> set[str]:
    """The string constants a module's code uses (its docstrings left out)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


@pytest.mark.parametrize("module", ENGINE)
def test_the_engine_names_no_openai_field(module: str) -> None:
    path = ROOT / "scoring" / "lm" / "served" / module
    found = sorted(_strings(path) & OPENAI_NAMES - ALLOWED.get(module, set()))
    assert not found, f"{module} names the OpenAI wire format: {found}"
    # and none of the protocol module's own names comes in by import
    source = path.read_text()
    assert "protocols.openai" not in source and "OpenAIProtocol" not in source


def test_the_openai_module_holds_them() -> None:
    names = _strings(ROOT / "scoring" / "lm" / "served" / "protocols" / "openai.py")
    assert {"/v1/completions", "/v1/chat/completions", "top_logprobs", "echo"} <= names


def test_a_protocol_is_one_registry_line_and_the_spec_takes_its_name() -> None:
    assert {
        "openai": OpenAIProtocol,
        "openai-batch": OpenAIBatchProtocol,
        "vllm-batch": VLLMBatchProtocol,
    } == REGISTRY
    assert all(issubclass(cls, WireProtocol) and cls.name == name for name, cls in REGISTRY.items())
    assert isinstance(protocol_of("openai"), OpenAIProtocol)
    with pytest.raises(ValueError, match="protocol must be one of"):
        protocol_of("smoke-signals")
    assert EndpointSpec("http://x", "m", protocol="openai").protocol == "openai"
    with pytest.raises(ValueError):
        EndpointSpec("http://x", "m", protocol="smoke-signals")
