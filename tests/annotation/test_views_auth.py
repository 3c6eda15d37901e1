"""Every annotation URL for anonymous, the annotator, another annotator, the owner,
an outside researcher and an admin: server-side 302 / 403 / 404, never a hidden link."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment, Campaign
from annotation.services import assignment
from studies.models import Aspect, Study
from tests.factories import DatasetFactory, DocumentFactory, OutputFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(make_campaign, cast):  # type: ignore[no-untyped-def]
    campaign = make_campaign(annotators=[cast["annotator"]])
    lease = assignment.claim_next(campaign, cast["annotator"])
    # another annotator, busy in a campaign of another study
    other_user = UserFactory(username="other", role="annotator")
    dataset = DatasetFactory(name="elsewhere", owner=cast["outsider"])
    OutputFactory(document=DocumentFactory(dataset=dataset))
    study = Study.objects.create(name="Other", dataset=dataset, owner=cast["outsider"])
    from annotation.services.campaigns import CampaignSpec, create_campaign

    other = create_campaign(
        study,
        CampaignSpec(
            name="other", aspects=[Aspect.objects.get(code="COH")], annotators=[other_user]
        ),
        cast["outsider"],
    )
    return campaign, lease, other, other_user


def urls(campaign: Campaign, lease: Assignment) -> dict[str, tuple[str, str]]:
    c, i = campaign.pk, lease.item_id
    coh = Aspect.objects.get(code="COH").pk
    return {
        "guidelines": ("get", reverse("annotation:guidelines", args=[c])),
        "next": ("post", reverse("annotation:next", args=[c])),
        "item": ("get", reverse("annotation:item", args=[c, i])),
        "submit": ("post", reverse("annotation:submit", args=[c, i])),
        "skip": ("post", reverse("annotation:skip", args=[c, i])),
        "detail": ("get", reverse("annotation:campaign-detail", args=[c])),
        "gold": ("post", reverse("annotation:campaign-gold", args=[c])),
        "status": ("post", reverse("annotation:campaign-status", args=[c])),
        "preferences": ("get", reverse("annotation:campaign-preferences", args=[c])),
        "_coh": ("", str(coh)),
    }


ANNOTATE = ("guidelines", "next", "item", "submit", "skip")
RESEARCH = ("detail", "gold", "status", "preferences")
EXPECTED = {
    # who: (annotator pages, researcher pages)
    "annotator": (200, 403),
    "other": (404, 403),
    "owner": (404, 200),
    "outsider": (404, 404),
    "admin": (404, 200),
}


def call(client, method: str, url: str):  # type: ignore[no-untyped-def]
    return client.get(url) if method == "get" else client.post(url, {})


def test_anonymous_users_are_sent_to_the_login_page(client, setup):
    campaign, lease, _, _ = setup
    for name, (method, url) in urls(campaign, lease).items():
        if name.startswith("_"):
            continue
        response = call(client, method, url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), name
    assert client.get(reverse("annotation:home")).status_code == 302


@pytest.mark.parametrize("who", list(EXPECTED))
def test_each_role_gets_what_it_may_and_nothing_else(client, setup, cast, who):
    campaign, lease, _, other_user = setup
    user = {"other": other_user, "admin": cast["admin"]}.get(who) or cast[who]
    client.force_login(user)
    table = urls(campaign, lease)
    annotate_status, research_status = EXPECTED[who]
    for name in ANNOTATE:
        method, url = table[name]
        status = call(client, method, url).status_code
        ok = {200, 302, 422} if annotate_status == 200 else {annotate_status}
        assert status in ok, (who, name, status)
    for name in RESEARCH:
        method, url = table[name]
        status = call(client, method, url).status_code
        ok = {200, 302, 400} if research_status == 200 else {research_status}
        assert status in ok, (who, name, status)
    assert Campaign.objects.get(pk=campaign.pk).status == "open"  # an empty status post is refused


def test_an_annotator_cannot_open_or_answer_another_campaigns_item(client, setup, cast):
    campaign, lease, other, other_user = setup
    other_lease = assignment.claim_next(other, other_user)
    client.force_login(cast["annotator"])
    coh = Aspect.objects.get(code="COH").pk
    assert (
        client.get(reverse("annotation:item", args=[other.pk, other_lease.item_id])).status_code
        == 404
    )
    # nor through their own campaign's URL with the other item's number
    assert (
        client.get(reverse("annotation:item", args=[campaign.pk, other_lease.item_id])).status_code
        == 404
    )
    response = client.post(
        reverse("annotation:submit", args=[campaign.pk, other_lease.item_id]),
        {f"aspect-{coh}": "3"},
    )
    assert response.status_code == 404
    assert other_lease.item.pairwise_judgments.count() == 0
    home = client.get(reverse("annotation:home")).content.decode()
    assert campaign.name in home and "other" not in home.split("<main>")[1]


def test_researchers_only_list_their_own_campaigns(client, setup, cast):
    campaign, _, other, _ = setup
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-list")).content.decode()
    assert f"/campaigns/{campaign.pk}/" in page and f"/campaigns/{other.pk}/" not in page
    client.force_login(cast["annotator"])
    assert client.get(reverse("annotation:campaign-list")).status_code == 403
    assert client.get(reverse("annotation:campaign-new")).status_code == 403


def test_the_admin_lists_campaigns_items_and_assignments(client, setup, cast):
    client.force_login(cast["admin"])
    for model in ("campaign", "item", "assignment", "answerrevision", "pairwisejudgment"):
        assert client.get(reverse(f"admin:annotation_{model}_changelist")).status_code == 200
    campaign = setup[0]
    assert (
        client.get(reverse("admin:annotation_campaign_change", args=[campaign.pk])).status_code
        == 200
    )
