"""The hook that shortens vLLM's idle spin (scoring/lm/served/vllm_idle.py), on modules
shaped as vLLM's is and as it might become; the real vLLM virtualenv's check is in
tests/scoring/test_served_engine.py."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest

from scoring.lm.served import vllm_idle


def module_with(init_source: str) -> ModuleType:
    module = ModuleType("shm_broadcast")
    exec(f"class SpinCondition:\n    {init_source}\n        pass\n", module.__dict__)
    return module


def test_the_spin_default_is_shortened_and_nothing_else_changes() -> None:
    module = module_with("def __init__(self, is_reader, context, notify_address, busy_loop_s=1):")
    assert vllm_idle.shorten(module, 0.05)
    init = module.SpinCondition.__init__
    assert init.__defaults__ == (0.05,)
    assert init.__code__.co_varnames[:5] == (
        "self",
        "is_reader",
        "context",
        "notify_address",
        "busy_loop_s",
    )


@pytest.mark.parametrize(
    "init_source",
    [
        "def __init__(self, is_reader, context, notify_address, spin_s=1):",  # renamed
        "def __init__(self, is_reader, context, busy_loop_s):",  # no default
    ],
)
def test_another_vllms_spin_condition_is_left_as_it_is(init_source: str) -> None:
    module = module_with(init_source)
    before = module.SpinCondition.__init__.__defaults__
    assert not vllm_idle.shorten(module, 0.05)
    assert module.SpinCondition.__init__.__defaults__ == before
    assert not vllm_idle.shorten(ModuleType("no_spin_condition"), 0.05)


@pytest.mark.parametrize(("value", "hooked"), [("0.05", True), ("", False), ("soon", False)])
def test_the_hook_is_installed_only_for_a_number_of_seconds(
    monkeypatch: pytest.MonkeyPatch, value: str, hooked: bool
) -> None:
    monkeypatch.setenv(vllm_idle.VARIABLE, value)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    vllm_idle.install()
    hooks = [f for f in sys.meta_path if isinstance(f, vllm_idle.SpinHook)]
    assert len(hooks) == hooked
    if hooked:
        assert hooks[0].seconds == 0.05
        assert hooks[0].find_spec("json") is None  # any other module: not its business
