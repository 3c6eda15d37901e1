"""Which runner runs a metric: the one registry of :class:`~.types.Runner` by name.

The built-in runners are registered below, one line per runner module; another app
registers its own in ``AppConfig.ready()`` (the learned metric: ``learned.apps``), so
the registry is complete whenever Django's apps are ready. Everything that lists
metrics is derived from here: :data:`METRICS`, :data:`METRIC_GROUPS`, the form's and
API's choices, the command's choices, queue routing, the per-aspect rule, page labels;
and everything that lists run options (the form's and the API's fields, the command's
flags) from :func:`run_options`: every run's, then each runner's declared ``options``.
Adding a metric touches its own module and one line here."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from studies.services.options import Option
from studies.services.runs.baselines import RUNNERS as BASELINES
from studies.services.runs.geval import RUNNER as GEVAL
from studies.services.runs.gptscore import RUNNER as GPTSCORE
from studies.services.runs.options import COMMON
from studies.services.runs.pairwise import RUNNER as PAIRWISE
from studies.services.runs.types import ABOUT_PAGE, Queue, Runner, RunRequest
from studies.services.runs.yesno import RUNNER as YESNO

_runners: list[Runner] = []  # in registration order: the order of every list of metrics
_by_name: dict[str, Runner] = {}


def register(runner: Runner) -> None:
    """Add ``runner`` under each of its names (registering it again changes nothing); a
    name another runner serves, a group name that is a metric's, or an option declared
    otherwise than under the same name before, is refused."""
    if runner in _runners:
        return
    declared = {o.name: o for o in run_options()}
    differ = [o.name for o in runner.options if declared.get(o.name, o) != o]
    if differ:
        raise ValueError(f"options declared otherwise before: {', '.join(differ)}")
    carried = {f.name for f in dataclasses.fields(RunRequest)}
    uncarried = [o.name for o in runner.options if o.field not in carried]
    if uncarried:
        raise ValueError(f"options RunRequest does not carry: {', '.join(uncarried)}")
    taken = {*_by_name, *groups()}
    clash = [n for n in (*runner.names, *([runner.group] if runner.group else [])) if n in taken]
    if clash or len(set(runner.names)) != len(runner.names):
        raise ValueError(f"metric names already registered: {', '.join(clash) or runner.names}")
    _runners.append(runner)
    _by_name.update(dict.fromkeys(runner.names, runner))


def unregister(runner: Runner) -> None:
    """Remove ``runner`` (tests register toy metrics and take them out again)."""
    if runner in _runners:
        _runners.remove(runner)
        for name in runner.names:
            _by_name.pop(name, None)


def runner(metric: str) -> Runner | None:
    """The runner of ``metric``, or None for a name no runner knows."""
    return _by_name.get(metric)


def runners() -> dict[str, Runner]:
    """Every metric name with its runner, in registration order."""
    return {name: r for r in _runners for name in r.names}


def metrics() -> tuple[str, ...]:
    """Every metric name a request may ask for (a group's members included)."""
    return tuple(runners())


def groups() -> dict[str, tuple[str, ...]]:
    """The group names (``rouge``): a request for one starts a run per member."""
    return {r.group: r.names for r in _runners if r.group}


def metric_choices() -> list[tuple[str, str]]:
    """The run form's and the API's metric choices: (name or group, label)."""
    return [choice for r in _runners for choice in r.choices()]


def queue_for(metric: str, config: Mapping[str, Any] | None = None) -> Queue:
    """The Celery queue of a run of ``metric``: ``io`` when its configuration names a
    served endpoint (a light worker that loads no model), else as its runner declares
    (language models: ``gpu``)."""
    found = runner(metric)
    if config and config.get("endpoint") and found is not None and found.served is not None:
        return "io"
    return found.queue if found else "gpu"


def per_aspect(metric: str) -> bool:
    """Whether ``metric`` starts one run per aspect and needs at least one."""
    found = runner(metric)
    return bool(found and found.per_aspect)


def per_aspect_metrics() -> tuple[str, ...]:
    """The metrics that start one run per aspect."""
    return tuple(name for name, r in runners().items() if r.per_aspect)


def label_of(metric: str) -> str:
    """What pages call ``metric`` (an imported run's metric: its own name)."""
    found = runner(metric)
    return found.label_of(metric) if found else metric


def page_of(metric: str) -> str:
    """The run page's part on a run of ``metric``."""
    found = runner(metric)
    return found.page if found else ABOUT_PAGE


def run_options() -> tuple[Option, ...]:
    """Every run option, once: every run's (:data:`~.options.COMMON`), then each runner's
    own in registration order (an option several runners read is declared once and
    listed where first read)."""
    found: dict[str, Option] = {}
    for option in (*COMMON, *(o for r in _runners for o in r.options)):
        found.setdefault(option.name, option)
    return tuple(found.values())


def option_help(option: Option) -> str:
    """An option's help, led by the runners that read it (none: every run's), as the
    form, the API and the command say it."""
    users = labels_using(option.name)
    return f"{' and '.join(users)}: {option.help}" if users else option.help


def request_of(values: Mapping[str, Any], **fixed: Any) -> RunRequest:
    """The request the options' ``values`` (by name) ask for: an option absent or None
    takes its declared default; ``fixed`` are the request's other fields (metric,
    aspect …)."""
    given = {o.field: values.get(o.name) for o in run_options()}
    defaults = {o.field: o.default for o in run_options()}
    return RunRequest(**{k: defaults[k] if v is None else v for k, v in given.items()}, **fixed)


def labels_using(field: str) -> list[str]:
    """The labels of the runners that read the run form's ``field`` (``aspects``: the
    per-aspect ones)."""
    return [r.label for r in _runners if field in r.fields or field == "aspects" and r.per_aspect]


def held_out_docs(trained: int, dataset: str) -> tuple[str, ...]:
    """The documents trained model ``trained`` held out on ``dataset`` (for scoring
    any metric on a learned metric's test set), from the runner that trains models."""
    for r in _runners:
        docs = r.test_docs(trained, dataset) if r.test_docs else ()
        if docs:
            return docs
    return ()


class _Metrics(Sequence[str]):
    """:func:`metrics`, read on each use: a runner registered later is in it."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return metrics()[index]

    def __len__(self) -> int:
        return len(metrics())

    def __repr__(self) -> str:
        return repr(metrics())


class _Groups(Mapping[str, tuple[str, ...]]):
    """:func:`groups`, read on each use."""

    def __getitem__(self, group: str) -> tuple[str, ...]:
        return groups()[group]

    def __iter__(self) -> Iterator[str]:
        return iter(groups())

    def __len__(self) -> int:
        return len(groups())

    def __repr__(self) -> str:
        return repr(groups())


METRICS: Sequence[str] = _Metrics()
METRIC_GROUPS: Mapping[str, tuple[str, ...]] = _Groups()

register(GPTSCORE)
register(GEVAL)
register(PAIRWISE)
register(YESNO)
for _baseline in BASELINES:  # ROUGE, BLEU/chrF, BERTScore, length, random
    register(_baseline)
