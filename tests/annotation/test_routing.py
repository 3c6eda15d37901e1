"""Informative-first routing in the queue: the best document first, with its reason
recorded; overlap and the balance across systems as in random order; the question
checked at creation; the campaign page, the form and the API."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Campaign, Item
from annotation.services import answers, assignment, routing
from annotation.services.campaigns import CampaignError
from studies.models import Aspect
from tests.annotation.routing_data import (
    AGREE,
    DISAGREE,
    SYSTEMS,
    informative_campaign,
    make_routed_study,
)
from tests.factories import DatasetFactory, MetricRunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def routed(cast) -> tuple[Any, Any, Any]:  # type: ignore[no-untyped-def]
    return make_routed_study(cast["owner"])


@pytest.fixture
def campaign(routed, cast, annotators) -> Campaign:  # type: ignore[no-untyped-def]
    study, run_a, run_b = routed
    return informative_campaign(study, cast["owner"], annotators, run_a, run_b, overlap=1, seed=4)


def answer(campaign: Campaign, lease: Assignment, user: Any) -> None:
    """A coherence score that differs across the document's systems."""
    value = 1 + SYSTEMS.index(lease.item.output_a.system_id)
    answers.submit(lease.pk, user, {a.pk: float(value) for a in campaign.aspects.all()})


def work(campaign: Campaign, user: Any, n: int) -> list[Assignment]:
    done = []
    for _ in range(n):
        lease = assignment.claim_next(campaign, user)
        if lease is None:
            break
        answer(campaign, lease, user)
        done.append(lease)
    return done


def test_the_queue_hands_out_the_best_document_first_and_records_why(campaign, annotators):
    plan = routing.plan_for(campaign)
    assert plan is not None
    top = plan.order[0]
    lease = assignment.claim_next(campaign, annotators[0])
    assert lease.item.document_id == top and lease.item.document.doc_key in DISAGREE
    stored = Assignment.objects.get(pk=lease.pk)
    assert stored.routing_score == pytest.approx(plan.gain(top)) and stored.routing_score > 0
    assert stored.routing_reason == plan.reason(top)
    assert "ρ(ROUGE-2, ROUGE-L) = -1.00 here, disagreement band 2 of 2" in stored.routing_reason
    assert "needs 2 more judged documents" in stored.routing_reason
    # the agreeing documents' difference is known already (0): they come last
    assert "whatever the judges say" in plan.reason(plan.order[-1])


def test_a_document_is_finished_before_the_next_one_starts(campaign, annotators):
    leases = work(campaign, annotators[0], 8)
    docs = [lease.item.document_id for lease in leases]
    assert len(set(docs[:4])) == 1 and len(set(docs[4:])) == 1 and docs[0] != docs[4]
    assert Counter(lease.item.output_a.system_id for lease in leases[:4]) == Counter(SYSTEMS)
    # the answer stored with this claim already counts: the band now has one judged document
    assert "needs 1 more judged document " in Assignment.objects.get(pk=leases[4].pk).routing_reason


def test_every_disagreeing_document_comes_before_an_agreeing_one_with_systems_in_balance(
    campaign, annotators
):
    seen: Counter[str] = Counter()
    keys = []
    for _ in range(44):
        (lease,) = work(campaign, annotators[0], 1)
        keys.append(lease.item.document.doc_key)
        seen[lease.item.output_a.system_id] += 1
        assert max(seen.values()) - min(seen.get(s, 0) for s in SYSTEMS) <= 1
    assert set(keys[:40]) == set(DISAGREE) and set(keys[40:]) <= set(AGREE)
    last = Assignment.objects.filter(annotator=annotators[0]).order_by("-leased_at", "-pk")[0]
    assert "rank its outputs alike" in last.routing_reason
    estimate = routing.plan_for(campaign).estimate
    assert estimate is not None and estimate.n_judged == 20  # 10 judged, 10 known to be 0
    assert estimate.low <= estimate.value <= estimate.high


def test_balance_across_systems_comes_before_the_document_order(campaign, annotators):
    # Another annotator judged s1 on two agreeing documents: s1 is ahead.
    for item in Item.objects.filter(
        campaign=campaign, system_key="s1", document__doc_key__in=AGREE[:2]
    ):
        Assignment.objects.create(
            item=item,
            annotator=annotators[1],
            status="done",
            leased_at=timezone.now(),
            expires_at=timezone.now(),
            submitted_at=timezone.now(),
        )
    top = routing.plan_for(campaign).order[0]
    leases = work(campaign, annotators[0], 4)
    assert [lease.item.document_id for lease in leases[:3]] == [top] * 3
    assert "s1" not in [lease.item.output_a.system_id for lease in leases]
    assert leases[3].item.document_id != top  # s1 of the best document waits its turn


def test_overlap_is_honoured_and_annotators_spread_before_they_overlap(routed, cast, annotators):
    study, run_a, run_b = routed
    campaign = informative_campaign(
        study,
        cast["owner"],
        annotators,
        run_a,
        run_b,
        overlap=2,
        selection="systems",
        systems=["s1", "s2"],
    )
    first = {lease.item_id for lease in work(campaign, annotators[0], 8)}
    second = [lease.item_id for lease in work(campaign, annotators[1], 4)]
    assert not set(second) & first  # untouched items first, as in random order
    for user in annotators:
        work(campaign, user, 200)
    per_item = Counter(
        Assignment.objects.filter(item__campaign=campaign, status="done").values_list(
            "item_id", flat=True
        )
    )
    assert set(per_item.values()) == {2} and len(per_item) == 40
    assert assignment.claim_next(campaign, annotators[2]) is None


def test_a_random_campaign_records_no_reason(routed, cast, annotators):
    study, run_a, run_b = routed
    campaign = informative_campaign(
        study, cast["owner"], annotators, run_a, run_b, routing=Campaign.Routing.RANDOM
    )
    assert campaign.question_run_a is None and not campaign.is_informative
    lease = assignment.claim_next(campaign, annotators[0])
    stored = Assignment.objects.get(pk=lease.pk)
    assert stored.routing_score is None and stored.routing_reason == ""
    assert routing.plan_for(campaign) is None


def test_a_deleted_run_leaves_the_campaign_in_random_order(campaign, routed, annotators):
    routed[1].delete()
    campaign.refresh_from_db()
    assert campaign.routing == "informative" and not campaign.is_informative
    lease = assignment.claim_next(campaign, annotators[0])
    assert lease is not None and Assignment.objects.get(pk=lease.pk).routing_reason == ""


def test_pairwise_documents_count_as_judged_once_all_their_pairs_are(routed, cast, annotators):
    study, run_a, run_b = routed
    campaign = informative_campaign(
        study, cast["owner"], annotators, run_a, run_b, mode="pairwise", overlap=1
    )
    user, coherence = annotators[0], Aspect.objects.get(code="COH")
    docs = []
    for k in range(6):  # C(4, 2) pairs per document
        lease = assignment.claim_next(campaign, user)
        docs.append(lease.item.document_id)
        answers.submit(lease.pk, user, {coherence.pk: "left" if k % 2 else "right"})
        plan = routing.plan_for(campaign)
        assert plan.judged(docs[0]) is (k == 5)
    assert len(set(docs)) == 1 and campaign.items.get(pk=lease.item_id).document.doc_key in DISAGREE


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question_run_b": None}, "needs its question"),
        ({"question_run_b": "a"}, "two different runs"),
        ({"question_run_a": None, "question_run_b": None, "question_aspect": None}, "question"),
        ({"question_run_b": "elsewhere"}, "finished run of the study's dataset"),
        ({"question_run_b": "running"}, "finished run of the study's dataset"),
        ({"question_aspect": "FLU"}, "one of the campaign's aspects"),
        ({"routing": "cleverest"}, "Unknown routing"),
    ],
)
def test_informative_routing_needs_a_valid_question(routed, cast, annotators, change, message):
    study, run_a, run_b = routed
    runs = {
        "a": run_a,
        "elsewhere": MetricRunFactory(dataset=DatasetFactory(), status="succeeded"),
        "running": MetricRunFactory(dataset=study.dataset, status="running"),
    }
    if isinstance(change.get("question_aspect"), str):
        change = {"question_aspect": Aspect.objects.get(code=change["question_aspect"])}
    elif isinstance(change.get("question_run_b"), str):
        change = {"question_run_b": runs[change["question_run_b"]]}
    with pytest.raises(CampaignError, match=message):
        informative_campaign(study, cast["owner"], annotators, run_a, run_b, **change)
    assert not Campaign.objects.exists() and not Item.objects.exists()


def test_the_campaign_page_shows_why_each_item_was_handed_out(client, campaign, cast, annotators):
    leases = work(campaign, annotators[0], 5)
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="routing"' in page and "Informative first" in page
    assert "ROUGE-2</strong> against <strong>ROUGE-L</strong> on Coherence" in page
    for lease in leases:
        reason = Assignment.objects.get(pk=lease.pk).routing_reason
        assert f'<tr data-item="{lease.item_id}">' in page
        assert reason.replace("'", "&#x27;") in page
    assert "needs 1 more judged document" in page  # the next documents, with their reasons
    assert "No interval yet" in page


def test_a_random_campaign_page_has_no_routing_section(client, make_campaign, cast):
    campaign = make_campaign()
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="routing"' not in page and "Random</strong> routing" in page


def test_the_form_creates_an_informative_campaign_and_refuses_one_without_question(
    client, routed, cast, annotators
):
    study, run_a, run_b = routed
    coherence = Aspect.objects.get(code="COH")
    data = {
        "study": study.pk,
        "name": "Routed",
        "mode": "likert",
        "aspects": [coherence.pk],
        "overlap": 1,
        "selection": "all",
        "seed": 3,
        "lease_seconds": 300,
        "gold_threshold": 0.7,
        "annotators": [annotators[0].pk],
        "routing": "informative",
    }
    client.force_login(cast["owner"])
    refused = client.post(reverse("annotation:campaign-new"), data)
    assert refused.status_code == 400 and "needs its question" in refused.content.decode()
    assert not Campaign.objects.exists()
    data.update(question_run_a=run_a.pk, question_run_b=run_b.pk, question_aspect=coherence.pk)
    created = client.post(reverse("annotation:campaign-new"), data)
    assert created.status_code == 302
    campaign = Campaign.objects.get()
    assert campaign.is_informative and campaign.question_run_b == run_b


def test_the_api_creates_a_routed_campaign_and_lists_its_documents_in_order(
    routed, cast, annotators
):
    from rest_framework.test import APIClient

    study, run_a, run_b = routed
    coherence = Aspect.objects.get(code="COH")
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {
        "study": study.pk,
        "name": "Routed",
        "aspects": [coherence.pk],
        "overlap": 1,
        "annotators": [annotators[0].username],
        "routing": "informative",
        "question_run_a": run_a.pk,
        "question_run_b": run_b.pk,
    }
    refused = api.post("/api/campaigns/", body, format="json")
    assert refused.status_code == 400 and "needs its question" in refused.json()["detail"]
    created = api.post("/api/campaigns/", {**body, "question_aspect": coherence.pk}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["routing"] == "informative"
    assert created.json()["question_run_a"] == run_a.pk
    campaign = Campaign.objects.get(pk=created.json()["id"])
    lease = assignment.claim_next(campaign, annotators[0])
    answer(campaign, lease, annotators[0])
    found = api.get(f"/api/campaigns/{campaign.pk}/routing/").json()
    assert found["question"]["run_a"] == "ROUGE-2" and found["estimate"] is None
    documents = found["documents"]
    assert [d["rank"] for d in documents] == list(range(20))
    assert documents[0]["document"] == lease.item.document_id
    assert documents[0]["reason"].startswith("started, so finished first")
    assert {d["doc_key"] for d in documents[:10]} == set(DISAGREE)


def test_a_lease_past_its_time_is_handed_out_again_with_a_fresh_reason(campaign, annotators):
    first = assignment.claim_next(campaign, annotators[0])
    Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    again = assignment.claim_next(campaign, annotators[1])
    assert again.item_id == first.item_id  # the lapsed lease's item is the best one still
    assert Assignment.objects.get(pk=again.pk).routing_reason
