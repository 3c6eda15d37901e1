"""Which module runs a metric: one table from a metric's name to its runner. A runner
has ``build(dataset, request, user)``, which validates a request and freezes the run's
configuration (a :class:`~studies.services.runs.core.Plan`), and ``prepare(run, todo,
model_factory)``, which loads what the run scores with. Adding a metric touches its
own module and one line here."""

from __future__ import annotations

from types import ModuleType


def runners() -> dict[str, ModuleType]:
    """Every metric name with its runner module."""
    from studies.services.runs import baselines, geval, gptscore, learned

    return {
        "gptscore": gptscore,
        "geval": geval,
        **dict.fromkeys(learned.METRICS, learned),
        **dict.fromkeys(baselines.METRICS, baselines),
    }


def runner(metric: str) -> ModuleType | None:
    """The runner of ``metric``, or None for a name no runner knows."""
    return runners().get(metric)
