"""The pages: full and htmx responses, answers through the views, the researcher's forms."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Campaign, Item
from annotation.services import answers, assignment
from studies.models import Aspect, Judgment, MetricScore
from tests.annotation.conftest import HTMX, form_data
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db


def start(client, campaign, user) -> Assignment:  # type: ignore[no-untyped-def]
    client.force_login(user)
    response = client.post(reverse("annotation:next", args=[campaign.pk]))
    lease = Assignment.objects.get(annotator=user, status="leased")
    assert response["Location"] == reverse("annotation:item", args=[campaign.pk, lease.item_id])
    return lease


def test_item_page_and_its_htmx_partial(client, make_campaign, cast):
    campaign = make_campaign(show_references=True)
    lease = start(client, campaign, cast["annotator"])
    url = reverse("annotation:item", args=[campaign.pk, lease.item_id])
    page = client.get(url)
    assert page.status_code == 200 and b"<html" in page.content
    assert b'id="annotate"' in page.content and b"annotate.js" in page.content
    assert lease.item.output_a.text.encode() in page.content
    assert lease.item.document.references[0].encode() in page.content
    partial = client.get(url, **HTMX)
    assert b"<html" not in partial.content and partial.content.lstrip().startswith(
        b'<section id="annotate"'
    )
    assert "HX-Request" in page["Vary"] and "HX-Request" in partial["Vary"]


def test_the_item_page_shows_no_metric_scores_nor_other_annotators(
    client, make_campaign, cast, annotators
):
    campaign = make_campaign(overlap=3)
    lease = start(client, campaign, cast["annotator"])
    run = MetricRunFactory(dataset=campaign.study.dataset, label="secret-metric-run")
    MetricScore.objects.create(run=run, output=lease.item.output_a, value=0.123456)
    Judgment.objects.create(
        output=lease.item.output_a,
        aspect=Aspect.objects.get(code="COH"),
        value=1,
        annotator=annotators[1],
    )
    page = client.get(
        reverse("annotation:item", args=[campaign.pk, lease.item_id])
    ).content.decode()
    assert "secret-metric-run" not in page and "0.123456" not in page
    assert "ann2" not in page and "checked" not in page  # the other answer is not pre-filled


def test_an_htmx_submit_stores_and_swaps_in_the_next_item(client, make_campaign, cast):
    campaign = make_campaign()
    lease = start(client, campaign, cast["annotator"])
    url = reverse("annotation:submit", args=[campaign.pk, lease.item_id])
    response = client.post(url, form_data(campaign), **HTMX)
    following = Assignment.objects.get(annotator=cast["annotator"], status="leased")
    assert response.status_code == 200 and following.item_id != lease.item_id
    assert response["HX-Push-Url"] == reverse(
        "annotation:item", args=[campaign.pk, following.item_id]
    )
    assert b'id="progress-text">1 / 12<' in response.content
    assert Judgment.objects.filter(annotator=cast["annotator"]).count() == 2
    again = client.post(url, form_data(campaign), **HTMX)  # a double click
    assert again.status_code == 200 and Judgment.objects.count() == 2
    assert (
        Assignment.objects.filter(annotator=cast["annotator"], status="leased").get() == following
    )


def test_a_bad_submit_is_shown_back_with_its_error_and_writes_nothing(client, make_campaign, cast):
    campaign = make_campaign()
    lease = start(client, campaign, cast["annotator"])
    coh = Aspect.objects.get(code="COH")
    url = reverse("annotation:submit", args=[campaign.pk, lease.item_id])
    response = client.post(url, {f"aspect-{coh.pk}": "5"}, **HTMX)
    assert response.status_code == 422
    assert b"Fluency: choose an answer" in response.content
    assert (
        f'name="aspect-{coh.pk}" value="5" tabindex="-1" data-key="5" checked'.encode()
        in response.content
    )
    assert Judgment.objects.count() == 0


def test_without_htmx_submit_and_skip_redirect_to_the_next_item(client, make_campaign, cast):
    campaign = make_campaign()
    lease = start(client, campaign, cast["annotator"])
    response = client.post(
        reverse("annotation:skip", args=[campaign.pk, lease.item_id]), {"reason": "cannot read it"}
    )
    following = Assignment.objects.get(annotator=cast["annotator"], status="leased")
    assert response["Location"] == reverse("annotation:item", args=[campaign.pk, following.item_id])
    assert Assignment.objects.get(pk=lease.pk).skip_reason == "cannot read it"


def test_a_closed_campaign_refuses_answers_with_a_message(client, make_campaign, cast):
    campaign = make_campaign()
    lease = start(client, campaign, cast["annotator"])
    Campaign.objects.filter(pk=campaign.pk).update(status="closed")
    url = reverse("annotation:submit", args=[campaign.pk, lease.item_id])
    response = client.post(url, form_data(campaign), **HTMX)
    assert response.status_code == 409 and b"campaign is closed" in response.content
    assert Judgment.objects.count() == 0


def test_guidelines_show_the_current_versioned_definitions(client, make_campaign, cast):
    campaign = make_campaign()
    coh = Aspect.objects.get(code="COH")
    coh.definition = "Is the text well organised? (edited)"
    coh.save()
    client.force_login(cast["annotator"])
    page = client.get(reverse("annotation:guidelines", args=[campaign.pk])).content.decode()
    assert "Is the text well organised? (edited)" in page
    assert f"version {coh.version}" in page and coh.version >= 2
    assert all(label in page for label in coh.anchors.values())


def test_a_researcher_creates_a_campaign_through_the_form(client, study, cast, annotators):
    client.force_login(cast["owner"])
    aspects = [Aspect.objects.get(code=c).pk for c in ("COH", "REL")]
    data = {
        "study": study.pk,
        "name": "Round 1",
        "mode": "likert",
        "aspects": aspects,
        "overlap": 2,
        "selection": "systems",
        "systems": "s1, s3",
        "seed": 4,
        "annotators": [a.pk for a in annotators[:2]],
        "lease_seconds": 120,
        "gold_threshold": 0.8,
    }
    response = client.post(reverse("annotation:campaign-new"), data)
    campaign = Campaign.objects.get()
    assert response["Location"] == reverse("annotation:campaign-detail", args=[campaign.pk])
    assert campaign.items.count() == 8 and campaign.lease_seconds == 120
    assert set(campaign.items.values_list("system_key", flat=True)) == {"s1", "s3"}
    bad = client.post(reverse("annotation:campaign-new"), {**data, "systems": "s9"})
    assert bad.status_code == 400 and b"unknown: [&#x27;s9&#x27;]" in bad.content
    assert Campaign.objects.count() == 1


def test_the_researcher_sees_progress_skips_and_agreement(client, make_campaign, cast, annotators):
    campaign = make_campaign(overlap=3, aspect_codes=("COH",))
    for k, user in enumerate(annotators):
        while (lease := assignment.claim_next(campaign, user)) is not None:
            if user == annotators[2] and lease.item.system_key == "s1":
                assignment.skip(lease.pk, user, "too long")
                continue
            value = 1 + (lease.item.output_a_id + (k == 2)) % 5
            answers.submit(lease.pk, user, {a.pk: value for a in campaign.aspects.all()})
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="alpha-table"' in page and "too long" in page
    assert '<tr data-user="ann3"><td>ann3</td><td class="num">8</td><td class="num">4</td>' in page
    partial = client.get(
        reverse("annotation:campaign-detail", args=[campaign.pk]),
        HTTP_HX_TARGET="agreement",
        **HTMX,
    )
    assert partial.content.lstrip().startswith(b'<section id="agreement"')
    assert b'class="num alpha">0.' in partial.content


def test_gold_form_marks_an_item_and_rejects_bad_values(client, make_campaign, cast):
    campaign = make_campaign(aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    item = campaign.items.first()
    client.force_login(cast["owner"])
    url = reverse("annotation:campaign-gold", args=[campaign.pk])
    bad = client.post(url, {"item": item.pk, f"aspect-{coh.pk}": "7", "tolerance": "0"})
    assert bad.status_code == 400 and Item.objects.filter(gold_answer__isnull=False).count() == 0
    ok = client.post(url, {"item": item.pk, f"aspect-{coh.pk}": "4", "tolerance": "1"})
    assert ok.status_code == 302
    item.refresh_from_db()
    assert item.gold_answer == {str(coh.pk): 4.0} and item.gold_tolerance == 1.0


def test_preference_pairs_export_as_jsonl(client, make_campaign, cast, annotators):
    campaign = make_campaign(mode="pairwise", aspect_codes=("COH",))
    lease = assignment.claim_next(campaign, annotators[0])
    answers.submit(lease.pk, annotators[0], {Aspect.objects.get(code="COH").pk: "right"})
    client.force_login(cast["owner"])
    response = client.get(reverse("annotation:campaign-preferences", args=[campaign.pk]))
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    a, b = lease.item.output_a_id, lease.item.output_b_id
    right, left = (b, a) if lease.left_is_a else (a, b)
    assert rows == [
        {
            "aspect": "COH",
            "doc_key": lease.item.document.doc_key,
            "good_output_id": right,
            "bad_output_id": left,
            "annotator_id": annotators[0].pk,
            "left_output_id": left,
            "comment": "",
        }
    ]


def test_status_toggles_and_the_correlations_page_offers_to_exclude_flagged(
    client, make_campaign, cast
):
    campaign = make_campaign()
    client.force_login(cast["owner"])
    client.post(reverse("annotation:campaign-status", args=[campaign.pk]), {"status": "closed"})
    assert Campaign.objects.get().status == "closed"
    page = client.get(
        reverse("studies:correlations", args=[campaign.study.dataset.pk]), {"flagged": "exclude"}
    )
    assert b'id="exclude-flagged" checked' in page.content


def test_the_home_page_links_recent_answers_to_change_them(client, make_campaign, cast):
    campaign = make_campaign()
    lease = start(client, campaign, cast["annotator"])
    client.post(
        reverse("annotation:submit", args=[campaign.pk, lease.item_id]), form_data(campaign)
    )
    home = client.get(reverse("annotation:home")).content.decode()
    item_url = reverse("annotation:item", args=[campaign.pk, lease.item_id])
    assert f'href="{item_url}"' in home
    page = client.get(item_url).content.decode()
    assert page.count("checked") == 2  # the stored answers, ready to be changed
    client.post(
        reverse("annotation:submit", args=[campaign.pk, lease.item_id]), form_data(campaign, "2")
    )
    assert set(Judgment.objects.values_list("value", flat=True)) == {2.0}


def test_an_answer_on_a_lost_lease_is_refused_and_the_queue_goes_on(
    client, make_campaign, cast, annotators
):
    campaign = make_campaign(overlap=1, selection="random", sample_size=1)
    lease = start(client, campaign, cast["annotator"])
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken = assignment.claim_next(campaign, annotators[1])
    answers.submit(taken.pk, annotators[1], {a.pk: 3 for a in campaign.aspects.all()})
    url = reverse("annotation:submit", args=[campaign.pk, lease.item_id])
    response = client.post(url, form_data(campaign), **HTMX)
    assert response.status_code == 200 and b"Your answer was not saved" in response.content
    assert b'id="all-done"' in response.content  # the only item is complete
    assert Judgment.objects.filter(annotator=cast["annotator"]).count() == 0
