"""Tuning one judge run: the tuner reads the split's tune/dev labels through
:class:`~studies.services.tuning.labels.TuneLabels` (never a test document's), its scores
become a new run with full provenance, and the new run is measured against the start
on the test documents only: the Δ of the primary statistic (Spearman ρ at sample level
for a scale aspect, MCC for a binary one) with a paired bootstrap interval by document,
and the overfitting gap (the tuned judge on tune minus on test). The request's ``gold``
option chooses what the tuner learns from (the humans', or the study's adjudicated values
on tune/dev documents where there are some: :meth:`TuneLabels.gold`); the test Δ is
always measured against the humans' values, so tunings on either gold compare."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scoring.stats import Coefficient, Level
from scoring.stats.tuned_delta import Delta, correlation_delta, mcc_delta
from studies.models import Aspect, MetricRun, Output, Study, StudySplit
from studies.services.analysis.report_card.card import rows_on_documents
from studies.services.analysis.report_card.held_out import held_out
from studies.services.analysis.report_card.params import CardParams
from studies.services.tuning.derived import (
    run_scores,
    save_derived_run,
    spent_between,
    usage_of,
    write_derived_scores,
)
from studies.services.tuning.labels import TuneLabels, held_out_labels, positive
from studies.services.tuning.primary import is_binary as _binary
from studies.services.tuning.primary import statistic as _statistic
from studies.services.tuning.registry import tuner as find_tuner
from studies.services.tuning.splits import split_for_dataset
from studies.services.tuning.types import TuneContext, Tuner


@dataclass(frozen=True)
class Tuning:
    """A tuned run and its evidence on test (``gap``: the tuned judge's statistic on
    the tune documents minus on test)."""

    run: MetricRun
    delta: Delta
    tune_value: float
    gap: float


def measure(
    split: StudySplit,
    aspect: Aspect,
    start: dict[int, float],
    tuned: dict[int, float],
    *,
    seed: int = 0,
    resamples: int = 1000,
) -> Delta:
    """Tuned minus start on the split's test outputs that both scored."""
    human = held_out_labels(split, aspect, "test")
    ids = sorted(pk for pk in human if pk in start and pk in tuned)
    if len(ids) < 2:
        raise ValueError("fewer than two judged test outputs scored by both runs")
    docs = dict(Output.objects.filter(pk__in=ids).values_list("pk", "document_id"))
    keys = [docs[pk] for pk in ids]
    rng = np.random.default_rng(seed)
    if _binary(aspect):

        def side(values: dict[int, float]) -> list[float]:
            return [positive(aspect, values[pk]) for pk in ids]

        return mcc_delta(rng, keys, side(start), side(tuned), side(human), resamples=resamples)
    return correlation_delta(
        rng,
        keys,
        [start[pk] for pk in ids],
        [tuned[pk] for pk in ids],
        [human[pk] for pk in ids],
        level=Level.SAMPLE,
        coefficient=Coefficient.SPEARMAN,
        resamples=resamples,
    )


def checked_request(
    run: MetricRun, tuner_name: str, options: dict[str, Any] | None, study: Study | None
) -> tuple[Tuner, dict[str, Any], StudySplit]:
    """A tuning request checked: the run succeeded, the tuner (KeyError naming the known
    ones), its options with defaults (ValueError) and the split it tunes on (a
    :class:`~.splits.SplitError`)."""
    if run.status != MetricRun.Status.SUCCEEDED:
        raise ValueError(f"run {run.pk} has not succeeded")
    tuner = find_tuner(tuner_name)
    return tuner, tuner.resolve(options or {}), split_for_dataset(run.dataset_id, study)


def tune_judge(
    run: MetricRun,
    aspect: Aspect,
    tuner_name: str,
    *,
    study: Study | None = None,
    options: dict[str, Any] | None = None,
    seed: int = 0,
    resamples: int = 1000,
    by: Any = None,
    model_factory: Callable[[MetricRun], Any] | None = None,
    into: MetricRun | None = None,
    report: Callable[[int, int], None] | None = None,
    usage_before: dict[str, Any] | None = None,
) -> Tuning:
    """Tune ``run`` on ``aspect`` with the named tuner and measure it on test
    (``model_factory``: the judge's model for a tuner that prompts it again; default the
    run's own). The tuned run is a new one, or ``into`` (a tuning job's run, made when
    it was asked for: its scores and configuration are written, its status is left to
    the job); ``report`` is told (done, total) as the tuner goes. ``usage_before``: the
    start run's usage when the tuning began (a job's first attempt: a resumed job counts
    what every attempt spent), else read now."""
    tuner, resolved, split = checked_request(run, tuner_name, options, study)
    start = run_scores(run)
    labels = TuneLabels(split, aspect, gold=resolved["gold"])
    # a served judge prompted again adds to its run's usage
    before = usage_of(run) if usage_before is None else usage_before
    result = tuner.tune(
        TuneContext(
            run=run,
            aspect=aspect,
            scores=start,
            labels=labels,
            options=resolved,
            rng=np.random.default_rng(seed),
            seed=seed,
            model_factory=model_factory,
            report=report,
        )
    )
    spent = spent_between(before, usage_of(run)) if run.config.get("endpoint") else {}
    delta = measure(split, aspect, start, result.scores, seed=seed, resamples=resamples)
    tune_ids = [pk for pk in labels.outputs("tune") if pk in result.scores]
    tune_human = labels.gold(tune_ids)
    tune_docs = dict(Output.objects.filter(pk__in=tune_ids).values_list("pk", "document_id"))
    tune_value = _statistic(
        aspect,
        [tune_docs[pk] for pk in tune_ids],
        [result.scores[pk] for pk in tune_ids],
        [tune_human[pk] for pk in tune_ids],
    )
    evidence = {**asdict(delta), "tune_value": tune_value, "gap": tune_value - delta.tuned}
    config = {
        "tuning": {
            "tuner": tuner.name,
            "options": resolved,
            "start_run": run.pk,
            "seed": seed,
            **result.provenance,
            "tuned_on_documents": len(set(tune_docs.values())),
            "gold_labels": labels.gold_summary(),
            "test": evidence,
        },
        "split": split.pk,
    }
    if into is None:
        new = save_derived_run(
            run.dataset,
            metric=f"tuned:{tuner.name}",
            label=f"{run.label} [{tuner.name}]",
            aspect=aspect,
            config=config,
            scores=result.scores,
            by=by,
            usage=spent,
        )
    else:  # the job's run keeps what was asked (its request) beside what was found
        new = into
        kept = {k: v for k, v in (into.config or {}).items() if k not in config}
        write_derived_scores(new, aspect=aspect, config={**kept, **config}, scores=result.scores)
        MetricRun.objects.filter(pk=new.pk).update(usage=spent)
        new.usage = spent
    alt = alt_test_before_after(new, run, aspect, seed=seed, resamples=resamples)
    if alt is not None:
        new.config["tuning"]["test"]["alt_test"] = alt
        new.save(update_fields=["config"])
    return Tuning(run=new, delta=delta, tune_value=tune_value, gap=tune_value - delta.tuned)


ALT_TEST_FIELDS = ("passed", "winning_rate", "advantage_probability", "epsilon", "n_items")


def alt_test_before_after(
    tuned: MetricRun, start: MetricRun, aspect: Aspect, *, seed: int = 0, resamples: int = 1000
) -> dict[str, Any] | None:
    """The report card's alternative-annotator test of the start run and of the tuned
    run, both on the split's test documents (the card's own rows, computed there): did
    tuning change whether the judge can replace an annotator? None where the split was
    replaced since. Each side: the verdict's figures, or the problem that kept the test
    from being run (too few annotators or items on test) with its message."""
    found = held_out(tuned)
    if found is None or found.replaced:
        return None
    params = CardParams(resamples=resamples, seed=seed).on_split(found.split)
    rows = rows_on_documents(
        tuned.dataset, params, found.test_keys, aspect.code, [start.pk, tuned.pk]
    )
    out: dict[str, Any] = {"documents": len(found.test_keys)}
    for side, run in (("start", start), ("tuned", tuned)):
        alt = (rows.get(run.pk) or {}).get("alt_test")
        if not isinstance(alt, dict):
            out[side] = {"problem": "no_scores", "message": "no score on the test documents"}
            continue
        out[side] = {k: alt.get(k) for k in ALT_TEST_FIELDS} | {
            "problem": alt.get("problem"),
            "message": alt.get("message") or "",
        }
    return out
