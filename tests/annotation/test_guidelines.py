"""The guidelines page ends with the way in: Start (or Continue) while items are left."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Campaign
from annotation.services import answers, assignment
from tests.annotation.conftest import likert_answers

pytestmark = pytest.mark.django_db


def _guidelines(client, campaign) -> str:  # type: ignore[no-untyped-def]
    response = client.get(reverse("annotation:guidelines", args=[campaign.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def test_the_guidelines_page_has_a_start_button_that_claims_an_item(client, make_campaign, cast):
    campaign = make_campaign()
    client.force_login(cast["annotator"])
    page = _guidelines(client, campaign)
    action = reverse("annotation:next", args=[campaign.pk])
    assert f'action="{action}"' in page and f'id="start-{campaign.pk}">Start</button>' in page
    assert "12 items left for you." in page
    started = client.post(action)
    assert started.status_code == 302 and "/items/" in started["Location"]


def test_it_says_continue_after_an_answer_and_nothing_when_closed(client, make_campaign, cast):
    campaign = make_campaign()
    lease = assignment.claim_next(campaign, cast["annotator"])
    answers.submit(lease.pk, cast["annotator"], likert_answers(campaign))
    client.force_login(cast["annotator"])
    assert f'id="start-{campaign.pk}">Continue</button>' in _guidelines(client, campaign)
    campaign.status = Campaign.Status.CLOSED
    campaign.save(update_fields=["status"])
    page = _guidelines(client, campaign)
    assert f'id="start-{campaign.pk}"' not in page and "This campaign is closed." in page
