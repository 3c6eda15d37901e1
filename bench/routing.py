"""Benchmark of informative-first routing on SummEval: how fast the interval of the
study's question narrows (a simulation), and what routing costs a lease.

Run from the repository root::

    .venv/bin/python bench/routing.py                     # 4 aspects, 20 seeds, lease timing
    .venv/bin/python bench/routing.py --aspects relevance --seeds 5 --coverage 50 --no-lease
    .venv/bin/python bench/routing.py --aspects                 # the lease timing only

The question: ROUGE-2 against ROUGE-L, the difference of their sample-level Spearman
correlations with the humans on one aspect. SummEval (``../shared/data/summeval.jsonl``:
100 documents x 16 systems, each output's human score the mean of 3 experts) is scored
with the project's ROUGE (``scoring.metrics.rouge``: Porter stemming, F averaged over
the 11 references, as a ROUGE run scores).

Simulation. SummEval's judgments play the annotators: a document's judgments are
revealed when it is annotated (its 16 outputs at once, as the queue hands them out with
overlap 1). Two orders, on the same ``--seeds`` seeds:

* random: a seeded random order; the interval is the project's paired bootstrap over
  the judged documents (1,000 resamples, ``scoring.stats.resampling``), the interval
  the correlations page shows: the baseline;
* informative: ``scoring.stats.routing.route`` picks each next document (seeded like a
  campaign); the interval is ``routing.estimate``'s (stratified by the runs'
  disagreement, Student's t);
* random, one band: the random order with ``routing.estimate``'s kind of interval (one
  band), to compare like with like: the ordering's own share of any gain.

Printed: the median over the seeds of the 95% interval's half-width after 10, 20 and
40 documents, informative / random, how many documents the informative order needs to
reach each random row's 40-document median width, and whether that is at most 25 for
the baseline (the issue's target). With 20 seeds the baseline's median itself moves by
a few percent between seed sets; ``--seeds 100`` steadies it.

Coverage. A width means nothing unless the interval holds its 95%. ``--coverage``
campaigns of 100 documents are drawn with replacement from SummEval's (the population,
whose difference is known), both orders run on each, and the share of intervals that
contain the population's difference is printed, with a third order for contrast:
agreeing documents first with the plain bootstrap, the narrowest plain interval, which
shows why a plain interval over a routed sample is no judge.

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
from dataclasses import dataclass
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
LABELS = {
    "random": "random, paired bootstrap (the baseline)",
    "random, one band": "random, informative's interval, 1 band",
    "informative": "informative, stratified interval",
    "agreeing first": "agreeing first, paired bootstrap",
}
Interval = tuple[float, float] | None


@dataclass(frozen=True)
class Data:
    """Outputs grouped by document (codes 0..n-1), two runs' scores, the humans."""

    docs: np.ndarray
    a: np.ndarray
    b: np.ndarray
    human: dict[str, np.ndarray]
    records: list[dict[str, Any]]

    @property
    def n_docs(self) -> int:
        return int(self.docs.max()) + 1

    def take(self, picks: np.ndarray) -> Data:
        """A campaign of the documents ``picks`` (repeats allowed), renumbered."""
        index = [np.flatnonzero(self.docs == d) for d in picks]
        rows = np.concatenate(index)
        docs = np.concatenate([np.full(len(ix), k) for k, ix in enumerate(index)])
        return Data(docs, self.a[rows], self.b[rows],
                    {k: v[rows] for k, v in self.human.items()}, [])  # fmt: skip


def load() -> Data:
    from scoring.metrics import rouge
    from scoring.metrics.base import Item

    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    keys = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in records))}
    items = [Item(key=k, doc_key=r["doc_id"], source=r["source"], hypothesis=r["output"],
                  references=tuple(r["references"])) for k, r in enumerate(records)]  # fmt: skip
    a, b = ([s.value for s in rouge.score(items, kind)] for kind in ("rouge2", "rougeL"))
    return Data(
        docs=np.array([keys[r["doc_id"]] for r in records]),
        a=np.array(a, dtype=float),
        b=np.array(b, dtype=float),
        human={x: np.array([r["human"][x] for r in records], dtype=float) for x in ASPECTS},
        records=records,
    )


def truth(data: Data, aspect: str) -> float:
    """The sample-level Spearman difference on every document."""
    from scoring.stats import Coefficient, Level, correlate

    values = [correlate(m, data.human[aspect], level=Level.SAMPLE, coefficient=Coefficient.SPEARMAN,
                        docs=data.docs).value for m in (data.a, data.b)]  # fmt: skip
    return values[0] - values[1]


def plain_interval(data: Data, aspect: str, judged: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:  # fmt: skip
    """The paired bootstrap interval of the difference over the judged documents."""
    from scoring.stats import Coefficient, Level, Unit, bootstrap_distribution, draw_resamples

    keep = np.isin(data.docs, judged)
    docs = data.docs[keep]
    plan = draw_resamples(rng, docs, unit=Unit.DOCUMENTS, resamples=RESAMPLES)
    a, b = (bootstrap_distribution(plan, m[keep], data.human[aspect][keep], level=Level.SAMPLE,
                                   coefficient=Coefficient.SPEARMAN) for m in (data.a, data.b))  # fmt: skip
    diff = a - b
    low, high = np.quantile(diff[np.isfinite(diff)], [0.025, 0.975])
    return float(low), float(high)


def informative_run(data: Data, aspect: str, seed: int, upto: int) -> dict[int, Interval]:
    """Route document by document; the interval after each number of judged documents."""
    from scoring.stats.routing import route

    revealed = np.full(data.a.size, np.nan)
    out = {}
    for n in range(upto + 1):  # n documents judged
        found = route(data.a, data.b, revealed, data.docs, np.random.default_rng(seed))
        if n >= CHECKPOINTS[0]:
            out[n] = interval_of(found)
        here = data.docs == found.order[0]
        revealed[here] = data.human[aspect][here]
    return out


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
        for n, interval in informative_run(data, aspect, seed, upto).items():
            widths["informative"].setdefault(n, []).append(half(interval))
    return {
        arm: {n: float(np.nanmedian(v)) for n, v in by_n.items()} for arm, by_n in widths.items()
    }


def coverage(data: Data, aspect: str, campaigns: int) -> dict[str, dict[int, tuple[float, int]]]:
    """Per order and size: the share of intervals containing the population's difference,
    and how many campaigns had no interval yet (a band short of judged documents)."""
    target = truth(data, aspect)
    hits: dict[str, dict[int, list[bool | None]]] = {arm: {} for arm in (*ARMS, "agreeing first")}
    for rep in range(campaigns):
        rng = np.random.default_rng(10_000 + rep)
        campaign = data.take(rng.integers(0, data.n_docs, data.n_docs))
        routed = informative_run(campaign, aspect, rep, max(CHECKPOINTS))
        order, agreeing = rng.permutation(campaign.n_docs), agreeing_first(campaign)
        for n in CHECKPOINTS:
            found = {
                "random": plain_interval(campaign, aspect, order[:n], rng),
                "random, one band": one_band_interval(campaign, aspect, order[:n], rep),
                "informative": routed[n],
                "agreeing first": plain_interval(campaign, aspect, agreeing[:n], rng),
            }
            for arm, interval in found.items():
                inside = None if interval is None else bool(interval[0] <= target <= interval[1])
                hits[arm].setdefault(n, []).append(inside)
    return {
        arm: {n: (float(np.mean([h for h in v if h is not None])), v.count(None))
              for n, v in by_n.items()}
        for arm, by_n in hits.items()
    }  # fmt: skip


def needed(widths: dict[int, float], goal: float) -> int | None:
    return next((n for n in sorted(widths) if widths[n] <= goal), None)


def report_aspect(data: Data, aspect: str, args: argparse.Namespace) -> bool:
    started = time.perf_counter()
    medians = simulate(data, aspect, args.seeds, args.upto)
    print(f"\n{aspect}: ROUGE-2 - ROUGE-L = {truth(data, aspect):+.4f} on all 100 documents")
    print(f"  95% CI half-width, median of {args.seeds} seeds   "
          + "  ".join(f"{n:>3} docs" for n in CHECKPOINTS))  # fmt: skip
    for arm in ARMS:
        print(f"  {LABELS[arm]:<44}" + "  ".join(f"{medians[arm][n]:8.4f}" for n in CHECKPOINTS))
    ratio = [medians["informative"][n] / medians["random"][n] for n in CHECKPOINTS]
    print(f"  {'informative / random':<44}" + "  ".join(f"{r:8.3f}" for r in ratio))
    met = False
    for arm in ("random", "random, one band"):
        goal = medians[arm][BASELINE_AT]
        reach = needed(medians["informative"], goal)
        print(f"  documents informative needs for the {BASELINE_AT}-document width of {arm} "
              f"({goal:.4f}): {reach if reach is not None else f'more than {args.upto}'}")  # fmt: skip
        if arm == "random":
            met = reach is not None and reach <= TARGET
    print(f"  target (<= {TARGET} documents for the baseline's {BASELINE_AT}-document width): "
          f"{'MET' if met else 'NOT MET'}")  # fmt: skip
    if args.coverage:
        cover = coverage(data, aspect, args.coverage)
        print(f"  coverage of the population's difference, {args.coverage} campaigns drawn "
              "from SummEval (no interval yet: n)")  # fmt: skip
        for arm, by_n in cover.items():
            note = "  (invalid after routing)" if arm == "agreeing first" else ""
            cells = [
                f"{share:.2f}" + (f" ({none})" if none else "") for share, none in by_n.values()
            ]
            print(f"    {LABELS[arm]:<42}" + "  ".join(f"{c:>8}" for c in cells) + note)
    print(f"  ({time.perf_counter() - started:.0f} s)")
    return met


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
    dataset = Dataset.objects.create(name="summeval", owner=owner,
                                     task=TaskKind.objects.get(code="summarization"))  # fmt: skip
    by_doc: dict[int, Document] = {}
    for code, record in zip(data.docs, data.records, strict=True):
        if code not in by_doc:
            by_doc[code] = Document.objects.create(dataset=dataset, doc_key=record["doc_id"],
                                                   source=record["source"], references=record["references"])  # fmt: skip
    outputs = Output.objects.bulk_create(
        Output(document=by_doc[code], system_id=r["system_id"], text=r["output"])
        for code, r in zip(data.docs, data.records, strict=True)
    )
    runs = []
    for label, values in (("ROUGE-2", data.a), ("ROUGE-L", data.b)):
        run = MetricRun.objects.create(dataset=dataset, metric="rouge", label=label, kind="imported",
                                       status=MetricRun.Status.SUCCEEDED)  # fmt: skip
        MetricScore.objects.bulk_create(MetricScore(run=run, output=o, value=float(v))
                                        for o, v in zip(outputs, values, strict=True))  # fmt: skip
        runs.append(run)
    study = Study.objects.create(name="bench", dataset=dataset, owner=owner)
    relevance = Aspect.objects.filter(code="REL").first() or Aspect.objects.first()
    campaigns = {}
    for mode in (Campaign.Routing.RANDOM, Campaign.Routing.INFORMATIVE):
        annotator = User.objects.create_user(f"bench-{mode}", password="x")
        annotator.groups.add(Group.objects.get(name=ANNOTATOR))
        spec = CampaignSpec(name=mode, aspects=[relevance], overlap=1, annotators=[annotator],
                            routing=mode, question_run_a=runs[0], question_run_b=runs[1],
                            question_aspect=relevance)  # fmt: skip
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
        print(f"  {part:<7} random {med['random']:6.2f} ms (p90 {p90['random']:6.2f})   informative "
              f"{med['informative']:6.2f} ms (p90 {p90['informative']:6.2f})   "
              f"x random {med['informative'] / med['random']:.2f}")  # fmt: skip


def timed_section(name: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = fn()
    print(f"{name} in {time.perf_counter() - started:.1f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aspects", nargs="*", choices=ASPECTS, default=list(ASPECTS),
                        help="none: the lease timing only")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--upto", type=int, default=60, help="documents the informative order runs to"
    )
    parser.add_argument("--coverage", type=int, default=200, help="campaigns drawn (0: skip)")
    parser.add_argument("--leases", type=int, default=200)
    parser.add_argument("--no-lease", action="store_true")
    args = parser.parse_args()
    if not SUMMEVAL.is_file():
        sys.exit(f"needs {SUMMEVAL} (the shared data folder beside the repository)")
    sys.path.insert(0, str(REPO))
    data = timed_section("SummEval scored with ROUGE-2 and ROUGE-L", load)
    met = [report_aspect(data, aspect, args) for aspect in args.aspects]
    if met:
        print(f"\ntarget (informative reaches random's {BASELINE_AT}-document width with <= "
              f"{TARGET} documents) met on {sum(met)} of {len(met)} aspects")  # fmt: skip
    if not args.no_lease:
        tmp = Path(tempfile.mkdtemp(prefix="concordia-routing-"))
        try:
            setup_django(tmp)
            lease_timing(data, args.leases)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
