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
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import REPO, need_summeval, scratch_dir
from _django import setup_django
from _routing.data import ASPECTS, QUESTIONS, Data, load, write_gptscore
from _routing.lease import lease_timing
from _routing.simulation import BASELINE_AT, CHECKPOINTS, coverage, oracle, simulate, truth

TARGET = 25
LABELS = {
    "random": "random, paired bootstrap (the baseline)",
    "random, one band": "random, informative's interval, 1 band",
    "informative": "informative, stratified interval",
    "agreeing first": "agreeing first, paired bootstrap",
}


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


# --- main ---------------------------------------------------------------------------------


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
    need_summeval()
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
        with scratch_dir("concordia-routing-") as tmp:
            setup_django(tmp)
            lease_timing(data, args.leases)


if __name__ == "__main__":
    main()
