"""Metric-corrected estimates of human means: prediction-powered inference (PPI,
Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, "Prediction-powered inference",
Science) and its power-tuned variant PPI++ (Angelopoulos, Duchi & Zrnic 2023).

The setting: a metric scored all N outputs of a system, humans judged n of them (a
random subset). With f the metric mapped onto the human scale, PPI estimates the mean
human score as

    θ_PP = mean(f over all N) − mean(f − y over the n judged)

(the metric's mean, corrected by its average error where both are known). It is
unbiased for any fixed f, good or bad; a good f only makes it more precise. PPI++
weighs the metric by λ:

    θ_λ = mean(y over the n judged) + λ · (mean(f over all N) − mean(f over the n judged))

(λ = 1 is PPI, λ = 0 the human-only mean) and picks the λ that minimises the variance,
λ = Cov(y, f) / Var(f) on the judged outputs, clipped to [0, 1], so it is never much
worse than the human-only mean when the metric is useless.

Variance. The judged outputs are a subset of all N, so the two means are not
independent; for the nested design the variance is exactly

    Var(θ_λ) = (1/n − 1/N) · Var(y − λ f) + Var(y) / N,

estimated on the judged outputs (ddof 1). At λ = 1 it equals the textbook
Var(f)/N + Var(f − y)/n less the covariance of the two means, 2·Cov(f, f − y)/N, which
is about zero for a calibrated f. Intervals use the normal approximation, for PPI and
for the human-only mean (se² = Var(y)/n) alike, so their widths compare; with few
judged outputs (n below ~30) both are somewhat too narrow.

Calibration. A metric is on its own scale (ROUGE in 0..1, humans in 1..5), so f is a
linear map a + b·metric fitted by least squares on the judged outputs (all systems
pooled). For valid inference f must not be fitted on the residuals it corrects, so the
fit is **cross-fitted** across documents: documents are split into folds, and an
output's f comes from the map fitted on the judged outputs of the other folds
(:func:`calibrate`). The metric-only mean is then mean(f over all N): its interval
(se² = Var(f)/N) covers the mean of the calibrated metric, not the human mean, since it
ignores the calibration's own error.

Differences between two systems use the same estimator on the per-document difference
of their outputs (documents where both have an output), which accounts for the two
systems sharing documents.

Every function works along the last axis and broadcasts over leading ones, so a
simulation can run many replications in one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from scoring.stats.ranking import FloatArray, IntArray

MIN_LABELLED = 2  # a variance needs two judged outputs


@dataclass(frozen=True, eq=False)
class Estimate:
    """An estimate and its standard error (arrays shaped like the input's leading axes;
    NaN where undefined), with a normal-approximation interval."""

    value: FloatArray
    se: FloatArray
    confidence: float

    @property
    def z(self) -> float:
        return float(stats.norm.ppf(0.5 + self.confidence / 2))

    @property
    def low(self) -> FloatArray:
        return np.asarray(self.value - self.z * self.se, dtype=np.float64)

    @property
    def high(self) -> FloatArray:
        return np.asarray(self.value + self.z * self.se, dtype=np.float64)

    @property
    def width(self) -> FloatArray:
        return np.asarray(2 * self.z * self.se, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class PPIResult:
    """PPI (or PPI++) estimate beside the human-only and metric-only ones.

    ``lam`` is the weight given to the metric (1 for plain PPI); ``n_labelled`` the
    judged outputs used (those with a metric score too), ``n_total`` all scored ones.
    """

    ppi: Estimate
    human: Estimate
    metric: Estimate
    lam: FloatArray
    n_labelled: IntArray
    n_total: IntArray
    tuned: bool

    @property
    def variance_ratio(self) -> FloatArray:
        """Var(human-only) / Var(PPI): how many times the judgments the PPI estimate is
        worth (the "effective annotation" gained from the metric)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.human.se**2 / self.ppi.se**2, dtype=np.float64)

    @property
    def effective_labelled(self) -> FloatArray:
        """The number of judged outputs a human-only mean would need for PPI's precision."""
        return np.asarray(self.n_labelled * self.variance_ratio, dtype=np.float64)

    @property
    def saved(self) -> FloatArray:
        """The share of judgments the metric saves at equal precision: 1 − 1/ratio."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(1 - 1 / self.variance_ratio, dtype=np.float64)


def ppi_mean(
    predictions: npt.ArrayLike,
    labels: npt.ArrayLike,
    *,
    tune: bool = True,
    confidence: float = 0.95,
) -> PPIResult:
    """Estimate the mean of ``labels`` from the few that are known (NaN elsewhere) and
    ``predictions`` of all (NaN where unscored; such outputs are left out entirely).

    ``tune`` picks PPI++'s variance-minimising λ in [0, 1]; otherwise λ = 1 (PPI).
    Works along the last axis.
    """
    f = np.asarray(predictions, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if f.shape != y.shape or f.ndim < 1:
        raise ValueError("predictions and labels must be aligned arrays")
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie between 0 and 1")
    scored = np.isfinite(f)
    judged = scored & np.isfinite(y)
    n_total, n = scored.sum(axis=-1), judged.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_all, var_all = _moments(f, f, scored)
        mean_f, var_f = _moments(f, f, judged)
        mean_y, var_y = _moments(y, y, judged)
        _, cov_fy = _moments(f, y, judged)
        if tune:
            lam = np.where(var_f > 0, np.clip(cov_fy / var_f, 0.0, 1.0), 0.0)
        else:
            lam = np.ones_like(mean_y)
        value = mean_y + lam * (mean_all - mean_f)
        residual = np.maximum(var_y + lam**2 * var_f - 2 * lam * cov_fy, 0.0)
        variance = (1 / n - 1 / n_total) * residual + var_y / n_total
        enough = n >= MIN_LABELLED
        ppi = Estimate(_where(enough, value), _where(enough, np.sqrt(variance)), confidence)
        human = Estimate(_where(enough, mean_y), _where(enough, np.sqrt(var_y / n)), confidence)
        metric = Estimate(
            _where(n_total >= MIN_LABELLED, mean_all),
            _where(n_total >= MIN_LABELLED, np.sqrt(var_all / n_total)),
            confidence,
        )
    return PPIResult(
        ppi, human, metric, _where(enough, lam), n.astype(np.intp), n_total.astype(np.intp), tune
    )


def _moments(
    x: FloatArray, y: FloatArray, mask: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """Mean of x and the sample covariance of x and y (ddof 1) where ``mask``."""
    count = mask.sum(axis=-1)
    mean_x = np.where(mask, x, 0.0).sum(axis=-1) / count
    mean_y = np.where(mask, y, 0.0).sum(axis=-1) / count
    products = np.where(mask, (x - mean_x[..., None]) * (y - mean_y[..., None]), 0.0)
    return mean_x, products.sum(axis=-1) / (count - 1)


def _where(condition: npt.ArrayLike, values: FloatArray) -> FloatArray:
    return np.asarray(np.where(condition, values, np.nan), dtype=np.float64)


# --- calibration ----------------------------------------------------------------------


@dataclass(frozen=True)
class LinearMap:
    """human ≈ intercept + slope · metric, and the judged outputs it was fitted on."""

    intercept: float
    slope: float
    n: int


def fit_linear(metric: npt.ArrayLike, labels: npt.ArrayLike) -> LinearMap:
    """Least squares of the known labels on the metric (a constant map, the labels'
    mean, when the metric does not vary; NaN without labels)."""
    x = np.asarray(metric, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    known = np.isfinite(x) & np.isfinite(y)
    n = int(known.sum())
    if n == 0:
        return LinearMap(math.nan, math.nan, 0)
    xs, ys = x[known], y[known]
    spread = float(np.sum((xs - xs.mean()) ** 2))
    slope = float(np.sum((xs - xs.mean()) * (ys - ys.mean())) / spread) if spread > 0 else 0.0
    return LinearMap(float(ys.mean() - slope * xs.mean()), slope, n)


def document_folds(doc_codes: npt.ArrayLike, folds: int, rng: np.random.Generator) -> IntArray:
    """A fold per output, the same for every output of a document: documents are
    shuffled with ``rng`` and dealt round-robin into ``folds`` folds."""
    codes = np.asarray(doc_codes)
    if folds < 2:
        raise ValueError("cross-fitting needs at least two folds")
    unique, inverse = np.unique(codes, return_inverse=True)
    fold_of_doc = np.empty(unique.size, dtype=np.intp)
    fold_of_doc[rng.permutation(unique.size)] = np.arange(unique.size) % folds
    return np.asarray(fold_of_doc[inverse], dtype=np.intp)


def calibrate(metric: npt.ArrayLike, labels: npt.ArrayLike, folds: npt.ArrayLike) -> FloatArray:
    """Cross-fitted predictions on the human scale: output k's is a + b·metric[k] with
    (a, b) the least-squares fit on the judged outputs outside ``folds[k]``'s fold.

    A fold whose complement has no judged output gets NaN predictions; one whose
    complement's metric does not vary gets the complement's mean label. Works along the
    last axis (``folds`` broadcast against ``metric``).
    """
    x = np.asarray(metric, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    fold = np.broadcast_to(np.asarray(folds), x.shape)
    if x.shape != y.shape:
        raise ValueError("metric and labels must be aligned")
    known = np.isfinite(x) & np.isfinite(y)
    out = np.full(x.shape, np.nan)
    for k in np.unique(fold).tolist():
        train = known & (fold != k)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_x, var_x = _moments(x, x, train)
            mean_y, _ = _moments(y, y, train)
            _, cov_xy = _moments(x, y, train)
            slope = np.where(var_x > 0, cov_xy / var_x, 0.0)
        slope = np.where(np.isfinite(slope), slope, 0.0)
        intercept = mean_y - slope * np.where(np.isfinite(mean_x), mean_x, 0.0)
        here = fold == k
        out = np.where(here, intercept[..., None] + slope[..., None] * x, out)
    return out


# --- per system -----------------------------------------------------------------------


def by_system(
    values: npt.ArrayLike, system_codes: npt.ArrayLike, doc_codes: npt.ArrayLike
) -> FloatArray:
    """Outputs laid out as systems × documents (NaN where a system has no output for a
    document); a system with two outputs for one document is an error."""
    v = np.asarray(values, dtype=np.float64)
    systems = np.asarray(system_codes, dtype=np.intp)
    docs = np.asarray(doc_codes, dtype=np.intp)
    if not v.shape == systems.shape == docs.shape or v.ndim != 1:
        raise ValueError("values, system_codes and doc_codes must be 1-D and aligned")
    n_systems = int(systems.max()) + 1 if systems.size else 0
    n_docs = int(docs.max()) + 1 if docs.size else 0
    cells = systems * max(n_docs, 1) + docs
    if np.unique(cells).size != cells.size:
        raise ValueError("a system has two outputs for one document")
    table = np.full((n_systems, n_docs), np.nan)
    table[systems, docs] = v
    return table


def system_means(
    predictions: npt.ArrayLike,
    labels: npt.ArrayLike,
    system_codes: npt.ArrayLike,
    doc_codes: npt.ArrayLike,
    *,
    tune: bool = True,
    confidence: float = 0.95,
) -> PPIResult:
    """Each system's mean label (row s for system code s) from its outputs' predictions
    (calibrated, e.g. by :func:`calibrate`) and the known labels."""
    f = by_system(predictions, system_codes, doc_codes)
    y = by_system(labels, system_codes, doc_codes)
    return ppi_mean(f, y, tune=tune, confidence=confidence)


def system_differences(
    predictions: npt.ArrayLike,
    labels: npt.ArrayLike,
    system_codes: npt.ArrayLike,
    doc_codes: npt.ArrayLike,
    reference: int,
    *,
    tune: bool = True,
    confidence: float = 0.95,
) -> PPIResult:
    """Each system's mean label minus system ``reference``'s, estimated on the documents
    both have outputs for (row s: system s − reference; the reference's own row is 0
    with no spread)."""
    f = by_system(predictions, system_codes, doc_codes)
    y = by_system(labels, system_codes, doc_codes)
    if not 0 <= reference < f.shape[0]:
        raise ValueError(f"no system with code {reference}")
    return ppi_mean(f - f[reference], y - y[reference], tune=tune, confidence=confidence)
