"""The queue: leases, resuming, balance across systems, overlap, expiry, concurrency."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, Campaign
from annotation.services import answers, assignment
from tests.annotation.conftest import likert_answers
from tests.factories import UserFactory


def work(campaign: Campaign, user, n: int) -> list[Assignment]:  # type: ignore[no-untyped-def]
    """Claim and answer up to n items."""
    done = []
    for _ in range(n):
        claimed = assignment.claim_next(campaign, user)
        if claimed is None:
            break
        answers.submit(claimed.pk, user, likert_answers(campaign))
        done.append(claimed)
    return done


@pytest.mark.django_db
def test_a_lease_is_resumed_and_renewed_until_answered(make_campaign, annotators):
    campaign = make_campaign()
    first = assignment.claim_next(campaign, annotators[0])
    Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() + timedelta(seconds=5))
    again = assignment.claim_next(campaign, annotators[0])
    assert again.pk == first.pk
    assert again.expires_at > timezone.now() + timedelta(seconds=250)
    answers.submit(first.pk, annotators[0], likert_answers(campaign))
    assert assignment.claim_next(campaign, annotators[0]).item_id != first.item_id


@pytest.mark.django_db
def test_one_annotator_sees_the_systems_in_balance(make_campaign, annotators):
    campaign = make_campaign(overlap=1, seed=3)
    for n in range(1, 13):
        work(campaign, annotators[0], 1)
        seen = Counter(
            Assignment.objects.filter(annotator=annotators[0]).values_list(
                "item__system_key", flat=True
            )
        )
        assert max(seen.values()) - min(seen.get(s, 0) for s in ("s1", "s2", "s3")) <= 1, n


@pytest.mark.django_db
def test_a_second_annotator_gets_other_items_until_the_overlap_is_reached(
    make_campaign, annotators
):
    campaign = make_campaign(overlap=2)
    first = {a.item_id for a in work(campaign, annotators[0], 8)}
    second = [a.item_id for a in work(campaign, annotators[1], 12)]
    untouched = 12 - len(first)
    assert not set(second[:untouched]) & first  # the 4 untouched items come first
    assert set(second[untouched:]) <= first
    assert len(second) == 12


@pytest.mark.django_db
def test_no_item_gets_more_than_the_overlap(make_campaign, annotators):
    campaign = make_campaign(overlap=2)
    for user in annotators:
        work(campaign, user, 12)
    per_item = Counter(Assignment.objects.filter(status="done").values_list("item_id", flat=True))
    assert set(per_item.values()) == {2} and len(per_item) == 12
    assert assignment.claim_next(campaign, annotators[2]) is None


@pytest.mark.django_db
def test_an_expired_lease_frees_its_place_and_a_late_answer_is_refused(make_campaign, annotators):
    campaign = make_campaign(overlap=1, selection="random", sample_size=1)
    a, b = annotators[:2]
    lease = assignment.claim_next(campaign, a)
    assert assignment.claim_next(campaign, b) is None  # the only place is leased
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken = assignment.claim_next(campaign, b)
    assert taken is not None and taken.item_id == lease.item_id
    answers.submit(taken.pk, b, likert_answers(campaign))
    with pytest.raises(assignment.LeaseLost):
        answers.submit(lease.pk, a, likert_answers(campaign))
    assert Assignment.objects.get(pk=lease.pk).status == "leased"
    assert answers.current_answers(Assignment.objects.get(pk=lease.pk)) == {}


@pytest.mark.django_db
def test_a_late_answer_counts_while_a_place_is_free(make_campaign, annotators):
    campaign = make_campaign(overlap=1)
    lease = assignment.claim_next(campaign, annotators[0])
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert answers.submit(lease.pk, annotators[0], likert_answers(campaign))
    assert Assignment.objects.get(pk=lease.pk).status == "done"


@pytest.mark.django_db
def test_progress_counts_done_skipped_and_what_is_left(make_campaign, annotators):
    campaign = make_campaign(overlap=1)
    assert assignment.progress(campaign, annotators[0]) == assignment.Progress(0, 0, 12)
    mine = {a.item_id for a in work(campaign, annotators[0], 2)}
    skipped = assignment.claim_next(campaign, annotators[0])
    assignment.skip(skipped.pk, annotators[0], "  unreadable  ")
    theirs = {a.item_id for a in work(campaign, annotators[1], 3)}
    assert skipped.item_id in theirs  # a skip frees the place for someone else
    left = 12 - 3 - len(theirs - mine - {skipped.item_id})
    assert assignment.progress(campaign, annotators[0]) == assignment.Progress(2, 1, left)
    assert Assignment.objects.get(pk=skipped.pk).skip_reason == "unreadable"


@pytest.mark.django_db
def test_a_closed_campaign_hands_out_nothing_and_takes_no_answers(make_campaign, annotators):
    campaign = make_campaign()
    lease = assignment.claim_next(campaign, annotators[0])
    Campaign.objects.filter(pk=campaign.pk).update(status="closed")
    campaign.refresh_from_db()
    assert assignment.claim_next(campaign, annotators[0]) is None
    with pytest.raises(assignment.CampaignClosed):
        answers.submit(lease.pk, annotators[0], likert_answers(campaign))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
def test_concurrent_claims_never_exceed_the_overlap(make_campaign, cast):
    campaign = make_campaign(overlap=2, selection="random", sample_size=3, annotators=[])
    users = [UserFactory(username=f"racer{k}", role="annotator") for k in range(9)]
    from annotation.services.campaigns import invite

    invite(campaign, users)
    barrier = threading.Barrier(len(users))
    claimed: list[int | None] = []
    errors: list[BaseException] = []

    def race(user) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            lease = assignment.claim_next(campaign, user)
            claimed.append(lease.item_id if lease else None)
        except BaseException as exc:  # reported below, with the thread's traceback lost
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    per_item = Counter(i for i in claimed if i is not None)
    assert set(per_item.values()) == {2} and len(per_item) == 3
    assert claimed.count(None) == 3
