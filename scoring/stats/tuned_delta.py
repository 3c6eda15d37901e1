"""The gain of a tuned judge over its start on held-out documents: the difference of
one statistic (a correlation with the humans; MCC for a binary aspect) with a paired
percentile bootstrap interval by document (both judges recomputed on the same
resampled documents, as :func:`scoring.stats.significance.paired_bootstrap_test`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.correlation import correlate
from scoring.stats.draws import Resamples, draw_resamples
from scoring.stats.ranking import FloatArray, Groups
from scoring.stats.resampling import bootstrap_distribution
from scoring.stats.settings import Coefficient, Level


@dataclass(frozen=True)
class Delta:
    """``tuned − start`` of ``statistic`` with its ``1 − alpha`` interval."""

    statistic: str
    start: float
    tuned: float
    delta: float
    low: float
    high: float
    alpha: float
    resamples: int
    n_undefined: int
    n_documents: int
    n_outputs: int


def _percentiles(values: FloatArray, alpha: float) -> tuple[float, float, int]:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return float("nan"), float("nan"), int(values.size)
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high), int(values.size - finite.size)


def _mcc_resampled(plan: Resamples, predicted: FloatArray, truth: FloatArray) -> FloatArray:
    """Binary MCC on each resample, from per-document confusion counts."""
    counts = plan.doc_counts
    assert counts is not None
    n = plan.docs.n_groups
    codes = plan.docs.codes
    cells = [
        np.bincount(codes, weights=((predicted == p) & (truth == t)).astype(float), minlength=n)
        for p, t in ((1, 1), (0, 0), (1, 0), (0, 1))
    ]
    tp, tn, fp, fn = (counts @ cell for cell in cells)
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    safe = np.where(denominator > 0, denominator, 1.0)
    out: FloatArray = np.where(denominator > 0, (tp * tn - fp * fn) / np.sqrt(safe), 0.0)
    return out


def mcc_delta(
    rng: np.random.Generator,
    docs: npt.ArrayLike,
    start: npt.ArrayLike,
    tuned: npt.ArrayLike,
    truth: npt.ArrayLike,
    *,
    resamples: int = 1000,
    alpha: float = 0.05,
) -> Delta:
    """Δ MCC of two 0/1 predictions against 0/1 truth (pairs with a NaN left out)."""
    a, b, y = (np.asarray(v, dtype=np.float64) for v in (start, tuned, truth))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(y)
    keys = np.asarray(docs)[keep]
    a, b, y = a[keep], b[keep], y[keep]
    groups = Groups.from_keys(keys)
    plan = draw_resamples(rng, groups, resamples=resamples)
    full = Resamples(plan.unit, groups, None, np.arange(groups.n_groups)[None, :], None)
    value_a, value_b = (float(_mcc_resampled(full, p, y)[0]) for p in (a, b))
    low, high, undefined = _percentiles(
        _mcc_resampled(plan, b, y) - _mcc_resampled(plan, a, y), alpha
    )
    return _delta("mcc", (value_a, value_b), (low, high, undefined), alpha, resamples, groups, keep)


def correlation_delta(
    rng: np.random.Generator,
    docs: npt.ArrayLike,
    start: npt.ArrayLike,
    tuned: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    level: Level = Level.SAMPLE,
    coefficient: Coefficient = Coefficient.SPEARMAN,
    resamples: int = 1000,
    alpha: float = 0.05,
) -> Delta:
    """Δ of a correlation with the humans (outputs where either judge has no score
    left out, so both are measured on the same outputs)."""
    a, b, y = (np.asarray(v, dtype=np.float64) for v in (start, tuned, human))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(y)
    groups = Groups.from_keys(np.asarray(docs)[keep])
    a, b, y = a[keep], b[keep], y[keep]
    plan = draw_resamples(rng, groups, resamples=resamples)
    kind = {"level": level, "coefficient": coefficient}
    estimates = [correlate(x, y, docs=groups, **kind) for x in (a, b)]  # type: ignore[arg-type]
    values = [
        bootstrap_distribution(plan, x, y, estimate=e, **kind)  # type: ignore[arg-type]
        for x, e in zip((a, b), estimates, strict=True)
    ]
    low, high, undefined = _percentiles(values[1] - values[0], alpha)
    name = f"{coefficient.value} ({level.value})"
    values_ab = (estimates[0].value, estimates[1].value)
    return _delta(name, values_ab, (low, high, undefined), alpha, resamples, groups, keep)


def _delta(
    statistic: str,
    values: tuple[float, float],
    interval: tuple[float, float, int],
    alpha: float,
    resamples: int,
    groups: Groups,
    keep: npt.NDArray[np.bool_],
) -> Delta:
    """The start and tuned values, their difference and its interval, as reported."""
    (start, tuned), (low, high, undefined) = values, interval
    return Delta(
        statistic=statistic,
        start=start,
        tuned=tuned,
        delta=tuned - start,
        low=low,
        high=high,
        alpha=alpha,
        resamples=resamples,
        n_undefined=undefined,
        n_documents=groups.n_groups,
        n_outputs=int(keep.sum()),
    )
