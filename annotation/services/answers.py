"""Check and store an annotator's answers to an item.

Likert answers are ``studies.Judgment`` rows (unique per output, aspect and annotator,
so the dashboards read them like imported ones); pairwise answers are
:class:`PairwiseJudgment` rows. Submitting the same answers again writes nothing;
a changed answer (an annotator back on an item they answered, while the campaign is
open) updates the row and adds an :class:`AnswerRevision`. The optional comment on the
item is the assignment's.

The item page carries the revision of the answers it showed (:func:`revision_of`); a
form sent with another revision than the stored one (a page kept in a second tab, or
brought back by the browser's Back after a change) that would change an answer is
refused, naming the stored and the sent value (:class:`StaleAnswers`), instead of
silently putting the old answer back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.models import AnswerRevision, Assignment, Campaign, PairwiseJudgment
from annotation.services.assignment import (
    AnnotationError,
    check_capacity,
    claim_next,
    lock_assignment,
)
from studies.models import Aspect, AspectVersion, Dataset, Judgment

SIDES = {"left": "left", "right": "right", "tie": "tie"}
COMMENT_LENGTH = Assignment._meta.get_field("comment").max_length or 1000


class InvalidAnswer(ValueError):
    """Answers that cannot be stored; nothing was written."""


class StaleAnswers(AnnotationError):
    """Answers sent from a page that showed an older revision of them; nothing was
    written (409: the page comes back with the stored answers)."""


def revision_of(stored: Mapping[int, Any]) -> str:
    """A short token of an item's stored answers (``current_answers``), "" before the
    first: the item page sends it back with the form."""
    if not stored:
        return ""
    raw = json.dumps(sorted((int(k), _shown(v)) for k, v in stored.items()))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def scale_points(aspect: Aspect) -> list[float]:
    """The points an annotator can pick: scale_min, scale_min + 1, …, scale_max."""
    steps = int(aspect.scale_max - aspect.scale_min)
    return [aspect.scale_min + k for k in range(steps + 1)]


def parse_answers(campaign: Campaign, data: Mapping[str, Any]) -> dict[int, Any]:
    """Read ``aspect-<pk>`` fields: a scale point (Likert), a label's position (a binary
    or categorical aspect: what its judgments store) or left/right/tie (pairwise)."""
    answers: dict[int, Any] = {}
    problems = []
    for aspect in campaign.aspect_list():
        raw = str(data.get(f"aspect-{aspect.pk}", "")).strip()
        if not raw:
            problems.append(f"{aspect.name}: choose an answer")
        elif campaign.is_pairwise:
            if raw not in SIDES:
                problems.append(f"{aspect.name}: expected left, right or tie, got {raw!r}")
            answers[aspect.pk] = raw
        else:
            try:
                value = float(raw)
            except ValueError:
                value = float("nan")
            if value not in scale_points(aspect):
                problems.append(f"{aspect.name}: {_expected(aspect)}")
            answers[aspect.pk] = value
    if problems:
        raise InvalidAnswer("; ".join(problems))
    return answers


def _expected(aspect: Aspect) -> str:
    if aspect.is_labelled:  # the form posts a label's position
        return "expected one of the labels " + ", ".join(map(str, aspect.labels))
    return f"expected a point from {aspect.scale_min:g} to {aspect.scale_max:g}"


def parse_comment(raw: Any) -> str | None:
    """The item's comment as sent (trimmed), None when none was sent (left as it is)."""
    if raw is None:
        return None
    comment = str(raw).strip()
    if len(comment) > COMMENT_LENGTH:
        raise InvalidAnswer(f"Comment: at most {COMMENT_LENGTH} characters, got {len(comment)}")
    return comment


def submit(
    assignment_id: int,
    user: Any,
    answers: dict[int, Any],
    comment: str | None = None,
    revision: str | None = None,
) -> bool:
    """Store the answers (see :func:`parse_answers`) and the comment (None: unchanged);
    True if any answer changed. ``revision``: the one the sending page showed (None: not
    checked)."""
    with transaction.atomic():
        changed, dataset_id = _store(assignment_id, user, answers, comment, revision)
        if changed:
            Dataset(pk=dataset_id).bump_data_version()
    return changed


def submit_and_claim(
    assignment_id: int,
    user: Any,
    answers: dict[int, Any],
    campaign: Campaign,
    comment: str | None = None,
    revision: str | None = None,
) -> tuple[bool, Assignment | None]:
    """Store the answers and lease the next item in one transaction (one commit).

    Locks come in the order every flow takes them: the assignment, the campaign (a first
    answer checks its lease under it), the dataset row last."""
    with transaction.atomic():
        changed, dataset_id = _store(assignment_id, user, answers, comment, revision)
        following = claim_next(campaign, user)
        if changed:
            Dataset(pk=dataset_id).bump_data_version()
    return changed, following


def _store(
    assignment_id: int,
    user: Any,
    answers: dict[int, Any],
    comment: str | None,
    revision: str | None = None,
) -> tuple[bool, int]:
    """Write the answers in the caller's transaction: (changed, the dataset to bump).

    A first answer sets the assignment's ``submitted_at`` and ``seconds`` (lease to first
    answer); a changed one leaves them and is dated by its revisions and judgments."""
    assignment = lock_assignment(assignment_id, user)
    if revision is not None:  # under the lock: two tabs sending at once are ordered
        _check_revision(assignment, answers, revision)
    now = timezone.now()
    if assignment.item.campaign.is_pairwise:
        changes = _store_pairwise(assignment, answers)
    else:
        changes = _store_likert(assignment, answers, now)
    AnswerRevision.objects.bulk_create(
        AnswerRevision(assignment=assignment, aspect_id=aspect, **answer)
        for aspect, answer in changes.items()
    )
    # last, so the campaign lock is held briefly; a refusal rolls the writes back
    check_capacity(assignment)
    fields = []
    if assignment.status != Assignment.Status.DONE:
        assignment.status = Assignment.Status.DONE
        assignment.skip_reason = ""
        assignment.submitted_at = now
        assignment.seconds = (now - assignment.leased_at).total_seconds()
        fields = ["status", "skip_reason", "submitted_at", "seconds"]
    if comment is not None and comment != assignment.comment:
        assignment.comment = comment
        fields.append("comment")
    if fields:
        assignment.save(update_fields=fields)
    return bool(changes), assignment.item.campaign.study.dataset_id


def _check_revision(assignment: Assignment, answers: dict[int, Any], revision: str) -> None:
    """Refuse answers sent from a page that showed other stored answers than those now
    stored, when they would change one (sending what is stored changes nothing)."""
    stored = current_answers(assignment)
    if revision_of(stored) == revision:
        return
    aspects = {a.pk: a for a in assignment.item.campaign.aspect_list()}
    names = {pk: a.name for pk, a in aspects.items()}

    def said(aspect: int, value: Any) -> str:  # a label aspect's answer by its label
        found = aspects.get(aspect)
        label = found.label_of(value) if found and isinstance(value, float) else None
        return label if found and found.is_labelled and label is not None else _shown(value)

    changed = [
        f"{names.get(aspect, aspect)} is stored as {said(aspect, stored[aspect])}, "
        f"and this page sent {said(aspect, value)}"
        if aspect in stored
        else f"{names.get(aspect, aspect)} was answered meanwhile"
        for aspect, value in answers.items()
        if aspect not in stored or _shown(stored[aspect]) != _shown(value)
    ]
    if changed:
        raise StaleAnswers(
            "Not saved: this item's answers changed after this page was shown (in another "
            f"tab, or before you went back): {'; '.join(changed)}. The stored answers are "
            "shown now; change them and Save change again to replace them."
        )


def versions_at(aspect_ids: list[int], when: Any) -> dict[int, int]:
    """Each aspect's version current at ``when`` (its id): the newest saved by then, or
    its first when all are newer."""
    chosen: dict[int, int] = {}
    rows = AspectVersion.objects.filter(aspect_id__in=aspect_ids).order_by("aspect_id", "version")
    for aspect_id, pk, created in rows.values_list("aspect_id", "pk", "created_at"):
        if aspect_id not in chosen or created <= when:
            chosen[aspect_id] = pk
    return chosen


def _store_likert(
    assignment: Assignment, answers: dict[int, float], now: Any
) -> dict[int, dict[str, Any]]:
    """New answers record the aspect versions current when the item was handed out (the
    definitions the page showed); a changed answer, those current now."""
    output_id = assignment.item.output_a_id
    shown = versions_at(list(answers), assignment.leased_at)
    current: dict[int, int] | None = None
    existing = {
        j.aspect_id: j
        for j in Judgment.objects.filter(
            output_id=output_id, annotator_id=assignment.annotator_id, aspect_id__in=list(answers)
        )
    }
    changes: dict[int, dict[str, Any]] = {}
    new = []
    for aspect, value in answers.items():
        judgment = existing.get(aspect)
        if judgment is None:
            new.append(
                Judgment(
                    output_id=output_id,
                    aspect_id=aspect,
                    value=value,
                    annotator_id=assignment.annotator_id,
                    aspect_version_id=shown.get(aspect),
                )
            )
        elif judgment.value != value:
            current = current if current is not None else versions_at(list(answers), now)
            Judgment.objects.filter(pk=judgment.pk).update(
                value=value, updated_at=now, aspect_version_id=current.get(aspect)
            )
        else:
            continue
        changes[aspect] = {"value": value}
    # bulk writes skip the per-row data-version signal; submit() bumps it once
    Judgment.objects.bulk_create(new)
    return changes


def _store_pairwise(assignment: Assignment, answers: dict[int, str]) -> dict[int, dict[str, Any]]:
    item = assignment.item
    a_side = "left" if assignment.left_is_a else "right"
    existing = {
        j.aspect_id: j
        for j in PairwiseJudgment.objects.filter(item=item, annotator_id=assignment.annotator_id)
    }
    left_output = item.output_a_id if assignment.left_is_a else item.output_b_id
    changes: dict[int, dict[str, Any]] = {}
    for aspect, side in answers.items():
        choice = "tie" if side == "tie" else ("a" if side == a_side else "b")
        judgment = existing.get(aspect)
        if judgment is not None and judgment.choice == choice:
            continue
        PairwiseJudgment.objects.update_or_create(
            item=item,
            aspect_id=aspect,
            annotator_id=assignment.annotator_id,
            defaults={"choice": choice, "left_output_id": left_output},
        )
        changes[aspect] = {"choice": choice}
    return changes


def current_answers(assignment: Assignment) -> dict[int, Any]:
    """The user's stored answers to the item, as the form shows them (for a revisit)."""
    if assignment.status == Assignment.Status.LEASED and assignment.submitted_at is None:
        return {}  # never answered
    item = assignment.item
    if item.campaign.is_pairwise:
        a_side = "left" if assignment.left_is_a else "right"
        b_side = "right" if assignment.left_is_a else "left"
        sides = {"a": a_side, "b": b_side, "tie": "tie"}
        rows = PairwiseJudgment.objects.filter(item=item, annotator=assignment.annotator)
        return {j.aspect_id: sides[j.choice] for j in rows}
    rows = Judgment.objects.filter(output_id=item.output_a_id, annotator=assignment.annotator)
    return {j.aspect_id: j.value for j in rows}
