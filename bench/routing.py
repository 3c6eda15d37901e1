"""Benchmark of informative-first routing on SummEval: how fast the interval of the
study's question narrows (a simulation), what any allocation could reach (oracles), and
what routing costs a lease.

Run from the repository root::

    .venv/bin/python bench/routing.py                     # 4 aspects, 20 seeds, lease timing
    .venv/bin/python bench/routing.py --aspects relevance --seeds 5 --coverage 50 --no-lease
    .venv/bin/python bench/routing.py --aspects                 # the lease timing only
    # GPTScore questions: score SummEval once (minutes of CPU), then read the file
    .venv/bin/python bench/routing.py --write-gptscore data/bench/gptscore-summeval-coh.json \
        --questions gptscore-rouge2 gptscore-rougeL --no-lease
    .venv/bin/python bench/routing.py --gptscore data/bench/gptscore-summeval-coh.json \
        --questions rouge2-rougeL gptscore-rouge2 gptscore-rougeL --no-lease

The questions (``--questions``): ROUGE-2 against ROUGE-L (the default), GPTScore against
ROUGE-2, GPTScore against ROUGE-L: the difference of their sample-level Spearman
correlations with the humans on one aspect. SummEval (``../shared/data/summeval.jsonl``:
100 documents x 16 systems, each output's human score the mean of 3 experts) is scored
with the project's ROUGE (``scoring.metrics.rouge``: Porter stemming, F averaged over
the 11 references, as a ROUGE run scores) and, from a file named by ``--gptscore``, with
GPTScore as a run with the defaults scores it (the default model, coherence, IST,
src→hypo, mean log-probability). ``--write-gptscore FILE`` writes that file (with what
produced it); the file is read only when named, and a GPTScore question without it stops.

Simulation. SummEval's judgments play the annotators: a document's judgments are
revealed when it is annotated (its 16 outputs at once, as the queue hands them out with
overlap 1). Orders and intervals, on the same ``--seeds`` seeds:

* random: a seeded random order; the interval is the project's paired bootstrap over
  the judged documents (1,000 resamples, ``scoring.stats.resampling``), the interval
  the correlations page shows: the baseline;
* informative: ``scoring.stats.routing.route`` picks each next document (seeded like a
  campaign); the interval is ``routing.estimate``'s (stratified by the runs'
  disagreement, Student's t);
* informative + P, control variate: the same documents, the interval corrected by a
  proxy judge P (each other score at hand, all of them printed, none picked): P plays
  the humans on every document, which gives a predicted difference ρ(A,P) − ρ(B,P)
  known before any judgment; each band's mean is corrected by the pooled within-band
  slope (a regression estimator, valid since each band's judged documents are a random
  sample of it);
* random, one band: the random order with ``routing.estimate``'s kind of interval (one
  band), to compare like with like: the ordering's own share of any gain.

Printed: the median over the seeds of the 95% interval's half-width after 10, 20 and
40 documents, informative / random, how many documents each informative interval needs
to reach each random row's 40-document median width, and whether that is at most 25 for
the baseline (the issue's target). With 20 seeds the baseline's median itself moves by
a few percent between seed sets; ``--seeds 100`` steadies it.

Oracles. With every judgment known: the documents a design needs to match a random
sample's 40-document variance (a) with the Neyman allocation knowing each band's true
spread, the best any allocation over the routing's bands can do, and (b) sampling each
document with probability ∝ its true |difference − mean|, a floor that needs each
document's judgments to reach; and each proxy judge's correlation with the true
per-document difference (overall and within bands), with (a) times 1 − r² (within). If
(a) is above 25, no allocation over the bands meets the target on that question.

Coverage. A width means nothing unless the interval holds its 95%. ``--coverage``
campaigns of 100 documents are drawn with replacement from SummEval's (the population,
whose difference is known), every order runs on each, and the share of intervals that
contain the population's difference is printed, with a further order for contrast:
agreeing documents first with the plain bootstrap, the narrowest plain interval, which
shows why a plain interval over a routed sample is no judge. A summary table ends the
simulation.

Lease. With Django on a throwaway SQLite database: SummEval's outputs (100 x 16) with
the two ROUGE runs, one Likert campaign per routing mode, one annotator each who claims
and answers ``--leases`` items, the two modes taking turns; median milliseconds of
``claim_next`` (the routing plan is recomputed after every answer) and of ``submit``,
informative / random.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _django import setup_django

REPO = Path(__file__).resolve().parent.parent
SUMMEVAL = REPO.parent / "shared" / "data" / "summeval.jsonl"
ASPECTS = ("coherence", "consistency", "fluency", "relevance")
CHECKPOINTS = (10, 20, 40)
BASELINE_AT, TARGET = 40, 25
RESAMPLES = 1000
ARMS = ("random", "random, one band", "informative")
# The questions the issue allows: (run A's key, run B's key) in ``Data.scores``, and names.
QUESTIONS = {
    "rouge2-rougeL": ("rouge2", "rougeL", "ROUGE-2", "ROUGE-L"),
    "gptscore-rouge2": ("gptscore", "rouge2", "GPTScore", "ROUGE-2"),
    "gptscore-rougeL": ("gptscore", "rougeL", "GPTScore", "ROUGE-L"),
}
# Third scores tried as proxy judges (a control variate for the per-document difference).
PROXIES = ("rouge1", "rouge2", "rougeL", "gptscore", "length")
LABELS = {
    "random": "random, paired bootstrap (the baseline)",
    "random, one band": "random, informative's interval, 1 band",
    "informative": "informative, stratified interval",
    "agreeing first": "agreeing first, paired bootstrap",
}
Interval = tuple[float, float] | None


@dataclass(frozen=True)
class Data:
    """Outputs grouped by document (codes 0..n-1), the question's two runs' scores (``a``,
    ``b``, named ``names``), the humans, and every score at hand (``scores``, by key)."""

    docs: np.ndarray
    a: np.ndarray
    b: np.ndarray
    human: dict[str, np.ndarray]
    records: list[dict[str, Any]]
    scores: dict[str, np.ndarray]
    names: tuple[str, str] = ("ROUGE-2", "ROUGE-L")
    keys: tuple[str, str] = ("rouge2", "rougeL")

    @property
    def proxies(self) -> list[str]:
        """The scores at hand other than the question's two runs."""
        return [key for key in PROXIES if key in self.scores and key not in self.keys]

    @property
    def n_docs(self) -> int:
        return int(self.docs.max()) + 1

    def asking(self, question: str) -> Data:
        """The same outputs with ``question``'s two runs as ``a`` and ``b``."""
        key_a, key_b, name_a, name_b = QUESTIONS[question]
        return replace(
            self,
            a=self.scores[key_a],
            b=self.scores[key_b],
            names=(name_a, name_b),
            keys=(key_a, key_b),
        )

    def take(self, picks: np.ndarray) -> Data:
        """A campaign of the documents ``picks`` (repeats allowed), renumbered."""
        index = [np.flatnonzero(self.docs == d) for d in picks]
        rows = np.concatenate(index)
        docs = np.concatenate([np.full(len(ix), k) for k, ix in enumerate(index)])
        return Data(
            docs,
            self.a[rows],
            self.b[rows],
            {k: v[rows] for k, v in self.human.items()},
            [],
            {k: v[rows] for k, v in self.scores.items()},
            self.names,
            self.keys,
        )


def load(gptscore_file: Path | None) -> Data:
    """SummEval with ROUGE-1, ROUGE-2, ROUGE-L, the outputs' length in words and, given a
    file written by ``--write-gptscore``, GPTScore."""
    from scoring.metrics import rouge
    from scoring.metrics.base import Item

    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    keys = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in records))}
    items = [
        Item(
            key=k,
            doc_key=r["doc_id"],
            source=r["source"],
            hypothesis=r["output"],
            references=tuple(r["references"]),
        )
        for k, r in enumerate(records)
    ]
    scores = {
        kind: np.array([s.value for s in rouge.score(items, kind)], dtype=float)
        for kind in ("rouge1", "rouge2", "rougeL")
    }
    scores["length"] = np.array([len(r["output"].split()) for r in records], dtype=float)
    if gptscore_file is not None:
        scores["gptscore"] = read_gptscore(gptscore_file, records)
    return Data(
        docs=np.array([keys[r["doc_id"]] for r in records]),
        a=scores["rouge2"],
        b=scores["rougeL"],
        human={x: np.array([r["human"][x] for r in records], dtype=float) for x in ASPECTS},
        records=records,
        scores=scores,
    )


# --- GPTScore, scored once and cached -------------------------------------------------------


def write_gptscore(path: Path, threads: int) -> None:
    """Score SummEval's 1,600 outputs with GPTScore as a run with the defaults would
    (default model, coherence, IST, src→hypo, mean log-probability) and write the scores
    to ``path`` with what produced them. Minutes of CPU: done once, read by ``--gptscore``."""
    import torch
    from _speed import MODEL

    from scoring.lm import HFLanguageModel
    from scoring.metrics import gptscore
    from scoring.metrics.gptscore import GPTScoreConfig, Item, Template

    if not (MODEL / "config.json").is_file():
        sys.exit(f"no model at {MODEL}: run `python3 manage.py install_model` first")
    torch.set_num_threads(threads)
    defaults = json.loads((REPO / "studies" / "defaults" / "defaults.json").read_text())
    row = next(
        t
        for t in defaults["templates"]
        if t["task"] == "summarization"
        and t["kind"] == "gptscore"
        and t["aspect"] == "COH"
        and t["dimension"] == "src_hypo"
        and t["setting"] == "IST"
    )
    config = GPTScoreConfig(template=Template(row["text"], row["target"]))
    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    lm = HFLanguageModel(MODEL, device="cpu")
    items = [
        Item(
            key=(r["doc_id"], r["system_id"]),
            doc_key=r["doc_id"],
            source=r["source"],
            hypothesis=r["output"],
        )
        for r in records
    ]
    started = time.perf_counter()
    results = gptscore.score(lm, items, config)
    scores = [
        {"doc_id": i.key[0], "system_id": i.key[1], "value": r.value, "error": r.error}
        for i, r in zip(items, results, strict=True)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "metric": "gptscore",
                "model": MODEL.name,
                "aspect": "COH",
                "setting": "IST",
                "dimension": "src_hypo",
                "reduction": str(config.reduction),
                "template": row["text"],
                "seconds": round(time.perf_counter() - started),
                "scores": scores,
            }
        )
    )
    print(f"GPTScore of {len(scores)} outputs written to {path}")


def read_gptscore(path: Path, records: list[dict[str, Any]]) -> np.ndarray:
    """The cached GPTScore of every SummEval output, in ``records``' order; stops if the
    file is absent or misses an output (never a silent fallback)."""
    if not path.is_file():
        sys.exit(f"no GPTScore cache at {path}: write it first with --write-gptscore {path}")
    cached = json.loads(path.read_text())
    found = {(s["doc_id"], s["system_id"]): s["value"] for s in cached["scores"]}
    missing = [r for r in records if found.get((r["doc_id"], r["system_id"])) is None]
    if missing:
        sys.exit(f"{path} has no GPTScore for {len(missing)} of {len(records)} outputs")
    print(
        f"GPTScore read from {path} ({cached['model']}, {cached['aspect']}, {cached['setting']}, "
        f"{cached['dimension']}, {cached['reduction']})"
    )
    return np.array([found[(r["doc_id"], r["system_id"])] for r in records], dtype=float)


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


def needed(widths: dict[int, float], goal: float) -> int | None:
    return next((n for n in sorted(widths) if widths[n] <= goal), None)


def label(arm: str) -> str:
    if arm in LABELS:
        return LABELS[arm]
    return f"{arm}, control variate" if arm.startswith("informative + ") else arm


def report_aspect(data: Data, aspect: str, args: argparse.Namespace) -> dict[str, Any]:
    """Print one question on one aspect; return its summary row."""
    started = time.perf_counter()
    medians = simulate(data, aspect, args.seeds, args.upto)
    name_a, name_b = data.names
    print(f"\n{aspect}: {name_a} - {name_b} = {truth(data, aspect):+.4f} on all 100 documents")
    print(
        f"  95% CI half-width, median of {args.seeds} seeds   "
        + "  ".join(f"{n:>3} docs" for n in CHECKPOINTS)
    )
    for arm in medians:
        print(f"  {label(arm):<44}" + "  ".join(f"{medians[arm][n]:8.4f}" for n in CHECKPOINTS))
    ratio = [medians["informative"][n] / medians["random"][n] for n in CHECKPOINTS]
    print(f"  {'informative / random':<44}" + "  ".join(f"{r:8.3f}" for r in ratio))
    row: dict[str, Any] = {
        "random": medians["random"][BASELINE_AT],
        "informative": medians["informative"][BASELINE_AT],
    }
    for arm in ("random", "random, one band"):
        goal = medians[arm][BASELINE_AT]
        for routed in (a for a in medians if a.startswith("informative")):
            reach = needed(medians[routed], goal)
            print(
                f"  documents {routed} needs for the {BASELINE_AT}-document width of {arm} "
                f"({goal:.4f}): {reach if reach is not None else f'more than {args.upto}'}"
            )
            if arm == "random":
                row[f"needs: {routed}"] = reach
    met = [k for k, v in row.items() if k.startswith("needs") and v is not None and v <= TARGET]
    print(
        f"  target (<= {TARGET} documents for the baseline's {BASELINE_AT}-document width): "
        f"{'MET by ' + ', '.join(met) if met else 'NOT MET'}"
    )
    row["met"] = bool(met)
    bound = oracle(data, aspect)
    row["oracle"] = bound
    print(
        f"  oracle, documents matching a random sample's {BASELINE_AT}-document variance: knowing "
        f"each of the {bound.bands} bands' true spread {bound.band_spread:.1f}; knowing each "
        f"document's |difference - mean| (needs its judgments) {bound.document_spread:.1f}"
    )
    if bound.band_spread > TARGET:
        print(
            f"    even the bands' oracle needs more than {TARGET}: no allocation over the "
            "disagreement bands can meet the target here"
        )
    print(
        "  proxy judges (a third score as the humans), r with the per-document difference "
        "(within bands), documents with the bands' oracle and that control variate:"
    )
    for key, (r, within) in bound.proxies.items():
        print(
            f"    {key:<10} r {r:+.2f} ({within:+.2f})   {bound.band_spread * (1 - within**2):5.1f}"
        )
    if args.coverage:
        cover = coverage(data, aspect, args.coverage)
        row["coverage"] = {arm: by_n[BASELINE_AT][0] for arm, by_n in cover.items()}
        print(
            f"  coverage of the population's difference, {args.coverage} campaigns drawn "
            "from SummEval (no interval yet: n)"
        )
        for arm, by_n in cover.items():
            note = "  (invalid after routing)" if arm == "agreeing first" else ""
            cells = [
                f"{share:.2f}" + (f" ({none})" if none else "") for share, none in by_n.values()
            ]
            print(f"    {label(arm):<42}" + "  ".join(f"{c:>8}" for c in cells) + note)
    print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    return row


def summary(rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    """One line per question and aspect: the 40-document widths, the documents the
    informative order needs (best control variate in brackets), the oracles, coverage."""
    print(
        f"\nsummary: half-widths at {BASELINE_AT} documents, documents needed for random's "
        f"{BASELINE_AT}-document width (target <= {TARGET}), coverage at {BASELINE_AT}"
    )
    print(
        f"  {'question':<22}{'aspect':<12}{'random':>8}{'inform.':>8}{'needs':>7}{'+ CV':>7}"
        f"{'oracle bands':>14}{'oracle docs':>13}{'coverage':>10}{'cov. + CV':>11}"
    )
    for (question, aspect), row in rows.items():
        plain = row.get("needs: informative")
        controlled = [v for k, v in row.items() if k.startswith("needs: informative +")]
        best = min((v for v in controlled if v is not None), default=None)
        cover = row.get("coverage", {})
        cv_cover = [v for k, v in cover.items() if k.startswith("informative +")]
        print(
            f"  {question:<22}{aspect:<12}{row['random']:8.4f}{row['informative']:8.4f}"
            f"{plain if plain is not None else '>':>7}{best if best is not None else '>':>7}"
            f"{row['oracle'].band_spread:14.1f}{row['oracle'].document_spread:13.1f}"
            f"{cover.get('informative', float('nan')):10.2f}"
            f"{(min(cv_cover) if cv_cover else float('nan')):11.2f}"
        )


# --- lease timing (Django) -----------------------------------------------------------------


def lease_timing(data: Data, leases: int) -> None:
    from django.contrib.auth.models import Group, User

    from annotation.models import Campaign
    from annotation.services import answers, assignment
    from annotation.services.campaigns import CampaignSpec, create_campaign
    from studies.models import (
        Aspect,
        Dataset,
        Document,
        MetricRun,
        MetricScore,
        Output,
        Study,
        TaskKind,
    )
    from studies.permissions import ANNOTATOR

    owner = User.objects.create_user("bench-owner", password="x")
    dataset = Dataset.objects.create(
        name="summeval", owner=owner, task=TaskKind.objects.get(code="summarization")
    )
    by_doc: dict[int, Document] = {}
    for code, record in zip(data.docs, data.records, strict=True):
        if code not in by_doc:
            by_doc[code] = Document.objects.create(
                dataset=dataset,
                doc_key=record["doc_id"],
                source=record["source"],
                references=record["references"],
            )
    outputs = Output.objects.bulk_create(
        Output(document=by_doc[code], system_id=r["system_id"], text=r["output"])
        for code, r in zip(data.docs, data.records, strict=True)
    )
    runs = []
    for label, values in (("ROUGE-2", data.a), ("ROUGE-L", data.b)):
        run = MetricRun.objects.create(
            dataset=dataset,
            metric="rouge",
            label=label,
            kind="imported",
            status=MetricRun.Status.SUCCEEDED,
        )
        MetricScore.objects.bulk_create(
            MetricScore(run=run, output=o, value=float(v))
            for o, v in zip(outputs, values, strict=True)
        )
        runs.append(run)
    study = Study.objects.create(name="bench", dataset=dataset, owner=owner)
    relevance = Aspect.objects.filter(code="REL").first() or Aspect.objects.first()
    campaigns = {}
    for mode in (Campaign.Routing.RANDOM, Campaign.Routing.INFORMATIVE):
        annotator = User.objects.create_user(f"bench-{mode}", password="x")
        annotator.groups.add(Group.objects.get(name=ANNOTATOR))
        spec = CampaignSpec(
            name=mode,
            aspects=[relevance],
            overlap=1,
            annotators=[annotator],
            routing=mode,
            question_run_a=runs[0],
            question_run_b=runs[1],
            question_aspect=relevance,
        )
        campaigns[mode] = (create_campaign(study, spec, owner), annotator)
    times: dict[str, dict[str, list[float]]] = {m: {"claim": [], "submit": []} for m in campaigns}
    for k in range(leases):  # the modes take turns, so a busy machine slows both alike
        for mode, (campaign, annotator) in campaigns.items():
            start = time.perf_counter()
            lease = assignment.claim_next(campaign, annotator)
            times[mode]["claim"].append(time.perf_counter() - start)
            assert lease is not None
            start = time.perf_counter()
            answers.submit(lease.pk, annotator, {relevance.pk: float(1 + k % 5)})
            times[mode]["submit"].append(time.perf_counter() - start)
    print(
        f"\nlease on SummEval-size data ({len(outputs)} items, SQLite), {leases} claims + answers per mode:"
    )
    for part in ("claim", "submit"):
        med = {m: statistics.median(t[part]) * 1000 for m, t in times.items()}
        p90 = {m: float(np.quantile(t[part], 0.9)) * 1000 for m, t in times.items()}
        print(
            f"  {part:<7} random {med['random']:6.2f} ms (p90 {p90['random']:6.2f})   informative "
            f"{med['informative']:6.2f} ms (p90 {p90['informative']:6.2f})   "
            f"x random {med['informative'] / med['random']:.2f}"
        )


def timed_section(name: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = fn()
    print(f"{name} in {time.perf_counter() - started:.1f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--aspects",
        nargs="*",
        choices=ASPECTS,
        default=list(ASPECTS),
        help="none: the lease timing only",
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--upto", type=int, default=60, help="documents the informative order runs to"
    )
    parser.add_argument("--coverage", type=int, default=200, help="campaigns drawn (0: skip)")
    parser.add_argument("--leases", type=int, default=200)
    parser.add_argument("--no-lease", action="store_true")
    parser.add_argument(
        "--questions",
        nargs="+",
        choices=QUESTIONS,
        default=["rouge2-rougeL"],
        help="the gptscore ones need --gptscore",
    )
    parser.add_argument(
        "--gptscore",
        type=Path,
        metavar="FILE",
        help="SummEval's GPTScore, cached by --write-gptscore (never read unless named)",
    )
    parser.add_argument(
        "--write-gptscore",
        type=Path,
        metavar="FILE",
        help="score SummEval with GPTScore (minutes of CPU), write FILE, then go on",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads for --write-gptscore")
    args = parser.parse_args()
    if not SUMMEVAL.is_file():
        sys.exit(f"needs {SUMMEVAL} (the shared data folder beside the repository)")
    sys.path.insert(0, str(REPO))
    if args.write_gptscore:
        write_gptscore(args.write_gptscore, args.threads)
        args.gptscore = args.gptscore or args.write_gptscore
    if any(q.startswith("gptscore") for q in args.questions) and args.gptscore is None:
        sys.exit(
            "a GPTScore question needs --gptscore FILE (written once by --write-gptscore FILE)"
        )
    data = timed_section("SummEval scored with ROUGE", lambda: load(args.gptscore))
    rows = {}
    for question in args.questions:
        asked = data.asking(question)
        print(f"\n=== {asked.names[0]} vs {asked.names[1]} ===")
        for aspect in args.aspects:
            rows[question, aspect] = report_aspect(asked, aspect, args)
    if rows:
        summary(rows)
        met = sum(row["met"] for row in rows.values())
        print(
            f"\ntarget (informative reaches random's {BASELINE_AT}-document width with <= "
            f"{TARGET} documents) met on {met} of {len(rows)} questions x aspects"
        )
    if not args.no_lease:
        tmp = Path(tempfile.mkdtemp(prefix="concordia-routing-"))
        try:
            setup_django(tmp)
            lease_timing(data, args.leases)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
