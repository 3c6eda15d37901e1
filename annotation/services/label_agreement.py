"""Agreement of a campaign's annotators on a binary or categorical aspect: Cohen's κ when
two annotators answered it, Fleiss' κ when more did, and Krippendorff's nominal α, each
with a bootstrap interval over items; and Cohen's κ of every pair of annotators on the
items both answered (in place of a Likert aspect's Spearman ρ, which labels have not).

The statistics are :func:`scoring.stats.labels.annotator_reliability`'s: the items are
its "documents", so the bootstrap draws items. κ is unweighted for unordered labels and
quadratic-weighted for ordered categorical ones (as on the report card); α is nominal
whatever the order. A statistic with no value says why (``reason``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scoring.stats.label_tables import LabelSet
from scoring.stats.labels import annotator_reliability
from scoring.stats.table_intervals import Estimate
from studies.models import Aspect

NO_ANSWERS = "no answers yet"


def label_set(aspect: Aspect) -> LabelSet:
    """The aspect's labels in their declared order (a judgment stores the position)."""
    return LabelSet(
        tuple(str(label) for label in aspect.labels),
        positive=aspect.positive or None,
        ordered=aspect.ordered,
    )


def kappa_name(labels: LabelSet, n_annotators: int) -> str:
    """Cohen's κ for two annotators, Fleiss' κ for more (or fewer: then it has no value)."""
    weighted = labels.kappa_weights != "identity"
    if n_annotators == 2:
        return "Cohen's κ (quadratic weights)" if weighted else "Cohen's κ"
    return "Fleiss' κ"


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def estimate(found: Estimate) -> dict[str, Any]:
    """An estimate as the cached result keeps it (None for NaN)."""
    return {
        "value": _num(found.value),
        "low": _num(found.low),
        "high": _num(found.high),
        "reason": found.reason,
    }


def label_reliability(
    aspect: Aspect,
    data: np.ndarray,
    names: list[str],
    rng: np.random.Generator,
    resamples: int,
) -> dict[str, Any]:
    """The aspect's agreement entry from ``data`` (annotators × items, NaN = no answer;
    a value is a label's position) whose rows are the annotators ``names``."""
    labels = label_set(aspect)
    codes = np.where(np.isin(data, np.arange(labels.q)), data, np.nan)  # stray values: none
    n_annotators = int(np.isfinite(codes).any(axis=1).sum())
    if codes.shape[1] == 0:  # no answer yet: nothing to bootstrap
        kappa = alpha_found = Estimate(math.nan, math.nan, math.nan, 0.0, reason=NO_ANSWERS)
        n_items, pairs = 0, ()
    else:
        found = annotator_reliability(
            codes, np.arange(codes.shape[1]), labels, rng=rng, resamples=resamples
        )
        n_items, pairs, alpha_found = found.n_items, found.pairs, found.krippendorff_alpha
        # two annotators: their pair's κ (Cohen's); more: Fleiss'
        two = n_annotators == 2 and bool(pairs)
        kappa = pairs[0].kappa if two else found.fleiss_kappa
    alpha = estimate(alpha_found)
    return {
        "code": aspect.code,
        "name": aspect.name,
        "kind": aspect.kind,
        "labels": list(labels.name(k) for k in range(labels.q)),
        "level": "nominal",
        "alpha": alpha["value"],
        "low": alpha["low"],
        "high": alpha["high"],
        "alpha_reason": alpha["reason"],
        "kappa": {"name": kappa_name(labels, n_annotators), **estimate(kappa)},
        "n_annotators": n_annotators,
        "n_units": n_items,
        "n_answers": int(np.isfinite(codes).sum()),
        "pairs": [
            {"a": names[p.first], "b": names[p.second], "n": p.n_items, **estimate(p.kappa)}
            for p in pairs
        ],
        "others": [],
    }
