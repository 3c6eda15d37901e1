"""GPTScore (Fu et al. 2023): the mean log-probability of a text given a prompt built
from a task description, an aspect definition and a context.

This module turns outputs into :class:`~scoring.lm.base.TargetRequest` items and the
model's answers back into one score per output. Dimensions:

* ``src_hypo``: p(hypothesis | source), the template's ``{src}`` context;
* ``ref_hypo``: p(hypothesis | reference); ``hypo_ref``: p(reference | hypothesis);
  with several references each is scored and the scores aggregated (``max``, as the
  reference code does, or ``mean``);
* ``avg_f``: the average of ``ref_hypo`` and ``hypo_ref`` (two templates);
* ``hypo``: p(hypothesis) under the ``src_hypo`` template with the source (and a
  dialogue's history) left empty: the source-free sentinel of Perrella et al. (2024),
  which shows how much of GPTScore's correlation owes nothing to the source.

Settings: VAL and IST differ only in the template the caller passes (vanilla or with
instruction); IDM prepends ``k`` demonstrations, each the same template filled with
another document's source and output.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from scoring.lm.base import LanguageModel, Reduction, TargetRequest, TargetScore
from scoring.metrics.base import Item, ScoreResult
from scoring.prompts import render

DIMENSIONS = ("src_hypo", "ref_hypo", "hypo_ref", "avg_f", "hypo")
WITHOUT_REFERENCE = ("src_hypo", "hypo")  # one request per output, no reference
SETTINGS = ("VAL", "IST", "IDM")
REFERENCE_AGGREGATIONS = ("max", "mean")
DEMO_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Template:
    """A prompt (everything before the scored text) and the scored text's template."""

    text: str
    target: str = "{hypo}"


@dataclass(frozen=True)
class Demonstration:
    """A filled-in example for IDM: another document's source, reference and output."""

    source: str
    hypothesis: str
    reference: str = ""


@dataclass(frozen=True)
class GPTScoreConfig:
    """How to score: the templates (``reverse`` is the hypo→ref one for ``avg_f``)."""

    template: Template
    dimension: str = "src_hypo"
    setting: str = "IST"
    aspect_definition: str = ""
    task_description: str = ""
    reverse: Template | None = None
    reduction: Reduction = Reduction.MEAN
    reference_aggregation: str = "max"
    k: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dimension not in DIMENSIONS:
            raise ValueError(f"unknown dimension {self.dimension!r}; use one of {DIMENSIONS}")
        if self.setting not in SETTINGS:
            raise ValueError(f"unknown setting {self.setting!r}; use one of {SETTINGS}")
        if self.reference_aggregation not in REFERENCE_AGGREGATIONS:
            raise ValueError(f"reference aggregation must be one of {REFERENCE_AGGREGATIONS}")
        if self.dimension == "avg_f" and self.reverse is None:
            raise ValueError("avg_f needs the hypo→ref template as `reverse`")
        if self.setting == "IDM" and self.k < 1:
            raise ValueError("IDM needs k ≥ 1 demonstrations")


def render_history(history: Sequence[str], response: str) -> str:
    """Dialogue turns as the paper's conversation text, the scored response last."""
    speakers = ["Human", "AI"] if len(history) % 2 == 1 else ["AI", "Human"]
    lines = [f"{speakers[i % 2]}: {turn}" for i, turn in enumerate(history)]
    return "\n".join([*lines, f"AI: {response}"])


def fill(template: Template, values: Mapping[str, str]) -> tuple[str, str]:
    """Render prompt and target; a space joins them when neither side has one (the
    model sees ``prompt + target``, and "Tl;dr" + " The…" tokenises as text does)."""
    prompt, target = render(template.text, values), render(template.target, values)
    if prompt and target and not prompt[-1].isspace() and not target[0].isspace():
        target = " " + target
    return prompt, target


def pick_demonstrations(
    pool: Mapping[str, Demonstration], doc_key: str, k: int, seed: int
) -> list[Demonstration]:
    """``k`` demonstrations from other documents, the same ones every time for a
    (document, seed): a document is never its own demonstration."""
    others = sorted(key for key in pool if key != doc_key)
    rng = random.Random(f"{seed}:{doc_key}")
    return [pool[key] for key in rng.sample(others, min(k, len(others)))]


def _values(config: GPTScoreConfig, item: Item, hypo: str, ref: str, src: str) -> dict[str, str]:
    return {
        "src": src,
        "ref": ref,
        "hypo": hypo,
        "history": render_history(item.history, hypo) if item.history else src,
        "aspect_definition": config.aspect_definition,
        "task_description": config.task_description,
    }


def _request(
    config: GPTScoreConfig,
    template: Template,
    item: Item,
    ref: str,
    demos: Sequence[Demonstration],
    key: Hashable,
) -> TargetRequest:
    blind = config.dimension == "hypo"  # the source-free sentinel sees no source, no history
    if blind:
        item = replace(item, source="", history=())
    prompt, target = fill(template, _values(config, item, item.hypothesis, ref, item.source))
    if demos:
        shown = []
        for demo in demos:
            source = "" if blind else demo.source
            demo_item = Item(key=None, doc_key="", source=source, hypothesis=demo.hypothesis)
            p, t = fill(
                template, _values(config, demo_item, demo.hypothesis, demo.reference, source)
            )
            shown.append(p + t)
        prompt = DEMO_SEPARATOR.join(shown) + DEMO_SEPARATOR + prompt
    return TargetRequest(key=key, prompt=prompt, target=target)


def build_requests(
    items: Sequence[Item],
    config: GPTScoreConfig,
    demonstrations: Mapping[str, Sequence[Demonstration]] | None = None,
) -> list[TargetRequest]:
    """The model requests for ``items``; keys are (item key, direction, reference index)."""
    requests: list[TargetRequest] = []
    for item in items:
        demos = (demonstrations or {}).get(item.doc_key, ()) if config.setting == "IDM" else ()
        if config.dimension in WITHOUT_REFERENCE:
            requests.append(
                _request(config, config.template, item, "", demos, (item.key, config.dimension, 0))
            )
            continue
        directions: list[tuple[str, Template | None]] = (
            [("ref_hypo", config.template), ("hypo_ref", config.reverse)]
            if config.dimension == "avg_f"
            else [(config.dimension, config.template)]
        )
        for name, template in directions:
            assert template is not None
            for r, ref in enumerate(item.references):
                requests.append(_request(config, template, item, ref, demos, (item.key, name, r)))
    return requests


def _request_key(key: Hashable) -> tuple[Hashable, str, int]:
    if not isinstance(key, tuple) or len(key) != 3:
        raise ValueError(f"not a GPTScore request key: {key!r}")
    return key[0], str(key[1]), int(key[2])


def combine(
    items: Sequence[Item], scores: Sequence[TargetScore], config: GPTScoreConfig
) -> list[ScoreResult]:
    """One :class:`ScoreResult` per item, in order, from the model's answers."""
    by_item: dict[Hashable, dict[str, list[TargetScore]]] = defaultdict(lambda: defaultdict(list))
    for score in scores:
        key, direction, _ref = _request_key(score.key)
        by_item[key][direction].append(score)
    results = []
    for item in items:
        directions = by_item.get(item.key, {})
        if not directions:
            results.append(
                ScoreResult(
                    item.key,
                    None,
                    error="no reference to score against"
                    if config.dimension not in WITHOUT_REFERENCE
                    else "nothing was scored",
                )
            )
            continue
        failed = [s.error for d in directions.values() for s in d if not s.ok]
        if failed:
            results.append(ScoreResult(item.key, None, error=str(failed[0])))
            continue
        details: dict[str, Any] = {"reduction": str(config.reduction)}
        per_direction = []
        for name, answers in directions.items():
            values = [s.reduced(config.reduction) for s in answers]
            finite = [v for v in values if v is not None]
            value = (
                max(finite) if config.reference_aggregation == "max" else sum(finite) / len(finite)
            )
            per_direction.append(value)
            details[name] = {
                "value": value,
                "per_reference": finite if len(finite) > 1 else None,
                "mean": [s.mean for s in answers],
                "sum": [s.sum for s in answers],
                "n_tokens": [s.n_tokens for s in answers],
                "truncated": any(s.truncated for s in answers),
            }
        details["truncated"] = any(
            d["truncated"] for k, d in details.items() if isinstance(d, dict)
        )
        results.append(ScoreResult(item.key, sum(per_direction) / len(per_direction), details))
    return results


def score(
    model: LanguageModel,
    items: Sequence[Item],
    config: GPTScoreConfig,
    demonstrations: Mapping[str, Sequence[Demonstration]] | None = None,
) -> list[ScoreResult]:
    """Score ``items`` with ``model``: lists in, aligned lists out."""
    requests = build_requests(items, config, demonstrations)
    return combine(items, model.score_targets(requests), config)
