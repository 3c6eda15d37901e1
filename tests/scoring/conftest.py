"""Fixtures of the HF wrapper's tests (``hf_tiny``): tiny random models, built once per
session, and torch on one thread. torch loads only when a test asks for them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread; more only contend with other processes."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """GPT-2 shape: no BOS token, learned positions, 128-token context."""
    from tests.scoring.hf_tiny import build_gpt2

    return build_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Llama shape (the default model's): BOS token, RoPE, grouped-query attention."""
    from tests.scoring.hf_tiny import build_llama

    return build_llama(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="session")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """T5 shape: prompt to the encoder, target (with its closing </s>) to the decoder."""
    from tests.scoring.hf_tiny import build_t5

    return build_t5(tmp_path_factory.mktemp("t5"))


@pytest.fixture(params=["gpt2", "llama"])
def causal_dir(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_dir"))
