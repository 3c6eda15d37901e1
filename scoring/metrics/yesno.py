"""A yes/no log-probability judge for a binary aspect (GPTScore-style: the model is
asked a question about the output and its answer's probability is the score).

The prompt gives the aspect's criteria (its name, labels and definition), the texts,
and asks whether the output is the aspect's positive label, to be answered Yes or No.
The score is the log-odds of the answers, ``log p("Yes") − log p("No")`` (each
answer's continuation scored exactly, as G-Eval's labels are: :mod:`.geval_labels`),
so 0 is indifference, and a threshold meets the binary aspect
(:mod:`scoring.stats.threshold`). The details keep ``p_yes`` (normalised over the two
answers: the probability of the positive label), the predicted label (the positive one
when the score is above 0) and how the probabilities were read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.lm.labels import LabelReading
from scoring.lm.rating import ChatFormatter, RatingRequest
from scoring.metrics import geval_labels
from scoring.metrics.base import Item, ScoreResult

QUESTION = "Question: Is the {output} {positive} ({aspect})? Answer with Yes or No ONLY.\n\nAnswer:"


@dataclass(frozen=True)
class YesNoConfig:
    """Everything a yes/no judge's prompt and score depend on (frozen with a run)."""

    introduction: str
    aspect_name: str
    criteria: str
    positive: str  # the aspect's positive label: what "Yes" answers
    negative: str
    source_label: str = "Source Text"
    output_label: str = "Generated Text"
    yes: str = "Yes"
    no: str = "No"
    use_chat_template: bool = True

    def __post_init__(self) -> None:
        if not self.positive or self.positive == self.negative:
            raise ValueError("a yes/no judge needs a binary aspect's two labels")
        if not self.yes.strip() or self.yes == self.no:
            raise ValueError("the answers must be two distinct words")


def build_prompt(config: YesNoConfig, item: Item) -> str:
    """The question for one output (before any chat template)."""
    texts = ""
    if item.source:
        texts += f"{config.source_label}:\n\n{item.source}\n\n"
    texts += f"{config.output_label}:\n\n{item.hypothesis}"
    question = QUESTION.format(
        output=config.output_label.lower(), positive=config.positive, aspect=config.aspect_name
    )
    return "\n\n".join(
        [config.introduction, f"Evaluation Criteria:\n\n{config.criteria}", texts, question]
    )


def _wrap(model: object, config: YesNoConfig) -> Callable[[str], str]:
    if config.use_chat_template and isinstance(model, ChatFormatter):
        return model.chat_prompt
    return lambda text: text


def requests(config: YesNoConfig, items: Sequence[Item], model: object) -> list[RatingRequest]:
    wrap = _wrap(model, config)
    out = []
    for item in items:
        prompt = wrap(build_prompt(config, item))
        answers = geval_labels.label_texts(prompt, (config.yes, config.no))
        out.append(RatingRequest(item.key, prompt, answers, item.doc_key))
    return out


def result(config: YesNoConfig, reading: LabelReading) -> ScoreResult:
    """``log p(yes) − log p(no)`` with the answers' probabilities in the details."""
    dist = reading.distribution
    details: dict[str, Any] = {"read": reading.read, "outside": list(reading.outside)}
    if not dist.ok:
        return ScoreResult(dist.key, None, details, error=dist.error)
    p_yes, p_no = dist.probs
    if p_yes <= 0 or p_no <= 0:
        return ScoreResult(
            dist.key, None, details, error="one answer has no probability: the log-odds is infinite"
        )
    value = math.log(p_yes) - math.log(p_no)
    details.update(
        p_yes=p_yes,
        p_positive=p_yes,
        positive=config.positive,
        label=config.positive if value > 0 else config.negative,
        distribution={config.positive: p_yes, config.negative: p_no},
        label_mass=dist.label_mass,
    )
    return ScoreResult(dist.key, value, details)


def score(model: object, items: Sequence[Item], config: YesNoConfig) -> list[ScoreResult]:
    """Score ``items``: lists in, aligned lists out (a model with probabilities only)."""
    found = geval_labels.readings(model, requests(config, items, model))
    return [result(config, reading) for reading in found]
