"""A pairwise judge (MT-Bench, Zheng et al. 2023; AlpacaEval): the model sees two outputs
of one document, Output A and Output B, with the aspect's name and definition, and is
asked which is better ("Answer A or B", and "or C for a tie" when the run allows ties).
p(A), p(B) (and p(C)) are read from the next-token probabilities of the answer through
the :class:`~scoring.lm.rating.RatingModel` protocol (the local engine and the served
endpoints both give it), or estimated from ``n_samples`` sampled answers where an
endpoint gives no log-probabilities (each result then says ``sampled``).

Every pair is judged in **both orders**: ``ab`` shows the pair's first output as A,
``ba`` shows it as B. Each order's distribution is kept, in the order's own frame
(``[p(A), p(B), p(tie)]``). The pair's preference is the average over the orders, in
the pair's frame: p(first better) = (ab[A] + ba[B]) / 2, p(second better) =
(ab[B] + ba[A]) / 2, p(tie) = (ab[C] + ba[C]) / 2.

The prompt is wrapped in the model's chat template when it has one. The source comes
before the outputs, so every prompt of a document shares its text up to the first
output (the local engine computes that prefix once per document).

An output's score (:func:`score`) is its mean preference against the outputs it was
paired with, P(win) + ½·P(tie) averaged over its judged pairs, so a pairwise run is also
a pointwise metric; its details keep the pairs it is the first member of (see
:func:`score` for the format).
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.lm.rating import (
    ChatFormatter,
    RatingDistribution,
    RatingModel,
    RatingRequest,
    TextSampler,
)
from scoring.metrics.base import Item, ScoreResult

ESTIMATIONS = ("probs", "sampled")
ORDERS = ("ab", "ba")  # ab: the pair's first output shown as A; ba: shown as B
SELECTIONS = ("all", "k", "campaign")  # which pairs a run judges
LABELS = ("A", "B", "C")  # C: a tie
INTRODUCTION = (
    "Please act as an impartial judge and compare two {outputs} written for the same "
    "{source}, Output A and Output B. Decide which of the two is better on the "
    "criterion below. Do not let the order in which they are shown or their length "
    "influence your decision."
)


@dataclass(frozen=True)
class PairwiseConfig:
    """Everything a pairwise judge's prompt and answer depend on (frozen with a run)."""

    introduction: str
    aspect_name: str
    definition: str
    source_label: str = "Source Text"
    ties: bool = False
    use_chat_template: bool = True
    estimation: str = "probs"
    n_samples: int = 20
    temperature: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.estimation not in ESTIMATIONS:
            raise ValueError(f"estimation must be one of {ESTIMATIONS}")
        if self.estimation == "sampled" and self.n_samples < 1:
            raise ValueError("sampled estimation needs n_samples ≥ 1")

    @property
    def labels(self) -> tuple[str, ...]:
        """The answers: A and B, and C (a tie) when the run allows ties."""
        return LABELS if self.ties else LABELS[:2]


def introduction_for(source_label: str, output_label: str) -> str:
    """The task's introduction in MT-Bench's style, naming its texts (``Summary`` and
    ``Source Text`` → "two summaries written for the same source text")."""
    noun = output_label.lower()
    plural = f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"
    return INTRODUCTION.format(outputs=plural, source=source_label.lower())


def question(config: PairwiseConfig) -> str:
    """The question the answer follows."""
    tail = "Answer A or B, or C for a tie." if config.ties else "Answer A or B."
    return f"Which output is better on {config.aspect_name}? {tail}"


def build_prompt(config: PairwiseConfig, source: str, output_a: str, output_b: str) -> str:
    """The prompt for one order of a pair (before any chat template)."""
    parts = [
        config.introduction,
        f"Evaluation Criterion:\n\n{config.aspect_name} - {config.definition.strip()}",
    ]
    if source:
        parts.append(f"{config.source_label}:\n\n{source}")
    parts += [f"Output A:\n\n{output_a}", f"Output B:\n\n{output_b}", question(config), "Answer:"]
    return "\n\n".join(parts)


def formatter(model: object, config: PairwiseConfig) -> Callable[[str], str]:
    """The model's chat template when it has one and the config asks for it."""
    if config.use_chat_template and isinstance(model, ChatFormatter):
        return model.chat_prompt
    return lambda text: text


def label_texts(prompt: str, labels: Sequence[str]) -> tuple[str, ...]:
    """Labels as they follow the prompt: a space after a prompt that ends without one."""
    sep = "" if prompt and prompt[-1].isspace() else " "
    return tuple(f"{sep}{label}" for label in labels)


def parse_answer(text: str, labels: Sequence[str]) -> str | None:
    """The label a sampled answer starts with (after spaces, quotes, ``Output``), or None."""
    match = re.match(r"[\s\-*:(\"'`]*(?:Output\s+)?([A-Za-z])(?![A-Za-z])", text)
    if match is None:
        return None
    found = match.group(1).upper()
    return found if found in labels else None


def all_pairs(keys: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Every pair of ``keys`` (sorted), each as (lower, higher)."""
    ordered = sorted(keys)
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :]]


def sampled_pairs(keys: Sequence[Any], k: int, *, seed: int, doc_key: str) -> list[tuple[Any, Any]]:
    """``k`` of :func:`all_pairs` drawn without replacement (all of them when there are
    no more), the same for the same seed and document on every machine (Python's
    string-seeded generator), sorted."""
    pairs = all_pairs(keys)
    if k >= len(pairs):
        return pairs
    return sorted(random.Random(f"{seed}:{doc_key}").sample(pairs, max(0, k)))


def n_pairs(sizes: Sequence[int], selection: str, k: int = 0) -> int:
    """How many pairs ``all`` or ``k`` judges over documents of these sizes."""
    if selection not in ("all", "k"):
        raise ValueError("only 'all' and 'k' pairs are counted from the documents' sizes")
    total = [n * (n - 1) // 2 for n in sizes]
    return sum(total) if selection == "all" else sum(min(k, t) for t in total)


@dataclass(frozen=True)
class PairVerdict:
    """One pair's two orders: each a distribution over the config's labels in the
    order's own frame (``None`` when that order failed, with ``errors`` saying why)."""

    first: Hashable
    second: Hashable
    ab: tuple[float, ...] | None
    ba: tuple[float, ...] | None
    mass: tuple[float | None, float | None] = (None, None)
    sampled: bool = False
    n_unparsed: int = 0
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.ab is not None and self.ba is not None

    def preference(self) -> tuple[float, float, float]:
        """(p(first better), p(second better), p(tie)), averaged over the two orders."""
        if self.ab is None or self.ba is None:
            raise ValueError("a pair needs both orders for its preference")
        return preference(self.ab, self.ba)


def preference(ab: Sequence[float], ba: Sequence[float]) -> tuple[float, float, float]:
    """The pair's preference from its two orders' distributions ([A, B] or [A, B, tie])."""
    tie_ab = ab[2] if len(ab) > 2 else 0.0
    tie_ba = ba[2] if len(ba) > 2 else 0.0
    return ((ab[0] + ba[1]) / 2.0, (ab[1] + ba[0]) / 2.0, (tie_ab + tie_ba) / 2.0)


def requests(
    config: PairwiseConfig,
    items: Sequence[Item],
    pairs: Sequence[tuple[Hashable, Hashable]],
    wrap: Callable[[str], str],
) -> list[RatingRequest]:
    """Two rating requests per pair, ``(index, "ab")`` then ``(index, "ba")``; the pairs
    of one document form a prefix-sharing group."""
    by_key = {item.key: item for item in items}
    out = []
    for index, (first, second) in enumerate(pairs):
        one, two = by_key[first], by_key[second]
        for order, (a, b) in zip(ORDERS, ((one, two), (two, one)), strict=True):
            prompt = wrap(build_prompt(config, one.source, a.hypothesis, b.hypothesis))
            labels = label_texts(prompt, config.labels)
            out.append(RatingRequest((index, order), prompt, labels, one.doc_key))
    return out


def _sampled(
    model: TextSampler, config: PairwiseConfig, reqs: Sequence[RatingRequest]
) -> list[RatingDistribution]:
    out = []
    for request in reqs:
        try:
            answers = model.sample(
                request.prompt,
                n=config.n_samples,
                temperature=config.temperature,
                max_new_tokens=4,
                seed=config.seed,
            )
        except Exception as exc:  # one failing prompt must not lose the others
            out.append(
                RatingDistribution.failed(request.key, f"{type(exc).__name__}: {exc}", sampled=True)
            )
            continue
        counts = [0] * len(config.labels)
        for answer in answers:
            found = parse_answer(answer, config.labels)
            if found is not None:
                counts[config.labels.index(found)] += 1
        out.append(
            RatingDistribution.from_counts(request.key, request.labels, counts, len(answers))
        )
    return out


def judge_pairs(
    model: object,
    items: Sequence[Item],
    pairs: Sequence[tuple[Hashable, Hashable]],
    config: PairwiseConfig,
) -> list[PairVerdict]:
    """Judge each pair (keys of ``items``) in both orders: one verdict per pair, in order.

    ``estimation="probs"`` needs a :class:`RatingModel`; a model without probabilities
    is an error unless the config asks for ``"sampled"``, so nothing falls back silently.
    """
    reqs = requests(config, items, pairs, formatter(model, config))
    if config.estimation == "probs":
        if not isinstance(model, RatingModel):
            raise TypeError(
                f"{type(model).__name__} gives no probabilities; use estimation='sampled' "
                f"(n={config.n_samples} samples at temperature {config.temperature:g})"
            )
        dists = model.rating_distributions(reqs) if reqs else []
    else:
        if not isinstance(model, TextSampler):
            raise TypeError(f"{type(model).__name__} cannot sample text")
        dists = _sampled(model, config, reqs)
    found = {d.key: d for d in dists}
    verdicts = []
    for index, (first, second) in enumerate(pairs):
        ab, ba = found[(index, "ab")], found[(index, "ba")]
        verdicts.append(
            PairVerdict(
                first,
                second,
                ab.probs if ab.ok else None,
                ba.probs if ba.ok else None,
                (ab.label_mass, ba.label_mass),
                ab.sampled or ba.sampled,
                ab.n_unparsed + ba.n_unparsed,
                tuple(f"{o}: {d.error}" for o, d in zip(ORDERS, (ab, ba), strict=True) if d.error),
            )
        )
    return verdicts


def _entry(verdict: PairVerdict) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "vs": verdict.second,
        "ab": None if verdict.ab is None else list(verdict.ab),
        "ba": None if verdict.ba is None else list(verdict.ba),
    }
    if any(m is not None for m in verdict.mass):
        entry["mass"] = list(verdict.mass)
    if verdict.errors:
        entry["error"] = "; ".join(verdict.errors)
    return entry


def results(
    config: PairwiseConfig, items: Sequence[Item], verdicts: Sequence[PairVerdict]
) -> list[ScoreResult]:
    """One result per item (in order) from the verdicts of its pairs.

    ``value``: the item's mean preference over its judged pairs (both orders succeeded),
    P(win) + ½·P(tie). ``details``: ``pairs``, the pairs the item is the first member of,
    each ``{"vs": other key, "ab": [pA, pB(, pT)], "ba": [pA, pB(, pT)]}`` (``ab``: this
    item shown as A; an order that failed is ``null`` and ``error`` says why; ``mass``:
    the probability the model put on the labels at all, per order, when read from
    probabilities); ``n_pairs`` (its judged pairs, as first or second member), ``wins``
    (the sum of its preferences), ``ties``, ``sampled`` (and ``n_samples``,
    ``n_unparsed`` when sampled). An item in no judged pair has no value and says why.
    """
    totals: dict[Hashable, list[float]] = defaultdict(list)
    firsts: dict[Hashable, list[PairVerdict]] = defaultdict(list)
    failures: dict[Hashable, list[str]] = defaultdict(list)
    involved: set[Hashable] = set()
    for verdict in verdicts:
        firsts[verdict.first].append(verdict)
        involved |= {verdict.first, verdict.second}
        if not verdict.ok:
            for key in (verdict.first, verdict.second):
                failures[key].extend(verdict.errors)
            continue
        win, loss, tie = verdict.preference()
        totals[verdict.first].append(win + tie / 2.0)
        totals[verdict.second].append(loss + tie / 2.0)
    sampled = any(v.sampled for v in verdicts)
    out = []
    for item in items:
        mine = firsts.get(item.key, [])
        details: dict[str, Any] = {
            "pairs": [_entry(v) for v in mine],
            "n_pairs": len(totals.get(item.key, [])),
            "wins": math.fsum(totals.get(item.key, [])),
            "ties": config.ties,
            "sampled": sampled,
        }
        if sampled:
            details.update(n_samples=config.n_samples, n_unparsed=sum(v.n_unparsed for v in mine))
        values = totals.get(item.key)
        if values:
            out.append(ScoreResult(item.key, math.fsum(values) / len(values), details))
        elif item.key in involved:
            reasons = "; ".join(dict.fromkeys(failures[item.key])) or "no order succeeded"
            out.append(ScoreResult(item.key, None, details, error=f"every pair failed: {reasons}"))
        else:
            out.append(ScoreResult(item.key, None, details, error="in none of the run's pairs"))
    return out


def score(
    model: object,
    items: Sequence[Item],
    pairs: Sequence[tuple[Hashable, Hashable]],
    config: PairwiseConfig,
) -> list[ScoreResult]:
    """Judge ``pairs`` (keys of ``items``, the first member listed first) in both orders
    and score every item from its pairs (:func:`results`): lists in, aligned lists out."""
    keys = {item.key for item in items}
    unknown = [p for p in pairs if p[0] not in keys or p[1] not in keys or p[0] == p[1]]
    if unknown:
        raise ValueError(f"pairs must join two distinct items given: {unknown[:3]}")
    return results(config, items, judge_pairs(model, items, pairs, config))
