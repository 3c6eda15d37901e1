"""Copied into the vLLM virtualenv that :mod:`scoring.lm.served.local_server` installs (as
``concordia_vllm_idle.py``, loaded by a ``.pth`` file in every Python of that virtualenv,
vLLM's spawned engine and worker processes included); nothing here imports Concordia.

It does nothing unless ``$CONCORDIA_VLLM_SPIN_S`` is set. Then the readers of vLLM's
shared-memory message queues (the worker waiting for the engine's next step, the engine
waiting for the worker's answer) spin at most that many seconds after a read before
they sleep on their notification socket, instead of vLLM's 1 s.

Why: on a CPU, each idle wait of those 1 s is a full core busy with ``sched_yield``. A
client that sends a request, computes for a moment and sends the next (the tests, a
run's worker beside the server on a 2-core machine) keeps the server's worker at 100%
of a core while it does 30% of that in work (``bench/vllm_idle.py`` measures it). The
answers are the same: only how a reader waits for the next message changes (a socket
wake-up costs tens of microseconds).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from types import ModuleType
from typing import Any

TARGET = "vllm.distributed.device_communicators.shm_broadcast"
VARIABLE = "CONCORDIA_VLLM_SPIN_S"


def shorten(module: ModuleType, seconds: float) -> bool:
    """Make ``seconds`` the default spin of ``module.SpinCondition`` (vLLM's own 1 s);
    False, changing nothing, when this vLLM's SpinCondition is not the one expected."""
    condition = getattr(module, "SpinCondition", None)
    init = getattr(condition, "__init__", None)
    if init is None:
        return False
    parameters = list(inspect.signature(init).parameters.values())
    if not parameters or parameters[-1].name != "busy_loop_s" or init.__defaults__ is None:
        return False
    init.__defaults__ = (*init.__defaults__[:-1], seconds)
    return True


class SpinHook(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when vLLM imports :data:`TARGET`, it wraps the module's
    loader so that :func:`shorten` runs once the module is executed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != TARGET:
            return None
        sys.meta_path.remove(self)  # once; and the real finders answer below
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if spec is None or not isinstance(loader, importlib.machinery.SourceFileLoader):
            return spec
        seconds, execute = self.seconds, loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            shorten(module, seconds)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Put the hook in front of the import system when ``$CONCORDIA_VLLM_SPIN_S`` is a
    number of seconds (an unreadable value leaves vLLM as it is)."""
    value = os.environ.get(VARIABLE, "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return
    if seconds >= 0 and TARGET not in sys.modules:
        sys.meta_path.insert(0, SpinHook(seconds))
