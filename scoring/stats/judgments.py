"""Several annotators' judgments of one output, reduced to one human score."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import FloatArray, Groups, IntArray


class Aggregate(Enum):
    """How an output's judgments become one score."""

    MEAN = "mean"
    MEDIAN = "median"


@dataclass(frozen=True, eq=False)
class AggregatedJudgments:
    """One score per output: ``values[k]`` aggregates ``n_judgments[k]`` judgments of
    output ``outputs[k]``; NaN where none was left (all missing or excluded)."""

    outputs: npt.NDArray[Any]
    values: FloatArray
    n_judgments: IntArray
    n_excluded: int


def aggregate_judgments(
    output_key: npt.ArrayLike,
    annotator_key: npt.ArrayLike,
    value: npt.ArrayLike,
    *,
    method: Aggregate = Aggregate.MEAN,
    exclude_annotators: Collection[Any] = frozenset(),
    outputs: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
) -> AggregatedJudgments:
    """Aggregate judgments (one row per output × annotator) to one score per output.

    Judgments by an annotator in ``exclude_annotators`` (flagged, say, for low
    agreement) are left out and counted in ``n_excluded``; NaN judgments are ignored.
    With ``outputs`` the result is aligned with it (Lists in, aligned lists out), and
    a judgment of an output not listed there is an error; otherwise the outputs are
    the sorted distinct keys.

    ``weights`` (one per judgment, finite and ≥ 0; e.g. each annotator's competence)
    turn the mean into a weighted mean, Σ w·v / Σ w; an output whose remaining
    judgments all weigh 0 gets NaN. The median takes no weights.
    """
    keys = np.asarray(output_key)
    annotators = np.asarray(annotator_key)
    scores = np.asarray(value, dtype=np.float64)
    if not keys.ndim == annotators.ndim == scores.ndim == 1 or not (
        keys.size == annotators.size == scores.size
    ):
        raise ValueError("output_key, annotator_key and value must be 1-D and aligned")
    excluded = (
        np.isin(annotators, np.asarray(list(exclude_annotators)))
        if exclude_annotators
        else np.zeros(keys.size, dtype=bool)
    )
    if outputs is None:
        listed, codes = np.unique(keys, return_inverse=True)
    else:
        listed = np.asarray(outputs)
        if not _distinct_keys(listed):
            raise ValueError("outputs must not repeat a key")
        if keys.shape == listed.shape and np.array_equal(keys, listed):
            codes = np.arange(listed.size)  # one judgment per output, in their order
        else:
            sorter = np.argsort(listed, kind="stable")
            found = np.searchsorted(listed, keys, sorter=sorter)
            found = np.minimum(found, max(listed.size - 1, 0))
            codes = sorter[found] if listed.size else found
            if keys.size and (listed.size == 0 or np.any(listed[codes] != keys)):
                raise ValueError("a judgment refers to an output not in outputs")
    weight = _weights(weights, scores.size, method)
    keep = ~excluded & ~np.isnan(scores)
    groups = Groups.from_codes(codes[keep], listed.size)
    kept = scores[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        if method is Aggregate.MEAN and weight is not None:
            total = np.bincount(groups.codes, weights=weight[keep], minlength=listed.size)
            weighted = np.bincount(groups.codes, weights=weight[keep] * kept, minlength=listed.size)
            values = np.where(total > 0, weighted / total, np.nan)
        elif method is Aggregate.MEAN:
            values = np.bincount(groups.codes, weights=kept, minlength=listed.size) / groups.sizes
        else:
            values = _grouped_median(kept, groups)
    return AggregatedJudgments(
        outputs=listed,
        values=np.where(groups.sizes > 0, values, np.nan),
        n_judgments=groups.sizes,
        n_excluded=int(np.count_nonzero(excluded)),
    )


def _distinct_keys(keys: npt.NDArray[Any]) -> bool:
    """Whether no key repeats: one pass when they are sorted (a frame's output ids are),
    else by sorting them."""
    if keys.size < 2:
        return True
    if keys.dtype.kind in "iuf" and bool(np.all(keys[1:] > keys[:-1])):
        return True
    return bool(np.unique(keys).size == keys.size)


def _weights(weights: npt.ArrayLike | None, size: int, method: Aggregate) -> FloatArray | None:
    if weights is None:
        return None
    weight = np.asarray(weights, dtype=np.float64)
    if weight.shape != (size,):
        raise ValueError("weights must be aligned with the judgments")
    if not np.all(np.isfinite(weight) & (weight >= 0)):
        raise ValueError("weights must be finite and ≥ 0")
    if method is not Aggregate.MEAN:
        raise ValueError("weights apply to the mean only")
    return weight


def _grouped_median(values: FloatArray, groups: Groups) -> FloatArray:
    # Sort by (group, value); a group's median is its middle element, or the mean of
    # its two middle elements.
    ordered = values[np.lexsort((values, groups.codes))]
    sizes, starts = groups.sizes, groups.offsets[:-1]
    last = max(ordered.size - 1, 0)
    low = np.minimum(starts + (sizes - 1) // 2, last)
    high = np.minimum(starts + sizes // 2, last)
    if ordered.size == 0:
        return np.full(sizes.size, np.nan)
    return np.asarray((ordered[low] + ordered[high]) / 2.0, dtype=np.float64)
