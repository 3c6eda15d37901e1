"""The instruction-search tuner (issue 40, item 2): a small reflect-and-propose loop in the
manner of GEPA that rewrites a G-Eval judge's evaluation criteria and steps.

The pool starts with the judge's own instructions (its dev figure read from the start
run's stored scores: no request). Each round takes the best candidate so far as the
parent and asks a proposer model for ``candidates`` rewrites of it, each shown the
parent's instructions and a different slice of the judge's worst disagreements with the
humans on the *tune* documents (where the start judge's rank among the tune outputs is
furthest from the humans': a proposal is not scored again on tune, which would spend the
budget; labels read only through :class:`~.labels.TuneLabels`, so a test document's
text or label never reaches the proposer). Each parsed proposal is
scored by prompting the judge again on the dev outputs (a seeded quarter of the tune
documents where the split has no dev), its figure the card's primary statistic
(:mod:`.primary`); the best on dev is chosen (ties: the first in the pool, the start
first), and the judge with the chosen instructions scores every output the start run
scored (the start's stored scores are kept where the start is chosen).

The proposer is the judge's own model (``proposer_endpoint`` empty: the one the tuning's
model factory loaded; a served judge proposes under its own run's cost cap) or a served
endpoint by name, whose ``cost_cap`` (USD) its client enforces before each request. ``budget_requests`` is a hard
limit on the search's requests, proposals and dev outputs rated together (one rated
output counts one request; the final scoring of every output is not part of the search):
a proposal is asked only when it and its dev scoring fit in what is left, and the loop
records why it stopped (``budget``, ``cost_cap`` or ``rounds``).

Resuming: a served proposer's and a served judge's requests go through the database's
response cache (the proposer greedily, at temperature 0), and the budget counts requests
asked, answered from the cache or not, so a killed tuning run again takes the same path
and sends no request twice. A local model decodes greedily and rates deterministically:
running it again recomputes the same proposals and figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.conf import settings

from scoring.lm.rating import TextGenerator
from scoring.lm.served import CostCapReached, ServedClient, ServedModel
from scoring.metrics import geval
from studies.models import MetricRun, Output
from studies.services.catalog import endpoints
from studies.services.runs.core import item_of
from studies.services.runs.served import MAX_RETRIES
from studies.services.tuning.few_shot import (
    Example,
    Judge,
    dev_value,
    tune_outputs,
    worst_examples,
)
from studies.services.tuning.types import Option, TuneContext, Tuned, Tuner

SHOWN_CHARS = 600  # of a source or an output in the proposer's prompt
CRITERIA_HEADER = "Improved evaluation criteria:"
INTRODUCTION = (
    "You improve the instructions an evaluator follows to rate the {aspect} of generated "
    "texts. Below are its current instructions, then texts where its rating disagreed "
    "most with human annotators (on the scale {scale}). Rewrite the instructions so that "
    "its ratings agree with the humans': keep the aspect and the scale, say what the "
    "humans reward or punish that the evaluator missed. Answer with the improved "
    "evaluation criteria, then a line '{steps}' and numbered steps."
)


@dataclass(frozen=True)
class Candidate:
    """One set of instructions in the pool: where it came from and its dev figure."""

    index: int
    round: int  # 0: the start
    parent: int | None
    criteria: str
    steps: str
    dev: float | None = None
    rejected: str = ""  # why it was not scored (unparsed, a duplicate)

    def record(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "candidate": self.index,
            "round": self.round,
            "parent": self.parent,
            "dev": self.dev,
            "instructions": {"criteria": self.criteria, "steps": self.steps},
        }
        if self.rejected:
            found["rejected"] = self.rejected
        return found


# --- the proposer ------------------------------------------------------------------------


class Proposer:
    """The model that rewrites the instructions: greedy, one request per proposal."""

    def __init__(
        self, model: Any, *, endpoint: str = "", client: Any = None, judges: bool = False
    ) -> None:
        if not isinstance(model, TextGenerator):
            raise ValueError(f"the proposer {type(model).__name__} cannot generate text")
        self.model, self.endpoint, self.client = model, endpoint, client
        self.judges = judges  # the judge's own served client: its usage is the run's
        self.requests = 0

    def propose(self, prompt: str, max_new_tokens: int) -> str:
        """The model's rewrite (raises :class:`CostCapReached` before a request that
        would pass a served proposer's cap)."""
        if self.client is not None:  # a chat model behind an endpoint
            text = self.model.generate(
                self.model.chat_prompt(prompt), max_new_tokens=max_new_tokens
            )
        else:  # a plain completion, as the evaluation steps are generated
            text = self.model.generate(
                prompt + "\n\n" + CRITERIA_HEADER, max_new_tokens=max_new_tokens
            )
        self.requests += 1
        return str(text)

    def spent(self) -> dict[str, Any]:
        """What a served proposer spent (requests sent, answers from the cache, cost)."""
        if self.client is None:
            return {"source": "local", "requests": self.requests}
        if self.judges:  # what it spent is in the tuned run's usage, with the judge's
            return {"source": "judge", "endpoint": self.endpoint, "requests": self.requests}
        usage = self.client.usage
        return {
            "source": "served",
            "endpoint": self.endpoint,
            "requests": self.requests,
            "sent": usage.requests,
            "cache_hits": usage.cache_hits,
            "cost": round(usage.cost, 10),
        }


def served_proposer(run: MetricRun, name: str, cost_cap: float | None) -> Proposer:
    """A proposer on the endpoint ``name`` (one the dataset's owner may use), through the
    database's response cache and the shared rate limits, with ``cost_cap``."""
    try:
        endpoint = endpoints.find_endpoint(name, run.dataset.owner)
    except endpoints.EndpointProblem as exc:
        raise ValueError(f"proposer endpoint: {exc}") from exc
    client = ServedClient(
        endpoints.spec_of(endpoint, data_owner=run.dataset.owner_id),
        limiter=endpoints.shared_limiter(),
        cache=endpoints.DatabaseCache(),
        cost_cap=cost_cap,
        max_retries=MAX_RETRIES,
        patience=float(settings.CONCORDIA["SERVED_PATIENCE_SECONDS"]),
    )
    model = ServedModel(client, capabilities=endpoints.stored_capabilities(endpoint))
    return Proposer(model, endpoint=endpoint.name, client=client)


def proposer_prompt(
    judge: Judge, parent: Candidate, shown: list[Example], scores: dict[int, float]
) -> str:
    """What the proposer reads: the parent's instructions and the disagreements shown
    (tune outputs only: their texts, the judge's score and the humans' mean)."""
    config = judge.geval
    scale = f"{config.scale[0]}-{config.scale[-1]}"
    if judge.labelled is not None:
        scale = " / ".join(f"{i} = {label}" for i, label in enumerate(judge.labelled.labels))
    parts = [
        INTRODUCTION.format(aspect=config.aspect_name, scale=scale, steps=geval.STEPS_HEADER),
        f"Current evaluation criteria:\n\n{parent.criteria.strip()}",
        f"Current evaluation steps:\n\n{parent.steps.strip() or '(none)'}",
    ]
    for n, example in enumerate(shown, 1):
        texts = f"Disagreement {n}:\n\n"
        if example.source:
            texts += f"{config.source_label}:\n\n{example.source[:SHOWN_CHARS]}\n\n"
        texts += f"{config.output_label}:\n\n{example.text[:SHOWN_CHARS]}\n\n"
        texts += (
            f"Evaluator's rating: {scores[example.output]:.2f}; humans' mean: {example.human:.2f}"
        )
        parts.append(texts)
    return "\n\n".join(parts)


def parse_proposal(text: str, parent: Candidate) -> tuple[str, str] | None:
    """(criteria, steps) of a proposal; the parent's steps where it gives none; None
    where it gives no criteria."""
    body = text.strip()
    for header in (CRITERIA_HEADER, "Evaluation Criteria:"):
        if body.lower().startswith(header.lower()):
            body = body[len(header) :].strip()
    at = body.find(geval.STEPS_HEADER)
    criteria = (body if at < 0 else body[:at]).strip()
    steps = parent.steps if at < 0 else geval.clean_steps(body[at:])
    return (criteria, steps) if criteria else None


# --- the tuner ---------------------------------------------------------------------------


def _tune_pool(context: TuneContext, ids: list[int], human: dict[int, float]) -> list[Example]:
    outputs = Output.objects.filter(pk__in=ids).select_related("document").order_by("pk")
    return [
        Example(o.pk, o.document.doc_key, o.document.source, o.text, "", human[o.pk])
        for o in outputs
        if o.pk in human and o.pk in context.scores
    ]


def tune(context: TuneContext) -> Tuned:
    run, aspect, options = context.run, context.aspect, context.options
    if run.metric != "geval":
        raise ValueError(
            f"the instructions tuner rewrites a G-Eval judge's criteria and steps; run "
            f"{run.pk} is {run.metric}"
        )
    budget, per_round = int(options["budget_requests"]), int(options["candidates"])
    if budget < 0 or per_round < 1 or int(options["rounds"]) < 0:
        raise ValueError("--budget-requests ≥ 0, --candidates ≥ 1 and --rounds ≥ 0 are needed")
    cap = options["cost_cap"]
    if cap is not None and not (np.isfinite(cap) and cap >= 0):
        raise ValueError("--cost-cap must be a finite number, not negative")
    judge = Judge(run, aspect, context.model_factory)
    start_config = judge.geval
    if options["proposer_endpoint"]:
        proposer = served_proposer(run, options["proposer_endpoint"], cap)
    elif isinstance(judge.model, ServedModel):  # a served judge proposes under its run's cap
        name = str((run.config.get("endpoint") or {}).get("name", ""))
        proposer = Proposer(judge.model, endpoint=name, client=judge.model.client, judges=True)
    else:
        proposer = Proposer(judge.model)
    scored = list(context.scores)
    outputs, docs, learn_ids, dev_ids, dev_source, human = tune_outputs(context)
    pool = _tune_pool(context, learn_ids, human)
    ranked = worst_examples(pool, len(pool), context.scores)  # the worst disagreements first
    shown_each = min(int(options["examples"]), len(ranked))
    dev_items = [item_of(outputs[pk]) for pk in dev_ids]
    final = [item_of(outputs[pk]) for pk in scored if pk in outputs]
    # at most: every proposal's dev outputs, then every output (the budget may stop it
    # sooner; the job's progress then jumps to the end)
    total = int(options["rounds"]) * per_round * len(dev_items) + len(final)
    judge.on_rated = lambda n: context.progress(n, total)
    start = Candidate(
        0,
        0,
        None,
        start_config.criteria,
        start_config.steps,
        dev_value(aspect, dev_ids, docs, context.scores, human),
    )
    candidates, spent, stopped, asked = [start], 0, "rounds", 0
    best = start
    for round_ in range(1, int(options["rounds"]) + 1):
        parent = best
        for _ in range(per_round):
            if spent + 1 + len(dev_items) > budget:
                stopped = "budget"
                break
            offset = (asked * shown_each) % max(1, len(ranked))
            shown = (ranked[offset:] + ranked[:offset])[:shown_each]
            try:
                text = proposer.propose(
                    proposer_prompt(judge, parent, shown, context.scores),
                    int(options["max_new_tokens"]),
                )
            except CostCapReached:
                stopped = "cost_cap"
                break
            asked += 1
            spent += 1
            parsed = parse_proposal(text, parent)
            index = len(candidates)
            if parsed is None or any((c.criteria, c.steps) == parsed for c in candidates):
                why = "unparsed" if parsed is None else "duplicate"
                criteria, steps = parsed or ("", "")
                candidates.append(
                    Candidate(index, round_, parent.index, criteria, steps, None, why)
                )
                continue
            judge.geval = replace(start_config, criteria=parsed[0], steps=parsed[1])
            dev_scores = judge.score(dev_items, [])
            spent += len(dev_items)
            found = Candidate(
                index,
                round_,
                parent.index,
                *parsed,
                dev=dev_value(aspect, dev_ids, docs, dev_scores, human),
            )
            candidates.append(found)
            if found.dev is not None and (best.dev is None or found.dev > best.dev):
                best = found
        if stopped != "rounds":
            break
    if best is start:
        scores = dict(context.scores)  # the same judge: its stored scores
    else:
        judge.geval = replace(start_config, criteria=best.criteria, steps=best.steps)
        scores = judge.score(final, [])
    return Tuned(
        scores=scores,
        provenance={
            "candidate": best.index,
            "round": best.round,
            "parent": best.parent,
            "instructions": {"criteria": best.criteria, "steps": best.steps},
            "candidates": [c.record() for c in candidates],
            "dev": {
                "source": dev_source,
                "documents": len({docs[pk] for pk in dev_ids}),
                "outputs": len(dev_ids),
                "start": start.dev,
                "chosen": best.dev,
            },
            "search": {
                "requests": spent,
                "budget_requests": budget,
                "stopped": stopped,
                "proposals": asked,
                "feedback_outputs": len(ranked),
                "shown_each": shown_each,
            },
            "proposer": proposer.spent(),
            "judge_requests": judge.requests,
            "notes": [
                f"the search stopped: {stopped}"
                + (" (the start's instructions kept)" if best is start else "")
            ],
            "start_config": {k: run.config.get(k) for k in ("model", "model_label")},
        },
    )


TUNER = Tuner(
    name="instructions",
    label="Instruction search (a proposer rewrites the criteria and steps)",
    options=(
        Option("rounds", int, 2, "reflect-and-propose rounds"),
        Option("candidates", int, 2, "proposals per round, each from the best so far"),
        Option("examples", int, 4, "tune disagreements shown in each proposal's prompt"),
        Option(
            "budget_requests",
            int,
            2000,
            "the most requests the search may ask: proposals plus dev outputs rated",
        ),
        Option(
            "cost_cap",
            float,
            None,
            "the most a served proposer may spend, in USD (none: no cap)",
        ),
        Option(
            "proposer_endpoint",
            str,
            "",
            "the served endpoint that proposes (empty: the judge's own local model)",
        ),
        Option("max_new_tokens", int, 384, "the longest proposal, in tokens"),
    ),
    tune=tune,
    prompts=True,
)
