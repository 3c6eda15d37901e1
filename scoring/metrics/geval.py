"""G-Eval (Liu et al. 2023): the model fills in an evaluation form, and the score is the
probability-weighted sum of the rating labels, Σ p(s)·s.

The prompt is the task introduction, the evaluation criteria (the aspect's name, scale
and definition), the evaluation steps (generated once by the model itself from the
introduction and criteria: "auto chain-of-thought"; or none, for the ablation), any
human-rated examples (a few-shot tuned judge's, each with the form filled in), the
texts, and "Evaluation Form (scores ONLY): - Aspect:". It is wrapped in the model's
chat template when the model has one. The source comes before the output, so the
outputs of one document share the prompt up to the output (the fast path computes it
once).

Each result keeps the whole distribution over the labels, so the argmax score (the
paper's "- Probs" ablation) and the entropy are there without re-running the model.
``weighting`` says which one is the run's value. When the model gives no probabilities
(``estimation="sampled"``), the distribution is the frequencies of ``n_samples``
answers sampled at temperature 1 (the paper's n = 20 for GPT-4), and every result says
``sampled``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
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

WEIGHTINGS = ("prob", "argmax")
ESTIMATIONS = ("probs", "sampled")
STEPS_HEADER = "Evaluation Steps:"
# How the texts are introduced, per task (G-Eval's SummEval and Topical-Chat prompts).
TEXT_LABELS: dict[str, tuple[str, str]] = {
    "summarization": ("Source Text", "Summary"),
    "dialogue": ("Conversation History", "Response"),
    "data_to_text": ("Table", "Description"),
    "machine_translation": ("Source Sentence", "Translation"),
}
DEFAULT_TEXT_LABELS = ("Source Text", "Generated Text")
INTRODUCTION = (
    "You will be given one {output} written for a {source}.\n\n"
    "Your task is to rate the {output} on one metric.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep "
    "this document open while reviewing, and refer to it as needed."
)


@dataclass(frozen=True)
class GEvalConfig:
    """Everything a G-Eval prompt and score depend on (frozen with a run)."""

    introduction: str
    aspect_name: str
    criteria: str
    scale: tuple[int, ...]
    steps: str = ""  # empty: the no-steps ablation
    source_label: str = DEFAULT_TEXT_LABELS[0]
    output_label: str = DEFAULT_TEXT_LABELS[1]
    use_chat_template: bool = True
    weighting: str = "prob"
    estimation: str = "probs"
    n_samples: int = 20
    temperature: float = 1.0
    seed: int = 0
    # human-rated examples shown before the output (a few-shot tuned judge): (source,
    # output, the humans' answer as the form takes it)
    examples: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}")
        if self.estimation not in ESTIMATIONS:
            raise ValueError(f"estimation must be one of {ESTIMATIONS}")
        if len(self.scale) < 2 or len(set(self.scale)) != len(self.scale):
            raise ValueError("the rating scale needs at least two distinct labels")
        if self.estimation == "sampled" and self.n_samples < 1:
            raise ValueError("sampled estimation needs n_samples ≥ 1")


def integer_scale(scale_min: float, scale_max: float) -> tuple[int, ...]:
    """The rating labels of an aspect's scale: every integer from min to max."""
    if scale_min != int(scale_min) or scale_max != int(scale_max):
        raise ValueError(
            f"G-Eval rates on integer labels; the scale {scale_min:g}-{scale_max:g} is not"
        )
    low, high = int(scale_min), int(scale_max)
    if high - low < 1 or high - low > 100:
        raise ValueError(f"the scale {low}-{high} must have 2 to 101 integer labels")
    return tuple(range(low, high + 1))


def criteria_text(
    name: str, definition: str, scale: Sequence[int], anchors: Mapping[str, str] | None = None
) -> str:
    """``Coherence (1-5) - definition``, then one line per labelled scale point."""
    lines = [f"{name} ({scale[0]}-{scale[-1]}) - {definition.strip()}"]
    for point, label in sorted((anchors or {}).items(), key=lambda kv: _number(kv[0])):
        lines.append(f"- {point}: {label}")
    return "\n".join(lines)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("inf")


def introduction_for(task: str, template_text: str = "") -> tuple[str, str, str]:
    """(introduction, source label, output label) for a task.

    The introduction is the part of the task's G-Eval template before "Evaluation
    Criteria:" when there is one (the paper's wording), else a generic one in its style.
    """
    source_label, output_label = TEXT_LABELS.get(task, DEFAULT_TEXT_LABELS)
    head = template_text.split("Evaluation Criteria:", 1)[0].strip() if template_text else ""
    if not head:
        noun = {"summarization": "news article"}.get(task, source_label.lower())
        head = INTRODUCTION.format(output=output_label.lower(), source=noun)
    return head, source_label, output_label


def steps_prompt(config: GEvalConfig) -> str:
    """The auto-CoT prompt: introduction and criteria, then "Evaluation Steps:".

    The model continues this text (plus :data:`STEPS_PRIMER`) as a plain completion, as
    the paper's text-completion models did; small chat models answer the same text in
    a chat turn with chatter instead of steps.
    """
    return f"{config.introduction}\n\nEvaluation Criteria:\n\n{config.criteria}\n\n{STEPS_HEADER}\n"


def clean_steps(text: str) -> str:
    """Generated steps: from the first numbered line to the end of the numbered list.

    A repeated header and anything before the first step are dropped; the list ends at
    the first paragraph after a blank line that is not a numbered step (small models go
    on with chatter after the steps), or at the first step that repeats an earlier one
    (greedy decoding of a small model loops).
    """
    lines = text.replace("\r\n", "\n").strip().splitlines()
    start = next((i for i, line in enumerate(lines) if _STEP.match(line)), None)
    if start is None:
        stripped = text.strip()
        return (
            stripped[len(STEPS_HEADER) :].strip() if stripped.startswith(STEPS_HEADER) else stripped
        )
    kept: list[str] = []
    seen: set[str] = set()
    blank = False
    for line in lines[start:]:
        if not line.strip():
            blank = True
            continue
        if blank and not _STEP.match(line):
            break
        line = _REPEATED_NUMBER.sub(r"\1\2. ", line.rstrip())
        if _STEP.match(line):
            step = _STEP.sub("", line, count=1).strip().lower()
            if step in seen:  # greedy decoding has started to loop
                break
            seen.add(step)
        if blank and kept:
            kept.append("")
        kept.append(line)
        blank = False
    return "\n".join(kept)


_STEP = re.compile(r"\s*\d+[.)]\s")
_REPEATED_NUMBER = re.compile(r"^(\s*)(\d+)[.)]\s+\2[.)]\s+")
STEPS_PRIMER = "\n1."  # the continuation starts as a numbered list, as the paper's steps do


FORM = "Evaluation Form (scores ONLY):\n\n- {aspect}:"
# The form of a binary or categorical aspect (scoring.metrics.geval_labels): one label.
LABEL_FORM = "Evaluation Form (answer with one of the labels {labels} ONLY):\n\n- {aspect}:"


def build_prompt(config: GEvalConfig, item: Item, form: str = "") -> str:
    """The form for one output (before any chat template); ``form`` replaces the
    Likert form's last part (:data:`FORM`), as a label aspect's does."""
    parts = [config.introduction, f"Evaluation Criteria:\n\n{config.criteria}"]
    if config.steps.strip():
        parts.append(f"{STEPS_HEADER}\n\n{config.steps.strip()}")
    parts.extend(_rated(config, n, e) for n, e in enumerate(config.examples, 1))
    texts = "Example:\n\n"
    if item.source:
        texts += f"{config.source_label}:\n\n{item.source}\n\n"
    texts += f"{config.output_label}:\n\n{item.hypothesis}"
    parts.append(texts)
    parts.append(form or FORM.format(aspect=config.aspect_name))
    return "\n\n".join(parts)


EXAMPLE_HEADER = "Example rated by human annotators ({n}):"


def _rated(config: GEvalConfig, n: int, example: tuple[str, str, str]) -> str:
    """One human-rated example: its texts and the form filled in with the humans' answer."""
    source, output, answer = example
    text = EXAMPLE_HEADER.format(n=n) + "\n\n"
    if source:
        text += f"{config.source_label}:\n\n{source}\n\n"
    return text + f"{config.output_label}:\n\n{output}\n\n- {config.aspect_name}: {answer}"


def formatter(model: object, config: GEvalConfig) -> Callable[[str], str]:
    """The model's chat template when it has one and the config asks for it."""
    if config.use_chat_template and isinstance(model, ChatFormatter):
        return model.chat_prompt
    return lambda text: text


def label_texts(prompt: str, scale: Sequence[int]) -> tuple[str, ...]:
    """Labels as they follow the prompt: a space after a prompt that ends without one."""
    sep = "" if prompt and prompt[-1].isspace() else " "
    return tuple(f"{sep}{value}" for value in scale)


def parse_rating(text: str, scale: Sequence[int]) -> int | None:
    """The label a sampled answer starts with (after spaces, ``-``, ``*``), or ``None``."""
    match = re.match(r"[\s\-*:]*(\d+)(?!\d)", text)
    if match is None:
        return None
    value = int(match.group(1))
    return value if value in scale else None


def requests(
    config: GEvalConfig, items: Sequence[Item], wrap: Callable[[str], str]
) -> list[RatingRequest]:
    """One rating request per item; a document's outputs form a prefix-sharing group."""
    out = []
    for item in items:
        prompt = wrap(build_prompt(config, item))
        out.append(RatingRequest(item.key, prompt, label_texts(prompt, config.scale), item.doc_key))
    return out


def _sampled(
    model: TextSampler, config: GEvalConfig, reqs: Sequence[RatingRequest]
) -> list[RatingDistribution]:
    out = []
    longest = max(len(str(v)) for v in config.scale)
    for request in reqs:
        try:
            answers = model.sample(
                request.prompt,
                n=config.n_samples,
                temperature=config.temperature,
                max_new_tokens=longest + 4,
                seed=config.seed,
            )
        except Exception as exc:  # one failing prompt must not lose the others
            out.append(
                RatingDistribution.failed(request.key, f"{type(exc).__name__}: {exc}", sampled=True)
            )
            continue
        counts = [0] * len(config.scale)
        for answer in answers:
            value = parse_rating(answer, config.scale)
            if value is not None:
                counts[config.scale.index(value)] += 1
        out.append(
            RatingDistribution.from_counts(request.key, request.labels, counts, len(answers))
        )
    return out


def result(config: GEvalConfig, dist: RatingDistribution) -> ScoreResult:
    """A score from a distribution: the weighted sum or the argmax, with all details."""
    if not dist.ok:
        return ScoreResult(dist.key, None, {"sampled": dist.sampled}, error=dist.error)
    values = [float(v) for v in config.scale]
    weighted = dist.weighted(values)
    argmax = values[dist.argmax()]
    details: dict[str, Any] = {
        "distribution": {str(v): p for v, p in zip(config.scale, dist.probs, strict=True)},
        "weighted": weighted,
        "argmax": argmax,
        "entropy": dist.entropy(),
        "label_mass": dist.label_mass,
        "sampled": dist.sampled,
        "weighting": config.weighting,
    }
    if dist.sampled:
        details.update(n_samples=dist.n_samples, n_unparsed=dist.n_unparsed)
    if dist.label_mode:  # a served model: how it read the labels
        details["label_mode"] = dist.label_mode
    if dist.outside_top_k:  # read as 0, each at most its bound: flagged, never silent
        names = dict(zip(dist.labels, map(str, config.scale), strict=True))
        details["outside_top_k"] = {names[label]: b for label, b in dist.outside_top_k}
        details["outside_bound"] = dist.outside_bound
    value = weighted if config.weighting == "prob" else argmax
    return ScoreResult(dist.key, value, details)


def score(model: object, items: Sequence[Item], config: GEvalConfig) -> list[ScoreResult]:
    """Score ``items``: lists in, aligned lists out.

    ``estimation="probs"`` needs a :class:`RatingModel`; a model without probabilities
    is an error unless the config asks for ``"sampled"``, so nothing falls back silently.
    """
    reqs = requests(config, items, formatter(model, config))
    if config.estimation == "probs":
        if not isinstance(model, RatingModel):
            raise TypeError(
                f"{type(model).__name__} gives no probabilities; use estimation='sampled' "
                f"(n={config.n_samples} samples at temperature {config.temperature:g})"
            )
        dists = model.rating_distributions(reqs)
    else:
        if not isinstance(model, TextSampler):
            raise TypeError(f"{type(model).__name__} cannot sample text")
        dists = _sampled(model, config, reqs)
    return [result(config, dist) for dist in dists]
