"""``judge_gate`` on a label aspect: the primary statistic of its kind (MCC on a binary
aspect, Cohen's κ on a categorical one, as the report card's verdict) with its
bootstrap interval by document, against ``--min-lower-bound``; the annotators' own
beside it."""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats import Groups, draw_resamples
from scoring.stats.labels import label_agreement
from studies.models import MetricRun
from studies.services.analysis.ceiling import judgment_table
from studies.services.analysis.label_cells import (
    PRIMARY,
    annotator_matrix,
    judge_problem,
    label_codes,
    label_set,
)
from studies.services.analysis.report_card.thresholds import (
    declared_split,
    split_params,
    threshold_labels,
)

AGAINST = (
    "comparing with an accepted run is for scale aspects; on a label aspect the gate "
    "checks the lower bound of MCC (binary) or κ (categorical): give --min-lower-bound"
)


def primary_name(kind: str) -> str:
    return PRIMARY[kind][1]


def label_check(
    run: MetricRun,
    frame: Any,
    min_lower_bound: float | None,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[str, list[str], list[str]]:
    """The shown statistic, the reasons the run fails and what it passed, for ``run``
    (column of the frame) on the frame's one label aspect."""
    aspect = frame.aspects[0]
    labels, (key, name) = label_set(aspect), PRIMARY[aspect.kind]
    table, names = judgment_table(run.dataset, frame, set())
    humans, _ = annotator_matrix(table, names, frame, aspect)
    humans = label_codes(humans, labels.q)
    judge = frame.metrics[:, frame.run_index(run.pk)]
    problem, cut = judge_problem(judge, labels.q), ""
    if problem and labels.is_binary:  # a numeric judge: labels through a threshold, as the card
        study, _ = split_params(run.dataset)
        split = declared_split(frame.doc_keys, study, seed)
        judge, info = threshold_labels(
            judge, humans, frame.doc_codes, frame.output_ids, labels, split
        )
        problem = (
            None
            if info["n_outputs_evaluated"]
            else f"no threshold labels an output on {split.name}"
        )
        cut = (
            f"; labels by a threshold chosen on {split.name}, evaluated on "
            f"{info['n_documents_evaluated']} other documents"
        )
    if problem:
        return name, [problem], []
    docs = Groups.from_keys(frame.doc_codes)
    plan = draw_resamples(np.random.default_rng(seed), docs, resamples=resamples)
    found = label_agreement(judge, humans, docs, labels, plan=plan, confidence=confidence)
    value, human = getattr(found.judge, key), getattr(found.human, key)
    if not np.isfinite(value.value):
        return name, [f"its {name} is undefined: {value.reason or 'no item both labelled'}"], []
    shown = (
        f"{name} {value.value:.3f} [{value.low:.3f}, {value.high:.3f}] ({confidence * 100:g}% "
        f"bootstrap over documents, {found.n_items} items; the annotators' own "
        f"{human.value:.3f}{cut})"
    )
    if min_lower_bound is not None and not value.low >= min_lower_bound:
        return (
            name,
            [f"the lower bound {value.low:.3f} of its {shown} is below {min_lower_bound:g}"],
            [],
        )
    suffix = f", lower bound ≥ {min_lower_bound:g}" if min_lower_bound is not None else ""
    return name, [], [shown + suffix]
