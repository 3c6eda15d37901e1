"""The annotator's queue: claim the next item with a short lease, answer it, skip it.

Overlap is enforced under a lock on the campaign row: a claim, and the first answer to
an item, take it, count the done assignments and unexpired leases, and only then write,
so two annotators claiming at once are served one after the other (a claim is a few
milliseconds) and a lease that lapses while its answer is on the way is never also
given away. On PostgreSQL the lock is ``SELECT … FOR NO KEY UPDATE``; SQLite serialises
write transactions anyway (``transaction_mode=IMMEDIATE``).

A campaign with informative-first routing (:mod:`annotation.services.routing`)
ranks its documents at each claim, and the lease records the document's score and why.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet, Value
from django.utils import timezone

from annotation.models import Assignment, Campaign, Item
from annotation.services.routing import Plan, plan_for

CANDIDATES = 64  # items ranked per claim (a random sample of the queue); the rest wait
FIRST_DOCUMENTS = 8  # informative routing: documents read per query, doubling until found
ROW = ("pk", "system_key", "n", "position", "document_id")  # a candidate: n = its judgments
REASON_LENGTH = Assignment._meta.get_field("routing_reason").max_length or 300
HANDLED = (Assignment.Status.DONE, Assignment.Status.SKIPPED)


class AnnotationError(Exception):
    """A request the queue refuses; the message is shown to the annotator."""

    status = 409


class CampaignClosed(AnnotationError):
    pass


class LeaseLost(AnnotationError):
    pass


def active(prefix: str = "") -> Q:
    """Assignments that count towards an item's overlap (``prefix`` for joins)."""
    now = timezone.now()
    return Q(**{f"{prefix}status": Assignment.Status.DONE}) | Q(
        **{f"{prefix}status": Assignment.Status.LEASED, f"{prefix}expires_at__gt": now}
    )


def taken_by_others(item: Item, user: Any) -> int:
    """Done assignments and live leases of the item, the user's own left out."""
    return Assignment.objects.filter(active(), item=item).exclude(annotator=user).count()


ITEM_RELATED = ("item__document", "item__output_a", "item__output_b")


def current_lease(campaign: Campaign, user: Any) -> Assignment | None:
    leases = Assignment.objects.select_related(*ITEM_RELATED).filter(
        item__campaign=campaign,
        annotator=user,
        status=Assignment.Status.LEASED,
        expires_at__gt=timezone.now(),
    )
    return leases.order_by("leased_at").first()


def _ranked_candidates(campaign: Campaign, user: Any, plan: Plan | None = None) -> list[int]:
    """Items the user has not handled that still need judgments: fewest judgments first
    (so annotators spread out before they overlap), then the least-judged system, then
    the system the user has seen least, then the seeded queue order. With a routing
    ``plan`` the candidates are the items of its first documents that have any, and its
    document order comes before the queue order."""
    handled = Assignment.objects.filter(
        annotator=user, item__campaign=campaign, status__in=HANDLED
    ).values("item_id")
    items = Item.objects.filter(campaign=campaign).exclude(pk__in=handled)
    # Untouched items first: an anti-join that stops after CANDIDATES rows of the queue
    # index, where counting every item's judgments would read the whole campaign.
    untouched = items.exclude(
        Exists(Assignment.objects.filter(active(), item=OuterRef("pk")))
    ).annotate(n=Value(0))
    if plan is None:
        rows = list(untouched.order_by("position").values_list(*ROW)[:CANDIDATES])
    else:
        rows = _first_documents(untouched, plan.order)
    if not rows:
        pending = items.annotate(n=Count("assignments", filter=active("assignments__"))).filter(
            n__lt=campaign.overlap
        )
        if plan is None:
            rows = list(pending.order_by("n", "position").values_list(*ROW)[:CANDIDATES])
        elif (fewest := pending.aggregate(least=Min("n"))["least"]) is not None:
            rows = _first_documents(pending.filter(n=fewest), plan.order)
    if not rows:
        return []
    counts = (
        Assignment.objects.filter(item__campaign=campaign)
        .order_by()
        .values_list("item__system_key")
        .annotate(
            total=Count("pk", filter=active()),
            mine=Count("pk", filter=Q(annotator=user, status__in=HANDLED)),
        )
    )
    by_system = {key: (total, mine) for key, total, mine in counts}
    rank = plan.rank if plan is not None else {}
    rows.sort(key=lambda r: (r[2], *by_system.get(r[1], (0, 0)), rank.get(r[4], 0), r[3]))
    return [r[0] for r in rows]


def _first_documents(candidates: QuerySet[Item], order: tuple[int, ...]) -> list[Any]:
    """The candidate rows of the first documents in ``order`` that have any: a few
    documents per query, twice as many each time, so a claim reads a handful of rows
    however large the campaign."""
    start, size = 0, FIRST_DOCUMENTS
    while start < len(order):
        chunk = order[start : start + size]
        rows = list(candidates.filter(document_id__in=chunk).values_list(*ROW)[:CANDIDATES])
        if rows:
            return rows
        start, size = start + size, size * 2
    return []


def _sides(campaign: Campaign, item: Item, user: Any) -> bool:
    """Whether A goes on the left: random per item and annotator, reproducible by seed."""
    if not campaign.is_pairwise:
        return True
    return random.Random(f"{campaign.seed}:{item.pk}:{user.pk}").random() < 0.5


def lock_campaign(campaign: Campaign) -> None:
    """Serialise claims (and late answers) within a campaign until the transaction ends.

    ``FOR NO KEY UPDATE`` on the campaign row: counts read after it see every claim
    committed before, and it does not block inserts that merely reference the campaign.
    """
    list(Campaign.objects.select_for_update(no_key=True).filter(pk=campaign.pk).values_list("pk"))


def claim_next(campaign: Campaign, user: Any) -> Assignment | None:
    """The user's current lease (renewed), or a new lease on the best next item; None
    when the campaign is closed or nothing is left for this user."""
    if not campaign.is_open:
        return None
    with transaction.atomic():
        lock_campaign(campaign)
        now = timezone.now()
        expires = now + timedelta(seconds=campaign.lease_seconds)
        lease = current_lease(campaign, user)
        if lease is not None:
            Assignment.objects.filter(pk=lease.pk).update(expires_at=expires)
            lease.expires_at = expires
            lease.item.campaign = campaign
            return lease
        plan = plan_for(campaign)
        ranked = _ranked_candidates(campaign, user, plan)  # exact: no claim commits meanwhile
        if not ranked:
            return None
        item = Item.objects.select_related("document", "output_a", "output_b").get(pk=ranked[0])
        # one statement: a new lease, or the renewal of the user's own expired one
        lease = Assignment(
            item=item,
            annotator=user,
            status=Assignment.Status.LEASED,
            leased_at=now,
            expires_at=expires,
            left_is_a=_sides(campaign, item, user),
            routing_score=plan.gain(item.document_id) if plan else None,
            routing_reason=plan.reason(item.document_id)[:REASON_LENGTH] if plan else "",
        )
        Assignment.objects.bulk_create(
            [lease],
            update_conflicts=True,
            unique_fields=["item", "annotator"],
            update_fields=[
                "status",
                "leased_at",
                "expires_at",
                "left_is_a",
                "routing_score",
                "routing_reason",
            ],
        )
        if lease.pk is None:  # a backend without RETURNING on upserts
            lease = Assignment.objects.select_related(*ITEM_RELATED).get(item=item, annotator=user)
        lease.item.campaign = campaign
        return lease


def check_capacity(assignment: Assignment) -> None:
    """A first answer counts if its lease is still live, or, for a late one (expired
    lease, or a skipped item), if a place is free. Decided under the campaign lock, so
    a claim cannot take the place of a lease that this answer still sees as live."""
    if assignment.status == Assignment.Status.DONE:
        return  # a change of answer takes no new place
    campaign = assignment.item.campaign
    lock_campaign(campaign)
    if assignment.status == Assignment.Status.LEASED and assignment.expires_at > timezone.now():
        return
    if taken_by_others(assignment.item, assignment.annotator_id) >= campaign.overlap:
        raise LeaseLost(
            "Your time on this item ran out and other annotators have completed it. "
            "Your answer was not saved; go on with the next item."
        )


def lock_assignment(assignment_id: int, user: Any) -> Assignment:
    """The user's assignment, locked for this transaction; raises if the campaign is closed."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item__campaign__study")
        .get(pk=assignment_id, annotator=user)
    )
    if not assignment.item.campaign.is_open:
        raise CampaignClosed("This campaign is closed; answers can no longer be changed.")
    return assignment


def skip(assignment_id: int, user: Any, reason: str) -> Assignment:
    """Skip an item (with an optional reason); an answered item cannot be skipped."""
    with transaction.atomic():
        assignment = lock_assignment(assignment_id, user)
        if assignment.status == Assignment.Status.DONE:
            raise AnnotationError("You already answered this item; change the answer instead.")
        now = timezone.now()
        assignment.status = Assignment.Status.SKIPPED
        assignment.skip_reason = reason.strip()[:500]
        assignment.submitted_at = now
        assignment.seconds = (now - assignment.leased_at).total_seconds()
        assignment.save()
    return assignment


@dataclass(frozen=True)
class Progress:
    """An annotator's progress: items handled (done or skipped) of those they can do."""

    done: int
    skipped: int
    available: int

    @property
    def total(self) -> int:
        return self.done + self.skipped + self.available

    @property
    def percent(self) -> int:
        return round(100 * (self.done + self.skipped) / self.total) if self.total else 100


def progress(campaign: Campaign, user: Any) -> Progress:
    mine = Assignment.objects.filter(annotator=user, item__campaign=campaign)
    counts = Counter(mine.filter(status__in=HANDLED).values_list("status", flat=True))
    available = (
        Item.objects.filter(campaign=campaign)
        .exclude(pk__in=mine.filter(status__in=HANDLED).values("item_id"))
        .annotate(
            n=Count("assignments", filter=active("assignments__") & ~Q(assignments__annotator=user))
        )
        .filter(n__lt=campaign.overlap)
        .count()
        if campaign.is_open
        else 0
    )
    return Progress(counts[Assignment.Status.DONE], counts[Assignment.Status.SKIPPED], available)


def recent(campaign: Campaign, user: Any, limit: int = 10) -> list[Assignment]:
    """The user's latest answered items, to change an answer while the campaign is open."""
    done = Assignment.objects.filter(
        item__campaign=campaign, annotator=user, status=Assignment.Status.DONE
    )
    return list(done.select_related("item__document").order_by("-submitted_at")[:limit])


def previous_answered(current: Assignment) -> Assignment | None:
    """The item the annotator answered before ``current`` (before any, when ``current``
    is not answered yet), to go back and change the answer; None once the campaign is
    closed, as answers can no longer change."""
    campaign = current.item.campaign
    if not campaign.is_open:
        return None
    done = Assignment.objects.filter(
        item__campaign=campaign, annotator_id=current.annotator_id, status=Assignment.Status.DONE
    ).exclude(pk=current.pk)
    if current.status == Assignment.Status.DONE and current.submitted_at is not None:
        done = done.filter(
            Q(submitted_at__lt=current.submitted_at)
            | Q(submitted_at=current.submitted_at, pk__lt=current.pk)
        )
    return done.order_by("-submitted_at", "-pk").only("pk", "item_id").first()
