"""What an annotator's item page shows: the source (or the dialogue as turns), the
references when the campaign shows them, the output(s), one control per aspect, the
comment, and the way back to the item answered before. Never metric scores, nor other
annotators' answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.models import Assignment, Campaign
from annotation.services.answers import current_answers, revision_of, scale_points
from annotation.services.assignment import previous_answered
from studies.models import Aspect

PAIRWISE_POINTS = (
    ("left", "1", "Left is better"),
    ("tie", "2", "Tie"),
    ("right", "3", "Right is better"),
)


@dataclass(frozen=True)
class Point:
    value: str  # what the form posts
    key: str  # the digit that picks it ("" when none)
    label: str
    anchor: str


@dataclass(frozen=True)
class AspectControl:
    aspect: Aspect
    points: list[Point]
    current: str
    labelled: bool = False  # a binary or categorical aspect's labels, not a scale

    @property
    def anchored(self) -> list[Point]:
        """The points with an anchor label, for the scale's legend."""
        return [p for p in self.points if p.anchor]


def turns(context: Any) -> list[dict[str, str]] | None:
    """A dialogue history as turns ``{"speaker", "text"}``; None when it is not one."""
    if isinstance(context, dict):
        for key in ("history", "turns", "dialogue", "messages"):
            if isinstance(context.get(key), list):
                return turns(context[key])
        return None
    if not isinstance(context, list) or not context:
        return None
    result = []
    for turn in context:
        if isinstance(turn, str):
            result.append({"speaker": "", "text": turn})
        elif isinstance(turn, dict):
            speaker = turn.get("speaker") or turn.get("role") or ""
            text = turn.get("text") or turn.get("content") or turn.get("utterance") or ""
            result.append({"speaker": str(speaker), "text": str(text)})
        else:
            return None
    return result


def _fmt(value: float) -> str:
    return f"{value:g}"


def _current(raw: Any) -> str:
    try:
        return _fmt(float(raw))
    except (TypeError, ValueError):
        return ""


def label_key(position: int) -> str:
    """The digit that picks the label at ``position``: 1..9, then 0 for the tenth ("" past
    it: those are clicked)."""
    return str(position + 1) if position < 9 else ("0" if position == 9 else "")


def label_points(aspect: Aspect) -> list[Point]:
    """A binary or categorical aspect's labels in their declared order: the form posts the
    label's position (what a label judgment stores), the digit is its place from 1."""
    return [
        Point(_fmt(float(k)), label_key(k), str(label), "")
        for k, label in enumerate(aspect.labels or [])
    ]


def controls(campaign: Campaign, answers: dict[int, Any]) -> list[AspectControl]:
    result = []
    for aspect in campaign.aspect_list():
        if campaign.is_pairwise:
            points = [Point(v, k, label, "") for v, k, label in PAIRWISE_POINTS]
            current = str(answers.get(aspect.pk, ""))
        elif aspect.is_labelled:
            current = _current(answers.get(aspect.pk))
            result.append(AspectControl(aspect, label_points(aspect), current, labelled=True))
            continue
        else:
            anchors = aspect.anchors if isinstance(aspect.anchors, dict) else {}
            points = [
                Point(
                    _fmt(p),
                    _fmt(p) if len(_fmt(p)) == 1 else "",
                    _fmt(p),
                    str(anchors.get(_fmt(p), "")),
                )
                for p in scale_points(aspect)
            ]
            current = _current(answers.get(aspect.pk))
        result.append(AspectControl(aspect, points, current))
    return result


def item_references(item: Any) -> list[str]:
    """The references an item shows: a Likert item's output's own (an output that is
    itself a reference is not shown against itself), else its document's."""
    if item.output_b_id is None and item.output_a_id is not None:
        return item.output_a.reference_texts()
    return list(item.document.references or [])


def item_context(
    assignment: Assignment, draft: dict[int, Any] | None = None, comment: str | None = None
) -> dict[str, Any]:
    """The template context of an item; ``draft`` and ``comment`` replace the stored
    answers and comment (a rejected submission is shown back as the annotator left it)."""
    item = assignment.item
    campaign = item.campaign
    document = item.document
    if campaign.is_pairwise:
        a, b = item.output_a, item.output_b
        outputs = (
            [("Left", a), ("Right", b)] if assignment.left_is_a else [("Left", b), ("Right", a)]
        )
    else:
        outputs = [("Output", item.output_a)]
    stored = current_answers(assignment)
    answers = stored if draft is None else draft
    return {
        "campaign": campaign,
        "assignment": assignment,
        "item": item,
        "document": document,
        "turns": turns(document.context),
        "references": item_references(item) if campaign.show_references else [],
        "outputs": [{"label": label, "text": output.text} for label, output in outputs],
        "controls": controls(campaign, answers),
        "comment": assignment.comment if comment is None else comment,
        "revisiting": assignment.status == Assignment.Status.DONE,
        "previous": previous_answered(assignment),
        "revision": revision_of(stored),  # sent back: a form from an older page is refused
    }
