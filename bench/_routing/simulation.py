"""The simulated campaigns (SummEval's judgments play the annotators): the intervals each
order gives after 10, 20 and 40 documents, their coverage over campaigns drawn from
SummEval, and the oracles (what a design that knew every judgment could reach)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from _routing.data import Data

CHECKPOINTS = (10, 20, 40)
BASELINE_AT = 40
RESAMPLES = 1000
ARMS = ("random", "random, one band", "informative")
Interval = tuple[float, float] | None


def truth(data: Data, aspect: str) -> float:
    """The sample-level Spearman difference on every document."""
    from scoring.stats import Coefficient, Level, correlate

    values = [
        correlate(
            m,
            data.human[aspect],
            level=Level.SAMPLE,
            coefficient=Coefficient.SPEARMAN,
            docs=data.docs,
        ).value
        for m in (data.a, data.b)
    ]
    return values[0] - values[1]


def plain_interval(
    data: Data, aspect: str, judged: np.ndarray, rng: np.random.Generator
) -> tuple[float, float]:
    """The paired bootstrap interval of the difference over the judged documents."""
    from scoring.stats import Coefficient, Level, Unit, bootstrap_distribution, draw_resamples

    keep = np.isin(data.docs, judged)
    docs = data.docs[keep]
    plan = draw_resamples(rng, docs, unit=Unit.DOCUMENTS, resamples=RESAMPLES)
    a, b = (
        bootstrap_distribution(
            plan,
            m[keep],
            data.human[aspect][keep],
            level=Level.SAMPLE,
            coefficient=Coefficient.SPEARMAN,
        )
        for m in (data.a, data.b)
    )
    diff = a - b
    low, high = np.quantile(diff[np.isfinite(diff)], [0.025, 0.975])
    return float(low), float(high)


def informative_run(
    data: Data, aspect: str, seed: int, upto: int
) -> dict[int, dict[str, Interval]]:
    """Route document by document; after each number of judged documents, the interval
    (``informative``) and, per proxy judge, that interval with its control variate."""
    from scoring.stats.routing import route

    guesses = proxy_guesses(data)
    revealed = np.full(data.a.size, np.nan)
    out = {}
    for n in range(upto + 1):  # n documents judged
        found = route(data.a, data.b, revealed, data.docs, np.random.default_rng(seed))
        if n >= CHECKPOINTS[0]:
            out[n] = {"informative": interval_of(found)}
            for key, guess in guesses.items():
                out[n][f"informative + {key}"] = controlled_interval(found, guess)
        here = data.docs == found.order[0]
        revealed[here] = data.human[aspect][here]
    return out


def proxy_guesses(data: Data) -> dict[str, np.ndarray]:
    """Per document, the question's difference with a third score playing the humans:
    ρ(A,P) − ρ(B,P), known before any judgment (0 where undefined)."""
    from scoring.stats.routing import route

    return {
        key: np.nan_to_num(
            route(data.a, data.b, data.scores[key], data.docs, np.random.default_rng(0)).difference
        )
        for key in data.proxies
    }


def controlled_interval(found: Any, guess: np.ndarray, alpha: float = 0.05) -> Interval:
    """``routing.estimate``'s stratified interval with a control variate: each band's mean
    of the judged differences d is corrected by λ (the band's mean of the proxy's guess x
    over all its documents − over its judged ones), λ the pooled within-band slope of d
    on x over the judged documents; the variance is the stratified one times the pooled
    within-band residual share (1 − r²), one degree of freedom fewer. Valid because each
    band's judged documents are a random sample of it (the routing's seeded tie-break)."""
    import scipy.stats

    from scoring.stats.routing import estimate

    plain = estimate(found, alpha)
    if plain is None:
        return None
    band, d, n = found.band, found.difference, found.n_judged
    seen = np.isfinite(d) & (band >= 0)
    inside = band >= 0
    h = band[seen]
    mean_d = np.bincount(h, weights=d[seen], minlength=n.size) / n
    mean_x = np.bincount(h, weights=guess[seen], minlength=n.size) / n
    all_x = np.bincount(band[inside], weights=guess[inside], minlength=n.size) / np.bincount(
        band[inside], minlength=n.size
    )
    dev_d, dev_x = d[seen] - mean_d[h], guess[seen] - mean_x[h]
    m = int(np.sum(n - 1))
    if m < 3 or not np.any(dev_x):
        return None
    slope = float(dev_d @ dev_x / (dev_x @ dev_x))
    residual = dev_d - slope * dev_x
    share = (residual @ residual / (m - 1)) / (dev_d @ dev_d / m) if np.any(dev_d) else 1.0
    value = float(found.weights @ (mean_d - slope * (mean_x - all_x)))
    variance = float(np.sum(found.weights**2 * found.spread / n)) * share
    df = max(1.0, (plain.high - plain.low) and _df(found) - 1)
    half = float(scipy.stats.t.ppf(1 - alpha / 2, df)) * np.sqrt(variance)
    return value - half, value + half


def _df(found: Any) -> float:
    """``routing.estimate``'s Satterthwaite degrees of freedom."""
    from scoring.stats.routing import PRIOR_WEIGHT

    terms = found.weights**2 * found.spread / found.n_judged
    return float(terms.sum() ** 2 / np.sum(terms**2 / (found.n_judged - 1 + PRIOR_WEIGHT)))


def one_band_interval(data: Data, aspect: str, judged: np.ndarray, seed: int) -> Interval:
    """The informative order's kind of interval (``routing.estimate``) with one band:
    for a random order, the like-for-like comparison."""
    from scoring.stats.routing import route

    revealed = np.where(np.isin(data.docs, judged), data.human[aspect], np.nan)
    return interval_of(
        route(data.a, data.b, revealed, data.docs, np.random.default_rng(seed), n_bands=1)
    )


def interval_of(found: Any) -> Interval:
    from scoring.stats.routing import estimate

    result = estimate(found)
    return None if result is None else (result.low, result.high)


def agreeing_first(data: Data) -> np.ndarray:
    from scoring.stats.routing import route

    found = route(data.a, data.b, np.full(data.a.size, np.nan), data.docs, np.random.default_rng(0))
    return np.argsort(-found.agreement, kind="stable")


def half(interval: Interval) -> float:
    return np.nan if interval is None else (interval[1] - interval[0]) / 2


def simulate(data: Data, aspect: str, seeds: int, upto: int) -> dict[str, dict[int, float]]:
    """Median half-widths per number of judged documents, per order and interval."""
    widths: dict[str, dict[int, list[float]]] = {arm: {} for arm in ARMS}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        order = rng.permutation(data.n_docs)
        for n in CHECKPOINTS:
            plain = plain_interval(data, aspect, order[:n], rng)
            widths["random"].setdefault(n, []).append(half(plain))
            one = one_band_interval(data, aspect, order[:n], seed)
            widths["random, one band"].setdefault(n, []).append(half(one))
        for n, intervals in informative_run(data, aspect, seed, upto).items():
            for arm, interval in intervals.items():
                widths.setdefault(arm, {}).setdefault(n, []).append(half(interval))
    return {
        arm: {n: float(np.nanmedian(v)) for n, v in by_n.items()} for arm, by_n in widths.items()
    }


def coverage(data: Data, aspect: str, campaigns: int) -> dict[str, dict[int, tuple[float, int]]]:
    """Per order and size: the share of intervals containing the population's difference,
    and how many campaigns had no interval yet (a band short of judged documents)."""
    target = truth(data, aspect)
    hits: dict[str, dict[int, list[bool | None]]] = {}
    for rep in range(campaigns):
        rng = np.random.default_rng(10_000 + rep)
        campaign = data.take(rng.integers(0, data.n_docs, data.n_docs))
        routed = informative_run(campaign, aspect, rep, max(CHECKPOINTS))
        order, agreeing = rng.permutation(campaign.n_docs), agreeing_first(campaign)
        for n in CHECKPOINTS:
            found = {
                "random": plain_interval(campaign, aspect, order[:n], rng),
                "random, one band": one_band_interval(campaign, aspect, order[:n], rep),
                **routed[n],
                "agreeing first": plain_interval(campaign, aspect, agreeing[:n], rng),
            }
            for arm, interval in found.items():
                inside = None if interval is None else bool(interval[0] <= target <= interval[1])
                hits.setdefault(arm, {}).setdefault(n, []).append(inside)
    return {
        arm: {
            n: (float(np.mean([h for h in v if h is not None] or [np.nan])), v.count(None))
            for n, v in by_n.items()
        }
        for arm, by_n in hits.items()
    }


@dataclass(frozen=True)
class Oracle:
    """What designs that knew more than the judged documents show could reach, in
    documents matching the variance of a random sample of ``BASELINE_AT`` (variance
    ratios: a width scales with the square root)."""

    bands: int
    band_spread: float  # Neyman allocation knowing each band's true spread
    document_spread: float  # sampling ∝ each document's true |difference − mean|
    proxies: dict[str, tuple[float, float]]  # proxy → (r with the difference, r within bands)


def oracle(data: Data, aspect: str) -> Oracle:
    """Every document judged: the per-document differences, the routing's bands, and
    what they would allow.

    * Bands' true spread: a stratified mean with each band's true standard deviation S_h
      and the Neyman allocation has variance (Σ W_h S_h)² / n, a random sample S² / n,
      so it matches the latter's at n = 40 (Σ W_h S_h)² / S². No allocation over these
      bands, however it learns the spreads, does better (up to rounding).
    * Each document's true |difference − mean| (sampling with probability ∝ it, the
      Hansen-Hurwitz estimator): 40 (mean |d − μ|)² / S². Unreachable by any design,
      since that needs each document's judgments: a floor for allocation alone.
    * Proxy judges: a third score P as if it were the humans gives each document a
      predicted difference ρ(A,P) − ρ(B,P); a control variate from it cuts the variance
      by 1 − r² at best (r: its correlation with the true difference; within bands, when
      combined with the stratification).
    """
    from scoring.stats.routing import route

    found = route(data.a, data.b, data.human[aspect], data.docs, np.random.default_rng(0))
    ok = np.isfinite(found.difference) & (found.band >= 0)
    d, band = found.difference[ok], found.band[ok]
    s2 = float(d.var(ddof=1))
    s_h = np.array([d[band == h].std(ddof=1) for h in range(found.n_bands)])
    proxies = {}
    for key in data.proxies:
        p = route(data.a, data.b, data.scores[key], data.docs, np.random.default_rng(0))
        guess = np.nan_to_num(p.difference[ok])
        means = [(d[band == h].mean(), guess[band == h].mean()) for h in range(found.n_bands)]
        within_d = d - np.array([means[h][0] for h in band])
        within_g = guess - np.array([means[h][1] for h in band])
        proxies[key] = (
            float(np.corrcoef(d, guess)[0, 1]),
            float(np.corrcoef(within_d, within_g)[0, 1]),
        )
    return Oracle(
        bands=found.n_bands,
        band_spread=BASELINE_AT * float(found.weights @ s_h) ** 2 / s2,
        document_spread=BASELINE_AT * float(np.mean(np.abs(d - d.mean()))) ** 2 / s2,
        proxies=proxies,
    )
