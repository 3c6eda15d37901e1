"""Disagreement review: a study's queue of the outputs where a judge run and the humans
disagree most, or the humans among themselves, and the adjudicated labels a researcher
gives them.

Both sides are put on the aspect's scale first. A scale aspect compares the judge's
score (as it is when it lies on the scale, else mapped linearly from the run's own range
onto it) with the mean of the humans' values; the gap and the humans' spread (highest
minus lowest value) are shares of the scale's width. A label aspect compares the judge's
label (its score's nearest label position) with the humans' most frequent label(s): a
mismatch is a gap of 1; the spread is the share of annotators who gave another label than
the most frequent one. An output's priority is the larger of its gap and its spread; the
queue lists those above 0, the largest first.

An adjudication is stored as an :class:`~studies.models.Adjudication`, a source of its own:
the judgments it settles are never changed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, QuerySet

from studies.models import (
    Adjudication,
    Aspect,
    Dataset,
    Judgment,
    MetricRun,
    MetricScore,
    Output,
    Study,
)
from studies.services import annotators

RATIONALE_KEYS = ("rationale", "explanation", "reasoning", "reason")


class AdjudicationError(ValueError):
    """An adjudication the page or the API may not store, with why and the field it is
    about (``value`` or ``output``)."""

    def __init__(self, message: str, field: str = "value") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Point:
    """One choice of the adjudication control: the value it posts, the digit that picks
    it ("" when none), and its label."""

    value: str
    key: str
    label: str


@dataclass(frozen=True)
class QueueItem:
    """One output of the queue, with how much the judge and the humans disagree on it."""

    output_id: int
    humans: int  # how many judgments
    human: float  # the humans' mean (a label aspect: its most frequent label's position)
    judge: float | None  # the judge on the aspect's scale (a label aspect: a position)
    gap: float  # |judge − humans| as a share of the scale (a label aspect: 0 or 1)
    spread: float  # how much the humans disagree, from 0 to 1

    @property
    def priority(self) -> float:
        return max(self.gap, self.spread)

    @property
    def reason(self) -> str:
        """Why it is in the queue, in words."""
        if self.gap >= self.spread:
            return "the judge and the humans disagree"
        return "the humans disagree among themselves"


@dataclass
class Queue:
    """A study's queue for one judge run and one aspect, largest disagreement first, and
    which of its outputs the study has adjudicated."""

    study: Study
    aspect: Aspect
    run: MetricRun | None
    items: list[QueueItem] = field(default_factory=list)
    done: dict[int, float] = field(default_factory=dict)  # output id → adjudicated value

    def next(self) -> QueueItem | None:
        """The first output not adjudicated yet (None: the queue is done)."""
        return next((item for item in self.items if item.output_id not in self.done), None)

    @property
    def left(self) -> int:
        return sum(1 for item in self.items if item.output_id not in self.done)


def format_value(value: float) -> str:
    return f"{value:g}"


def label_key(position: int) -> str:
    """The digit that picks the choice at ``position``: 1..9, then 0 for the tenth (""
    past it), as on the annotation page."""
    return str(position + 1) if position < 9 else ("0" if position == 9 else "")


def points(aspect: Aspect) -> list[Point]:
    """The choices of an aspect: a label aspect's labels (posting their positions, picked
    by their place from 1), else the whole points of its scale (picked by their digit)."""
    if aspect.is_labelled:
        labels = aspect.labels or []
        return [Point(format_value(k), label_key(k), str(lb)) for k, lb in enumerate(labels)]
    steps = int(aspect.scale_max - aspect.scale_min)
    values = [format_value(aspect.scale_min + k) for k in range(steps + 1)]
    return [Point(v, v if len(v) == 1 else "", v) for v in values]


def study_aspects(study: Study) -> QuerySet[Aspect]:
    """The aspects a study adjudicates: its own, else every aspect judged on its dataset."""
    own = study.aspects.all()
    if own.exists():
        return own.order_by("code")
    judged = Judgment.objects.filter(output__document__dataset=study.dataset_id)
    return Aspect.objects.filter(pk__in=judged.values("aspect_id")).order_by("code")


def judge_runs(dataset: Dataset) -> QuerySet[MetricRun]:
    """The runs of a dataset with scores: the judges a queue may compare with, newest first."""
    scored = MetricScore.objects.filter(run=OuterRef("pk"))
    return MetricRun.objects.filter(Exists(scored), dataset=dataset).order_by("-created_at", "-pk")


def choose(study: Study, aspect_code: str, run: str) -> tuple[Aspect | None, MetricRun | None]:
    """The aspect and the judge run a page or an API request names: the study's first
    aspect and its dataset's newest run unless told otherwise; ``run`` ``"0"`` (or any run
    not of the dataset) is the humans' disagreement alone."""
    aspects = study_aspects(study)
    aspect = aspects.filter(code=aspect_code).first() or aspects.first()
    runs = judge_runs(study.dataset)
    named = run.isdigit() and len(run) <= 18  # an id the database can hold
    chosen = runs.filter(pk=int(run)).first() if named else runs.first()
    return aspect, chosen


def on_scale(aspect: Aspect, scores: dict[int, float]) -> dict[int, float]:
    """A run's scores on the aspect's scale: unchanged when they all lie on it, else mapped
    linearly from the run's lowest..highest score onto ``scale_min..scale_max``."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if aspect.scale_min <= low and high <= aspect.scale_max:
        return dict(scores)
    width = aspect.scale_max - aspect.scale_min
    if high == low:
        middle = aspect.scale_min + width / 2
        return dict.fromkeys(scores, middle)
    return {pk: aspect.scale_min + (v - low) / (high - low) * width for pk, v in scores.items()}


def _label_position(aspect: Aspect, value: float) -> int:
    last = max(len(aspect.labels or []) - 1, 0)
    return min(max(round(value), 0), last)


def rank(aspect: Aspect, human: dict[int, list[float]], judge: dict[int, float]) -> list[QueueItem]:
    """The queue's items from each output's human values and the judge's score (on the
    aspect's scale), largest priority first; outputs where nobody disagrees are left out."""
    width = float(aspect.scale_max - aspect.scale_min) or 1.0
    items = []
    for pk, values in human.items():
        score = judge.get(pk)
        if aspect.is_labelled:
            counts = Counter(_label_position(aspect, v) for v in values)
            top = max(counts.values())
            majority = sorted(label for label, n in counts.items() if n == top)
            centre = float(majority[0])
            spread = 1.0 - top / len(values)
            if score is not None:
                score = float(_label_position(aspect, score))
            gap = 0.0 if score is None or int(score) in majority else 1.0
        else:
            centre = sum(values) / len(values)
            spread = (max(values) - min(values)) / width
            gap = 0.0 if score is None else abs(score - centre) / width
        items.append(QueueItem(pk, len(values), centre, score, gap, spread))
    items = [item for item in items if item.priority > 0]
    items.sort(key=lambda i: (-i.priority, -i.gap, -i.spread, i.output_id))
    return items


def build_queue(study: Study, aspect: Aspect, run: MetricRun | None) -> Queue:
    """The study's queue for ``run`` (None: the humans' spread alone) on ``aspect``."""
    human: dict[int, list[float]] = defaultdict(list)
    rows = Judgment.objects.filter(aspect=aspect, output__document__dataset=study.dataset_id)
    for pk, value in rows.values_list("output_id", "value").order_by("output_id", "pk"):
        human[pk].append(float(value))
    judge: dict[int, float] = {}
    if run is not None:
        # the run's own range (every output it scored) maps it onto the scale
        scores = run.scores.filter(value__isnull=False).values_list("output_id", "value")
        judge = on_scale(aspect, {pk: float(v) for pk, v in scores})
    done = dict(
        Adjudication.objects.filter(study=study, aspect=aspect).values_list("output_id", "value")
    )
    return Queue(study, aspect, run, rank(aspect, human, judge), done)


def _shown(aspect: Aspect, value: float) -> str:
    label = aspect.label_of(value) if aspect.is_labelled else None
    return label if label is not None else f"{value:.4g}"


def _rationale(details: dict[str, Any]) -> str:
    for key in RATIONALE_KEYS:
        if isinstance(details.get(key), str) and details[key].strip():
            return str(details[key]).strip()
    return ""


def judge_view(run: MetricRun, aspect: Aspect, item: QueueItem) -> dict[str, Any] | None:
    """What the page shows of the judge on an output: its score as stored and on the
    aspect's scale (a label aspect: the label), its rating distribution, its rationale when
    the score's details keep one, and the run's evaluation steps (G-Eval)."""
    score = run.scores.filter(output_id=item.output_id).first()
    if score is None:
        return None
    details = score.details if isinstance(score.details, dict) else {}
    dist = details.get("distribution")
    steps = run.config.get("steps") if isinstance(run.config, dict) else None
    return {
        "run": run,
        "raw": score.value,
        "error": score.error,
        "value": None if item.judge is None else _shown(aspect, item.judge),
        "distribution": (
            [(str(k), float(p)) for k, p in dist.items() if isinstance(p, int | float)]
            if isinstance(dist, dict)
            else []
        ),
        "rationale": _rationale(details),
        "steps": steps.get("text", "") if isinstance(steps, dict) else "",
    }


def item_view(queue: Queue, item: QueueItem) -> dict[str, Any]:
    """The template context of one queue item: the document, the output, each human's
    value, the judge, and the choices."""
    output = Output.objects.select_related("document").get(pk=item.output_id)
    judgments = (
        Judgment.objects.filter(output=output, aspect=queue.aspect)
        .select_related("annotator")
        .order_by("pk")
    )
    humans = [
        {
            "who": annotators.name(
                j.annotator_id,
                j.import_file,
                j.rater,
                j.annotator.get_username() if j.annotator_id else "",
            ),
            "value": _shown(queue.aspect, j.value),
        }
        for j in judgments
    ]
    current = queue.done.get(item.output_id)
    return {
        "item": item,
        "output": output,
        "document": output.document,
        "humans": humans,
        "judge": judge_view(queue.run, queue.aspect, item) if queue.run else None,
        "points": points(queue.aspect),
        "current": "" if current is None else format_value(current),
    }


def parse_value(aspect: Aspect, raw: str) -> float:
    """A posted choice as the value an adjudication stores; refused when it is not one."""
    allowed = {p.value: float(p.value) for p in points(aspect)}
    try:
        value = format_value(float(raw))
    except (TypeError, ValueError):
        value = ""
    if value not in allowed:
        shown = ", ".join(p.label for p in points(aspect))
        raise AdjudicationError(f"{aspect.name}: choose one of {shown}")
    return allowed[value]


def adjudicate(
    study: Study, aspect: Aspect, output_id: int, raw: str, user: Any, run: MetricRun | None
) -> Adjudication:
    """Store (or replace) the study's adjudicated value of an output on an aspect. The
    output must be of the study's dataset and judged on the aspect; judgments stay as
    they are."""
    value = parse_value(aspect, raw)
    judged = Judgment.objects.filter(
        aspect=aspect, output_id=output_id, output__document__dataset=study.dataset_id
    )
    if not judged.exists():
        raise AdjudicationError(
            "That output has no judgment on this aspect in this study.", field="output"
        )
    found, _ = Adjudication.objects.update_or_create(
        study=study,
        output_id=output_id,
        aspect=aspect,
        defaults={"value": value, "adjudicator": user, "run": run},
    )
    return found


def adjudicated_counts(dataset: Dataset, study: Study | None = None) -> list[dict[str, Any]]:
    """How many outputs have an adjudicated value, per aspect (of one study, or of every
    study of the dataset), for the report card's note."""
    rows = Adjudication.objects.filter(study__dataset=dataset)
    if study is not None:
        rows = rows.filter(study=study)
    counted = rows.values("aspect__code", "aspect__name").annotate(n=Count("pk"))
    return [
        {"code": r["aspect__code"], "name": r["aspect__name"], "n": r["n"]}
        for r in counted.order_by("aspect__code")
    ]


def adjudications_of(output: Output) -> list[dict[str, Any]]:
    """An output's adjudicated values, each with its study and adjudicator (the output
    page lists them as a source beside the judgments)."""
    rows = output.adjudications.select_related("aspect", "adjudicator", "study")
    return [
        {
            "aspect": a.aspect,
            "value": a.value,
            "label": a.aspect.label_of(a.value) if a.aspect.is_labelled else None,
            "source": f"adjudicated by {a.adjudicator.get_username()} (study {a.study.name})",
            "updated_at": a.updated_at,
        }
        for a in rows.order_by("aspect__code", "study_id")
    ]
