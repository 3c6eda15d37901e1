"""G-Eval on a binary or categorical aspect: p(label) over the aspect's label words.

The prompt is G-Eval's form (introduction, criteria, evaluation steps, the texts) with
the labels in the criteria and a form that asks for one of them
(:data:`scoring.metrics.geval.LABEL_FORM`). The model's probability of each label's
continuation (multi-token labels exactly: every token of the label scored) is
normalised over the labels. The score's value is the predicted label, the most
probable one, as its **position** in the labels, the way a judgment stores a label;
the details keep the whole ``distribution`` ({label: p}), the predicted ``label``, and
for a binary aspect ``p_positive``, the probability of the positive label (what
calibration and a threshold read). How the probabilities were read is recorded:
``read`` is ``exact`` or ``top-k`` (with the labels ``outside`` the candidates), or the
distribution is the frequencies of ``n_samples`` answers sampled at temperature 1
(``sampled``: an endpoint without log-probabilities).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.lm.labels import LabelReading, reader_of
from scoring.lm.rating import RatingDistribution, RatingModel, RatingRequest, TextSampler
from scoring.metrics import geval
from scoring.metrics.base import Item, ScoreResult

LABEL_INTRODUCTION = (
    "You will be given one {output} written for a {source}.\n\n"
    "Your task is to label the {output} on one metric, with one of the labels given.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep "
    "this document open while reviewing, and refer to it as needed."
)


@dataclass(frozen=True)
class LabelConfig:
    """A G-Eval configuration (its ``scale``: the label positions ``0..k-1``) with the
    aspect's labels and, for a binary aspect, the positive one."""

    geval: geval.GEvalConfig
    labels: tuple[str, ...]
    positive: str = ""

    def __post_init__(self) -> None:
        if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels):
            raise ValueError("a label aspect needs at least two distinct labels")
        if any(not label.strip() or label != label.strip() for label in self.labels):
            raise ValueError("labels must be non-empty and without surrounding spaces")
        if self.geval.scale != tuple(range(len(self.labels))):
            raise ValueError("a label run's scale is the label positions 0..k-1")
        if self.positive and (self.positive not in self.labels or len(self.labels) != 2):
            raise ValueError("a positive label is one of the two labels of a binary aspect")


def introduction_for(task: str, template_text: str = "") -> tuple[str, str, str]:
    """(introduction, source label, output label): the task's template's introduction
    when it has one, else the generic one asking for a label."""
    intro, source_label, output_label = geval.introduction_for(task, template_text)
    head = template_text.split("Evaluation Criteria:", 1)[0].strip() if template_text else ""
    if not head:
        noun = {"summarization": "news article"}.get(task, source_label.lower())
        intro = LABEL_INTRODUCTION.format(output=output_label.lower(), source=noun)
    return intro, source_label, output_label


def criteria_text(
    name: str, definition: str, labels: Sequence[str], anchors: Mapping[str, str] | None = None
) -> str:
    """``Faithfulness (yes / no) - definition``, then one line per label described by
    an anchor (keyed by the label or by its position)."""
    lines = [f"{name} ({' / '.join(labels)}) - {definition.strip()}"]
    anchors = anchors or {}
    for k, label in enumerate(labels):
        meaning = anchors.get(label) or anchors.get(str(k))
        if meaning:
            lines.append(f"- {label}: {meaning}")
    return "\n".join(lines)


def form(config: LabelConfig) -> str:
    return geval.LABEL_FORM.format(labels=", ".join(config.labels), aspect=config.geval.aspect_name)


def build_prompt(config: LabelConfig, item: Item) -> str:
    """The form for one output (before any chat template)."""
    return geval.build_prompt(config.geval, item, form(config))


def label_texts(prompt: str, labels: Sequence[str]) -> tuple[str, ...]:
    """Labels as they follow the prompt: a space after a prompt that ends without one."""
    sep = "" if prompt and prompt[-1].isspace() else " "
    return tuple(f"{sep}{label}" for label in labels)


def parse_label(text: str, labels: Sequence[str]) -> int | None:
    """The position of the label a sampled answer starts with (after spaces, ``-``,
    ``*``, quotes; case ignored, the longest label first), or ``None``."""
    rest = re.sub(r"^[\s\-*:\"'`]+", "", text).lower()
    for k in sorted(range(len(labels)), key=lambda k: -len(labels[k])):
        label = labels[k].lower()
        if rest.startswith(label) and not rest[len(label) : len(label) + 1].isalnum():
            return k
    return None


def requests(
    config: LabelConfig, items: Sequence[Item], wrap: Callable[[str], str]
) -> list[RatingRequest]:
    """One request per item; a document's outputs form a prefix-sharing group."""
    out = []
    for item in items:
        prompt = wrap(build_prompt(config, item))
        out.append(
            RatingRequest(item.key, prompt, label_texts(prompt, config.labels), item.doc_key)
        )
    return out


def _sampled(
    model: TextSampler, config: LabelConfig, reqs: Sequence[RatingRequest]
) -> list[RatingDistribution]:
    g = config.geval
    longest = max(len(label) for label in config.labels)
    out = []
    for request in reqs:
        try:
            answers = model.sample(
                request.prompt,
                n=g.n_samples,
                temperature=g.temperature,
                max_new_tokens=longest + 4,  # a token per character at most, and some
                seed=g.seed,
            )
        except Exception as exc:  # one failing prompt must not lose the others
            out.append(
                RatingDistribution.failed(request.key, f"{type(exc).__name__}: {exc}", sampled=True)
            )
            continue
        counts = [0] * len(config.labels)
        for answer in answers:
            found = parse_label(answer, config.labels)
            if found is not None:
                counts[found] += 1
        out.append(
            RatingDistribution.from_counts(request.key, request.labels, counts, len(answers))
        )
    return out


def result(config: LabelConfig, reading: LabelReading) -> ScoreResult:
    """The predicted label's position as the value, the distribution in the details."""
    dist = reading.distribution
    details: dict[str, Any] = {"sampled": dist.sampled, "labels": list(config.labels)}
    if not dist.sampled:
        details.update(read=reading.read, outside=list(reading.outside))
    if not dist.ok:
        return ScoreResult(dist.key, None, details, error=dist.error)
    k = dist.argmax()
    details.update(
        distribution={label: p for label, p in zip(config.labels, dist.probs, strict=True)},
        label=config.labels[k],
        argmax=float(k),
        entropy=dist.entropy(),
        label_mass=dist.label_mass,
    )
    if config.positive:
        details["positive"] = config.positive
        details["p_positive"] = dist.probs[config.labels.index(config.positive)]
    if dist.sampled:
        details.update(n_samples=dist.n_samples, n_unparsed=dist.n_unparsed)
    return ScoreResult(dist.key, float(k), details)


def readings(model: object, reqs: Sequence[RatingRequest]) -> list[LabelReading]:
    """Label distributions as the model reads them: a label reader (a served model)
    says how; a plain :class:`RatingModel` (the local engine) scores every label: exact."""
    read = reader_of(model)
    if read is not None:
        return read(reqs)
    if isinstance(model, RatingModel):
        return [LabelReading(d) for d in model.rating_distributions(reqs)]
    raise TypeError(
        f"{type(model).__name__} gives no probabilities; use estimation='sampled' "
        "(answers sampled at temperature 1)"
    )


def score(model: object, items: Sequence[Item], config: LabelConfig) -> list[ScoreResult]:
    """Score ``items``: lists in, aligned lists out. ``estimation="probs"`` needs label
    probabilities; ``"sampled"`` needs a :class:`TextSampler`; nothing falls back."""
    reqs = requests(config, items, geval.formatter(model, config.geval))
    if config.geval.estimation == "probs":
        found = readings(model, reqs)
    else:
        if not isinstance(model, TextSampler):
            raise TypeError(f"{type(model).__name__} cannot sample text")
        found = [LabelReading(d) for d in _sampled(model, config, reqs)]
    return [result(config, reading) for reading in found]
