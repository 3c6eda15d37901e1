"""Informative-first routing of a campaign's queue: the campaign's rows turned into the
arrays :mod:`scoring.stats.routing` scores, and its answer as a plan the queue and the
campaign page read.

The question is the campaign's: run A against run B on one aspect. The humans are the
campaign's own answers (its annotators' Likert judgments, averaged per output; for
pairs, each output's share of wins, a tie counting half), so a document counts as
judged once every one of its items has an answer.

Cost: the campaign's outputs with the runs' scores (thousands of rows, the slow read)
are cached until a run changes; the plan itself is recomputed at each claim, so an
answer stored in the same transaction (``submit_and_claim``) already counts. That reads
the annotators' answers on the one aspect and routes: a few milliseconds for SummEval's
100 documents × 16 outputs (``bench/routing.py`` times the lease).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from django.core.cache import cache

from annotation.models import Assignment, Campaign, PairwiseJudgment
from scoring.stats.ranking import Groups
from scoring.stats.routing import Estimate, Question, Routing, estimate, route
from studies.models import Judgment, MetricRun, MetricScore

WINS = {"a": (1.0, 0.0), "b": (0.0, 1.0), "tie": (0.5, 0.5)}  # (output A, output B)
SHOWN = 5  # documents listed as "next" on the campaign page
RECENT = 10  # items handed out listed with their reasons


@dataclass(frozen=True, eq=False)
class Plan:
    """A campaign's routing, by document id: the order the queue hands documents out in,
    each one's score and reason, and the question's current estimate (None until every
    band has two judged documents). Reasons are written only when asked for."""

    routing: Routing
    estimate: Estimate | None

    @cached_property
    def _place(self) -> dict[int, int]:
        return {int(doc): k for k, doc in enumerate(self.routing.keys)}

    @cached_property
    def order(self) -> tuple[int, ...]:
        return tuple(int(self.routing.keys[k]) for k in self.routing.order)

    @cached_property
    def rank(self) -> dict[int, int]:
        return {doc: k for k, doc in enumerate(self.order)}

    @property
    def question(self) -> Question:
        return self.routing.question

    @property
    def n_bands(self) -> int:
        return self.routing.n_bands

    def gain(self, doc: int) -> float:
        return float(self.routing.gain[self._place[doc]])

    def reason(self, doc: int) -> str:
        return self.routing.reason(self._place[doc])

    def judged(self, doc: int) -> bool:
        return bool(self.routing.judged[self._place[doc]])


@dataclass(frozen=True, eq=False)
class Outputs:
    """What does not change while a campaign runs: its outputs (sorted by document, then
    id), their documents, the two runs' scores and, for pairs, the items' outputs."""

    ids: np.ndarray  # output ids, by document
    docs: np.ndarray
    score_a: np.ndarray
    score_b: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    question: Question


def plan_for(campaign: Campaign) -> Plan | None:
    """The campaign's documents routed on the runs' scores and the answers so far; None
    when the campaign routes at random."""
    if not campaign.is_informative:
        return None
    outputs = _outputs(campaign)
    human = _human(campaign, outputs)
    found = route(
        outputs.score_a,
        outputs.score_b,
        human,
        Groups.from_keys(outputs.docs),
        np.random.default_rng(campaign.seed),
        question=outputs.question,
    )
    return Plan(routing=found, estimate=estimate(found))


def _outputs(campaign: Campaign) -> Outputs:
    """The campaign's outputs with the runs' scores, cached until a run changes."""
    runs = {
        pk: (label, finished, done)
        for pk, label, finished, done in MetricRun.objects.filter(
            pk__in=[campaign.question_run_a_id, campaign.question_run_b_id]
        ).values_list("pk", "label", "finished_at", "done")
    }
    key = _key(
        "routing-outputs",
        campaign.pk,
        campaign.created_at,
        campaign.question_aspect_id,
        sorted(runs.items()),
    )
    found: Outputs | None = cache.get(key)
    if found is not None:
        return found
    items = list(campaign.items.values_list("document_id", "output_a_id", "output_b_id"))
    rows = sorted({(d, o) for d, a, b in items for o in (a, b) if o is not None})
    ids = np.array([o for _, o in rows], dtype=np.int64)
    scores: dict[int, list[tuple[int, float]]] = {pk: [] for pk in runs}
    values = MetricScore.objects.filter(run_id__in=list(runs), value__isnull=False)
    for run, output, value in values.values_list("run_id", "output_id", "value"):
        scores[run].append((output, value))
    a, b = campaign.question_run_a_id, campaign.question_run_b_id
    aspect = campaign.question_aspect.name if campaign.question_aspect else ""
    found = Outputs(
        ids=ids,
        docs=np.array([d for d, _ in rows], dtype=np.int64),
        score_a=_means(ids, scores.get(a, [])),
        score_b=_means(ids, scores.get(b, [])),
        pairs=tuple((x, y) for _, x, y in items if y is not None),
        question=Question(runs.get(a, ("A",))[0], runs.get(b, ("B",))[0], aspect),
    )
    cache.set(key, found)
    return found


def _human(campaign: Campaign, outputs: Outputs) -> np.ndarray:
    """Each output's answers so far on the question's aspect (NaN where it has none)."""
    aspect = campaign.question_aspect_id
    if not campaign.is_pairwise:
        rows = Judgment.objects.filter(
            aspect_id=aspect,
            annotator__in=campaign.annotators.all(),
            output__document__dataset_id=campaign.study.dataset_id,
        ).values_list("output_id", "value")
        return _means(outputs.ids, list(rows))
    answered: set[tuple[int, int]] = set()
    wins = []
    pairs = PairwiseJudgment.objects.filter(item__campaign=campaign, aspect_id=aspect).values_list(
        "item__output_a_id", "item__output_b_id", "choice"
    )
    for a, b, choice in pairs:
        win_a, win_b = WINS[choice]
        wins += [(a, win_a), (b, win_b)]
        answered.add((a, b))
    # An output counts once every pair it is in has an answer.
    waiting = {o for pair in outputs.pairs if pair not in answered for o in pair}
    return _means(outputs.ids, [(o, v) for o, v in wins if o not in waiting])


def _means(ids: np.ndarray, rows: list[tuple[int, float]]) -> np.ndarray:
    """Per output of ``ids``, the mean of its values in ``rows`` (NaN where none)."""
    if not rows:
        return np.full(ids.size, np.nan)
    found, values = (np.array(column) for column in zip(*rows, strict=True))
    by_id = np.argsort(ids)
    place = np.searchsorted(ids, found, sorter=by_id)
    place = np.minimum(place, ids.size - 1)
    keep = ids[by_id[place]] == found
    where = by_id[place[keep]]
    total = np.bincount(where, weights=values[keep].astype(float), minlength=ids.size)
    count = np.bincount(where, minlength=ids.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _key(prefix: str, *identity: Any) -> str:
    raw = json.dumps(identity, default=str)
    return f"{prefix}:" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def documents(campaign: Campaign, plan: Plan) -> list[dict[str, Any]]:
    """Every document of the campaign in the plan's order, with its score and reason."""
    names = dict(
        campaign.items.values_list("document_id", "document__doc_key").order_by().distinct()
    )
    return [
        {
            "document": doc,
            "doc_key": names.get(doc, str(doc)),
            "rank": rank,
            "score": plan.gain(doc),
            "judged": plan.judged(doc),
            "reason": plan.reason(doc),
        }
        for rank, doc in enumerate(plan.order)
    ]


def summary(campaign: Campaign) -> dict[str, Any]:
    """The plan as the API gives it: the question, its estimate, the documents in order
    (no question and no documents when the campaign routes at random)."""
    plan = plan_for(campaign)
    if plan is None:
        return {"routing": campaign.routing, "question": None, "estimate": None, "documents": []}
    question = plan.question
    found = plan.estimate
    return {
        "routing": campaign.routing,
        "question": {
            "run_a": question.run_a,
            "run_b": question.run_b,
            "aspect": question.aspect,
            "coefficient": "spearman",
            "level": "sample",
        },
        "estimate": None
        if found is None
        else {
            "difference": found.value,
            "low": found.low,
            "high": found.high,
            "alpha": found.alpha,
            "judged_documents": found.n_judged,
            "bands": found.n_bands,
        },
        "documents": documents(campaign, plan),
    }


def page_context(campaign: Campaign) -> dict[str, Any] | None:
    """What the campaign page shows of the routing: the question and its estimate, the
    next documents with their reasons, the latest items handed out with theirs."""
    plan = plan_for(campaign)
    if plan is None:
        return None
    recent = (
        Assignment.objects.filter(item__campaign=campaign)
        .exclude(routing_reason="")
        .select_related("item__document", "annotator")
        .order_by("-leased_at", "-pk")[:RECENT]
    )
    upcoming = [row for row in documents(campaign, plan) if not row["judged"]][:SHOWN]
    return {"plan": plan, "upcoming": upcoming, "recent": list(recent)}
