"""A pairwise judge run's results: per system, win rates and Bradley–Terry strengths with
bootstrap intervals by document; the judge's position consistency and first-position
preference (:func:`summary`); and its agreement with human preferences beside the
annotators' agreement with each other on the same pairs (:func:`human_agreement`).

The judge's pairs are read from its scores' details (each output keeps the pairs it is
the lower id of, with both orders' distributions: :mod:`studies.services.runs.pairwise`);
a pair with a failed order is counted and left out.

Human preferences come from one of three kinds of ``source``:

* ``pairwise:<campaign id>``: a pairwise campaign's answers on the run's aspect
  (through :data:`studies.hooks.pairwise_campaigns`), each annotator's answer turned
  into the judged pair's frame;
* ``pairs`` (every imported pairwise judgment of the aspect) or ``pairs:<file>`` (one
  pairs file's): imported preferences (``ImportedPreference``), each annotator's (each
  rater of a file's) turned into the judged pair's frame;
* ``likert`` (every judgment of the aspect) or ``likert:<source>`` (one of the
  dashboards' judgment sources: ``file:…``, ``import:…``, ``campaign:…``): each
  annotator's (each import file's) Likert scores of the pair's two outputs, turned into
  a preference with a stated ``margin``: a difference of at most ``margin`` is a tie.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scoring.stats.bradley_terry import rank_systems
from scoring.stats.judge_agreement import METHODS, Interval, PairwiseAgreement, pairwise_agreement
from scoring.stats.pairwise_judge import (
    VOTE_RULES,
    VoteRule,
    first_position,
    pair_scores,
    position_consistency,
    votes,
)
from studies import hooks
from studies.models import ImportedPreference, Judgment, MetricRun, MetricScore
from studies.services import annotators
from studies.services.analysis.dashboards import judgment_sources, source_filter

RESAMPLES = 1000
CONFIDENCE = 0.95
VOTES = {"a": 1, "tie": 0, "b": -1}  # an imported winner as a vote in its pair's frame


class PairwiseUnavailable(ValueError):
    """No summary or agreement for this run or source; the message says why."""


@dataclass(frozen=True)
class JudgedPairs:
    """The run's pairs judged in both orders, sorted by document and output ids."""

    docs: list[str]
    first: list[int]
    second: list[int]
    first_system: list[str]
    second_system: list[str]
    ab: np.ndarray  # pairs × 2 or × 3, the first output shown as A
    ba: np.ndarray  # the first output shown as B
    n_failed: int
    ties: bool
    sampled: bool


def judged_pairs(run: MetricRun) -> JudgedPairs:
    """Every pair the run judged in both orders (see the module's docstring)."""
    if run.metric != "pairwise":
        raise PairwiseUnavailable(f"Run {run.pk} is no pairwise judge run ({run.metric}).")
    rows = list(
        MetricScore.objects.filter(run=run).values_list(
            "output_id", "output__system_id", "output__document__doc_key", "details"
        )
    )
    system = {output: sys for output, sys, _, _ in rows}
    ties = bool((run.config or {}).get("ties"))
    width = 3 if ties else 2
    found: list[tuple[str, int, int, list[float], list[float]]] = []
    failed, sampled = 0, False
    for output, _, doc, details in rows:
        sampled = sampled or bool((details or {}).get("sampled"))
        for pair in (details or {}).get("pairs", []):
            ab, ba, other = pair.get("ab"), pair.get("ba"), pair.get("vs")
            if ab is None or ba is None or other not in system:
                failed += 1
                continue
            found.append((doc, output, int(other), list(ab)[:width], list(ba)[:width]))
    found.sort(key=lambda row: row[:3])
    return JudgedPairs(
        docs=[row[0] for row in found],
        first=[row[1] for row in found],
        second=[row[2] for row in found],
        first_system=[system[row[1]] for row in found],
        second_system=[system[row[2]] for row in found],
        ab=np.array([row[3] for row in found], dtype=np.float64).reshape(-1, width),
        ba=np.array([row[4] for row in found], dtype=np.float64).reshape(-1, width),
        n_failed=failed,
        ties=ties,
        sampled=sampled,
    )


@dataclass(frozen=True)
class SystemResult:
    """One system: win rate over its pairs, Bradley–Terry log-strength (centred at 0
    over the systems) with its bootstrap interval by document."""

    system: str
    win_rate: float
    n_pairs: int
    strength: float
    low: float
    high: float


@dataclass(frozen=True)
class PairwiseSummary:
    """A pairwise judge run in numbers (NaN where undefined, e.g. without pairs)."""

    run_id: int
    aspect: str
    ties: bool
    sampled: bool
    n_pairs: int  # pairs judged in both orders
    n_failed: int  # pairs with an order that failed (left out)
    n_documents: int
    systems: tuple[SystemResult, ...]  # strongest first
    position_consistency: float  # share of pairs whose verdict survives the swap
    n_consistent: int
    first_position_share: float  # verdicts choosing position A, of those choosing A or B
    first_position_low: float
    first_position_high: float
    first_position_p: float  # exact two-sided binomial test against 0.5
    n_first: int
    n_second: int
    n_position_ties: int
    mean_first: float  # mean p(A) / (p(A) + p(B)) over the orders
    resamples: int
    n_undefined: int  # resamples without a finite Bradley–Terry fit
    confidence: float
    ranking_problem: str = ""  # why strengths or their intervals are missing


def summary(
    run: MetricRun, *, seed: int = 0, n_resamples: int = RESAMPLES, confidence: float = CONFIDENCE
) -> PairwiseSummary:
    """Win rates, Bradley–Terry strengths with intervals over documents resampled with
    ``seed``, position consistency and the first-position preference of ``run``."""
    pairs = judged_pairs(run)
    n = len(pairs.docs)
    names = tuple(sorted({*pairs.first_system, *pairs.second_system}))
    code = {name: k for k, name in enumerate(names)}
    apart = [k for k in range(n) if pairs.first_system[k] != pairs.second_system[k]]
    systems: tuple[SystemResult, ...] = ()
    resamples = undefined = 0
    problem = "" if apart and len(names) >= 2 else "No pair of two different systems: no ranking."
    if not problem:
        ranking = rank_systems(
            [pairs.docs[k] for k in apart],
            [code[pairs.first_system[k]] for k in apart],
            [code[pairs.second_system[k]] for k in apart],
            pair_scores(pairs.ab[apart], pairs.ba[apart]),
            systems=names,
            rng=np.random.default_rng(seed),
            resamples=n_resamples,
            confidence=confidence,
        )
        rows = [
            SystemResult(
                str(name),
                float(ranking.win_rate[k]),
                int(ranking.n_pairs[k]),
                float(ranking.strength[k]),
                float(ranking.low[k]),
                float(ranking.high[k]),
            )
            for k, name in enumerate(names)
        ]
        systems = tuple(sorted(rows, key=lambda r: (-_finite(r.strength), -r.win_rate, r.system)))
        resamples, undefined, problem = ranking.resamples, ranking.n_undefined, ranking.problem
    consistency = position_consistency(pairs.ab, pairs.ba)
    first = first_position(pairs.ab, pairs.ba, confidence)
    share = first.share
    return PairwiseSummary(
        run_id=run.pk,
        aspect=str((run.config or {}).get("aspect", "")),
        ties=pairs.ties,
        sampled=pairs.sampled,
        n_pairs=n,
        n_failed=pairs.n_failed,
        n_documents=len(set(pairs.docs)),
        systems=systems,
        position_consistency=consistency.share,
        n_consistent=consistency.n_consistent,
        first_position_share=share.share_left,
        first_position_low=share.low,
        first_position_high=share.high,
        first_position_p=share.p_value,
        n_first=share.n_left,
        n_second=share.n_right,
        n_position_ties=share.n_ties,
        mean_first=first.mean_first,
        resamples=resamples,
        n_undefined=undefined,
        confidence=confidence,
        ranking_problem=problem,
    )


def _finite(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def agreement_sources(run: MetricRun) -> list[tuple[str, str]]:
    """The human preferences a run may be compared with: (source, label)."""
    dataset = run.dataset
    likert = [("likert", "Likert judgments (every source), as preferences")]
    likert += [
        (f"likert:{value}", f"Likert: {label}") for value, label in judgment_sources(dataset)
    ]
    files = pair_files(run)
    imported = [("pairs", "imported pairwise judgments (every file)")] if files else []
    imported += [(f"pairs:{name}", f"imported pairwise judgments: {name}") for name in files]
    campaigns = hooks.pairwise_campaign_choices(dataset)
    return (
        imported
        + likert
        + [(f"pairwise:{pk}", f"pairwise campaign {label}") for pk, label in campaigns]
    )


def _imported_pairs(run: MetricRun) -> Any:
    """The imported pairwise judgments of the run's dataset on its aspect."""
    aspect = run.aspect_version.aspect_id if run.aspect_version_id else None
    return ImportedPreference.objects.filter(
        output_a__document__dataset=run.dataset, aspect_id=aspect
    )


def pair_files(run: MetricRun) -> list[str]:
    """The files imported pairwise judgments of the run's aspect came from, by name."""
    found = _imported_pairs(run).order_by("import_file").values_list("import_file", flat=True)
    return list(found.distinct())


def _imported_votes(run: MetricRun, file: str, pairs: JudgedPairs) -> dict[str, dict[int, int]]:
    """Per imported annotator, per pair index, its preference in the judged pair's frame
    (``file`` "": every file's)."""
    rows = _imported_pairs(run)
    if file:
        rows = rows.filter(import_file=file)
    index = {(a, b): k for k, (a, b) in enumerate(zip(pairs.first, pairs.second, strict=True))}
    found: dict[str, dict[int, int]] = defaultdict(dict)
    for a, b, winner, import_file, rater in rows.values_list(
        "output_a_id", "output_b_id", "winner", "import_file", "rater"
    ).order_by("pk"):
        vote = VOTES[winner]
        who = annotators.key(None, import_file, rater)
        if (a, b) in index:
            found[who][index[(a, b)]] = vote
        elif (b, a) in index:
            found[who][index[(b, a)]] = -vote
    return found


def _likert_votes(
    run: MetricRun, source: str, margin: float, pairs: JudgedPairs
) -> dict[str, dict[int, int]]:
    """Per annotator (:func:`studies.services.annotators.key`), per pair index, the
    preference its Likert scores of the two outputs give (a difference within
    ``margin``: a tie)."""
    if run.aspect_version is None:
        raise PairwiseUnavailable("The run records no aspect: no Likert judgments to compare.")
    judged = Judgment.objects.filter(
        output__document__dataset=run.dataset,
        aspect_id=run.aspect_version.aspect_id,
        output_id__in={*pairs.first, *pairs.second},
    )
    kept = source_filter(run.dataset, source)
    if kept is not None:
        judged = judged.filter(kept)
    scores: dict[str, dict[int, float]] = defaultdict(dict)
    for output, annotator, import_file, rater, value in judged.values_list(
        "output_id", "annotator_id", "import_file", "rater", "value"
    ):
        scores[annotators.key(annotator, import_file, rater)][output] = value
    found: dict[str, dict[int, int]] = defaultdict(dict)
    for who, given in scores.items():
        for k, (a, b) in enumerate(zip(pairs.first, pairs.second, strict=True)):
            if a in given and b in given:
                delta = given[a] - given[b]
                found[who][k] = 0 if abs(delta) <= margin else (1 if delta > 0 else -1)
    return found


def _campaign_votes(run: MetricRun, campaign: int, pairs: JudgedPairs) -> dict[str, dict[int, int]]:
    """Per annotator, per pair index, its answer in the judged pair's frame."""
    answers = hooks.campaign_preferences(run.dataset, campaign, str(run.config.get("aspect", "")))
    if answers is None:
        raise PairwiseUnavailable(f"There is no pairwise campaign #{campaign} on this dataset.")
    index = {(a, b): k for k, (a, b) in enumerate(zip(pairs.first, pairs.second, strict=True))}
    found: dict[str, dict[int, int]] = defaultdict(dict)
    for answer in answers:
        if (answer.output_a, answer.output_b) in index:
            found[answer.annotator][index[(answer.output_a, answer.output_b)]] = answer.vote
        elif (answer.output_b, answer.output_a) in index:
            found[answer.annotator][index[(answer.output_b, answer.output_a)]] = -answer.vote
    return found


def human_votes(
    run: MetricRun, source: str, pairs: JudgedPairs, *, margin: float = 0.0
) -> dict[str, dict[int, int]]:
    """The human preferences of ``source`` on the judged pairs (see the module)."""
    kind, _, rest = source.partition(":")
    if kind == "pairs":
        return _imported_votes(run, rest, pairs)
    if kind == "pairwise":
        try:
            campaign = int(rest)
        except ValueError:
            raise PairwiseUnavailable(f"Unknown campaign {rest!r}.") from None
        return _campaign_votes(run, campaign, pairs)
    if kind == "likert":
        if not margin >= 0:
            raise PairwiseUnavailable("The margin must be 0 or more.")
        return _likert_votes(run, rest, margin, pairs)
    raise PairwiseUnavailable(
        f"Unknown source {source!r}: use pairs[:…], likert[:…] or pairwise:<id>."
    )


def human_agreement(
    run: MetricRun,
    source: str,
    *,
    margin: float = 0.0,
    rule: VoteRule = "average",
    seed: int = 0,
    n_resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    interval: Interval = "studentized",
) -> PairwiseAgreement:
    """MT-Bench agreement with and without ties and Cohen's κ of the judge's votes
    (``rule``: :func:`scoring.stats.pairwise_judge.votes`) against the human preferences
    of ``source``, beside the annotators' agreement with each other on the same pairs,
    with bootstrap intervals over documents resampled with ``seed`` (``interval``: the
    studentized bootstrap by default, which covered best on 40 documents; with a handful
    of documents its jackknife standard errors are unstable, and the percentile interval
    is the one to read). Only pairs with at least one human preference count."""
    if rule not in VOTE_RULES:
        raise PairwiseUnavailable(f"Unknown vote rule {rule!r}: use {', '.join(VOTE_RULES)}.")
    if interval not in METHODS:
        raise PairwiseUnavailable(f"Unknown interval {interval!r}: use {', '.join(METHODS)}.")
    pairs = judged_pairs(run)
    found = human_votes(run, source, pairs, margin=margin)
    items = sorted({k for given in found.values() for k in given})
    if not items:
        raise PairwiseUnavailable(
            "No judged pair has a human preference from this source (on this aspect)."
        )
    annotators = sorted(found)
    humans = np.full((len(annotators), len(items)), np.nan)
    for r, who in enumerate(annotators):
        for c, k in enumerate(items):
            if k in found[who]:
                humans[r, c] = found[who][k]
    judge = votes(pairs.ab[items], pairs.ba[items], rule).astype(np.float64)
    return pairwise_agreement(
        judge,
        humans,
        [pairs.docs[k] for k in items],
        rng=np.random.default_rng(seed),
        resamples=n_resamples,
        confidence=confidence,
        method=interval,
    )


def as_dict(result: Any) -> dict[str, Any]:
    """A summary or an agreement as JSON-ready data (NaN as None)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return dict(clean(asdict(result)))


@dataclass(frozen=True)
class PairwiseReport:
    """What a pairwise run's page and API show: the summary, the agreement with the
    chosen human preferences (None when none was asked for or none is there), and
    why either is missing."""

    summary: PairwiseSummary | None
    agreement: PairwiseAgreement | None
    source: str
    margin: float
    rule: str
    problem: str = ""
    agreement_problem: str = ""


def report(
    run: MetricRun,
    source: str = "",
    *,
    margin: float = 0.0,
    rule: VoteRule = "average",
    seed: int = 0,
    n_resamples: int = RESAMPLES,
    interval: Interval = "studentized",
) -> PairwiseReport:
    """:func:`summary` and, when ``source`` names human preferences, :func:`human_agreement`."""
    found: dict[str, Any] = {"source": source, "margin": margin, "rule": rule}
    try:
        result = summary(run, seed=seed, n_resamples=n_resamples)
    except PairwiseUnavailable as exc:
        return PairwiseReport(None, None, problem=str(exc), **found)
    if not source:
        return PairwiseReport(result, None, **found)
    try:
        agreement = human_agreement(
            run,
            source,
            margin=margin,
            rule=rule,
            seed=seed,
            n_resamples=n_resamples,
            interval=interval,
        )
    except PairwiseUnavailable as exc:
        return PairwiseReport(result, None, agreement_problem=str(exc), **found)
    return PairwiseReport(result, agreement, **found)
