"""The evidence of one tuned run, as its page and API resource show it: the tuner and its
options, the candidates tried with their dev figures and the chosen one, on the split's
test documents the start-vs-tuned Δ of the primary statistic with its paired bootstrap
interval by document, the alternative-annotator test of the start and of the tuned judge
there, the overfitting gap (the tune and dev figures minus test) and what
the tuning cost.

Everything is read back from the run's ``config["tuning"]``, which
:func:`~studies.services.tuning.tune.tune_judge` wrote when it measured the run (the Δ
is the one the command printed: nothing is computed again here), and from the run's
``usage`` (what a served judge spent while tuning; empty for a local one)."""

from __future__ import annotations

from typing import Any

from studies.models import MetricRun
from studies.services.tuning.registry import names, tuner
from studies.services.tuning.types import COMMON_OPTIONS

# what a candidate's record holds besides its settings
_NOT_SETTINGS = ("dev", "examples", "instructions")
DELTA_FIELDS = (
    "statistic",
    "start",
    "tuned",
    "delta",
    "low",
    "high",
    "alpha",
    "resamples",
    "n_undefined",
    "n_documents",
    "n_outputs",
)
# the parts of the record the page shows on their own (the rest is the tuner's provenance)
_SHOWN = (
    "tuner",
    "options",
    "start_run",
    "seed",
    "candidates",
    "dev",
    "tuned_on_documents",
    "test",
    "notes",
)


def is_tuned(run: MetricRun) -> bool:
    """The run was made by a tuner (its configuration records the tuning)."""
    return isinstance((run.config or {}).get("tuning"), dict)


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _label(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items()) or "as configured"


def candidates(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every candidate the tuner tried, in its order, with its settings, dev figure and
    whether it was chosen (the first whose settings are the record's). A tuner that
    fits one thing without choosing among candidates (calibration) has one: the fitted
    one, its settings the options as it resolved them, no dev figure."""
    tried = record.get("candidates")
    if not isinstance(tried, list) or not tried:
        options = record.get("options") or {}
        common = {o.name for o in COMMON_OPTIONS}  # the tuning's, not a candidate's
        settings = {
            name: record.get(name, value) for name, value in options.items() if name not in common
        }
        return [
            {
                "label": _label(settings),
                "settings": settings,
                "dev": None,
                "chosen": True,
                "examples": [],
            }
        ]
    out, found = [], False
    for entry in tried:
        settings = {k: v for k, v in entry.items() if k not in _NOT_SETTINGS}
        chosen = not found and all(record.get(k) == v for k, v in settings.items())
        found = found or chosen
        shown = {
            "label": _label(settings),
            "settings": settings,
            "dev": _number(entry.get("dev")),
            "chosen": chosen,
            "examples": [int(pk) for pk in entry.get("examples") or []],
        }
        if isinstance(entry.get("instructions"), dict):  # the instruction search's texts
            shown["instructions"] = {str(k): str(v) for k, v in entry["instructions"].items()}
        out.append(shown)
    return out


def delta(record: dict[str, Any]) -> dict[str, Any] | None:
    """The test evidence as measured at tuning time (None where none was recorded)."""
    test = record.get("test")
    if not isinstance(test, dict):
        return None
    found = {k: test.get(k) for k in DELTA_FIELDS}
    alpha = test.get("alpha")
    found["level"] = None if alpha is None else round((1 - float(alpha)) * 100)
    return found


def alt_test(record: dict[str, Any]) -> dict[str, Any] | None:
    """The alternative-annotator test before and after tuning on the test documents, as
    recorded at tuning time (None: not recorded)."""
    test = record.get("test")
    found = test.get("alt_test") if isinstance(test, dict) else None
    if not isinstance(found, dict):
        return None
    return {key: found.get(key) for key in ("documents", "start", "tuned")}  # in this order


def gap(record: dict[str, Any]) -> dict[str, float | None]:
    """The chosen judge's figure on the tune (and dev) outputs, on test, and each minus
    test: how much of what tuning found does not carry over to documents it never saw."""
    test = record.get("test") if isinstance(record.get("test"), dict) else {}
    tuned = _number(test.get("tuned"))
    tune = _number(test.get("tune_value"))
    dev_record = record.get("dev") if isinstance(record.get("dev"), dict) else {}
    dev = _number(dev_record.get("chosen"))
    return {
        "tune": tune,
        "dev": dev,
        "test": tuned,
        "tune_gap": _number(test.get("gap")),  # as measured: tune minus test
        "dev_gap": None if dev is None or tuned is None else dev - tuned,
    }


def cost(run: MetricRun, record: dict[str, Any]) -> dict[str, Any]:
    """What tuning spent: a served judge's requests, tokens and cost (the run's usage, as
    the tuning left it); a local judge's prompts only (no cost); nothing for a tuner that
    prompts no judge (calibration maps the stored scores)."""
    usage = run.usage or {}
    requests = record.get("judge_requests")
    found: dict[str, Any] = {
        "source": None,
        "judge_requests": None if requests is None else int(requests),
        "requests": None,
        "prompt_tokens": None,
        "completion_tokens": None,
        "tokens": None,
        "cache_hits": None,
        "cost": None,
    }
    if usage:
        prompt, completion = (
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
        )
        return found | {
            "source": "served",
            "requests": int(usage.get("requests", 0)),
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "tokens": prompt + completion,
            "cache_hits": int(usage.get("cache_hits", 0)),
            "cost": float(usage.get("cost", 0.0)),
        }
    if requests:
        found["source"] = "local"
    return found


def tuning_evidence(run: MetricRun) -> dict[str, Any] | None:
    """The run's tuning evidence (None for a run no tuner made)."""
    if not is_tuned(run):
        return None
    record: dict[str, Any] = run.config["tuning"]
    name = str(record.get("tuner", ""))
    start_pk = record.get("start_run")
    start = MetricRun.objects.filter(pk=start_pk).only("label").first() if start_pk else None
    tried = candidates(record)
    dev = record.get("dev") if isinstance(record.get("dev"), dict) else None
    return {
        "run": run.pk,
        "label": run.label,
        "tuner": name,
        "tuner_label": tuner(name).label if name in names() else name,
        "options": dict(record.get("options") or {}),
        "seed": record.get("seed"),
        "start_run": start_pk,
        "start_label": start.label if start else None,
        "split": run.config.get("split"),
        "tuned_on_documents": record.get("tuned_on_documents"),
        "candidates": tried,
        "chosen": next((c for c in tried if c["chosen"]), None),
        "dev": dev,
        "test": delta(record),
        "alt_test": alt_test(record),
        "gap": gap(record),
        "cost": cost(run, record),
        "notes": [str(n) for n in record.get("notes") or []],
        "provenance": {k: v for k, v in record.items() if k not in _SHOWN},
    }
