"""Studies, members, campaigns (researchers) and the annotation queue (annotators)
through the API: the pages' services, the pages' rules."""

from __future__ import annotations

import pytest

from annotation.models import AnswerRevision, Assignment, Campaign
from studies.models import Aspect, Judgment, Study
from tests.api.conftest import ROLES, errors_body

pytestmark = pytest.mark.django_db
RESEARCH = {
    "anonymous": 401,
    "annotator": 403,
    "other_annotator": 403,
    "owner": 200,
    "collaborator": 200,
    "other_researcher": 404,
    "admin": 200,
}
ANNOTATE = {
    "anonymous": 401,
    "annotator": 200,
    "other_annotator": 404,
    "owner": 404,
    "collaborator": 404,
    "other_researcher": 404,
    "admin": 404,
}


def answers(campaign: Campaign, value: object = 4) -> dict[str, object]:
    return {str(a.pk): value for a in campaign.aspects.all()}


@pytest.mark.parametrize("role", ROLES)
def test_campaign_progress_and_agreement_are_for_its_researchers(world, role):
    client = world.client(role)
    for suffix in ("", "progress/", "agreement/"):
        assert (
            client.get(f"/api/campaigns/{world.campaign.pk}/{suffix}").status_code == RESEARCH[role]
        )
    assert client.get(f"/api/studies/{world.study.pk}/").status_code == RESEARCH[role]
    assert client.get(f"/api/studies/{world.study.pk}/members/").status_code == RESEARCH[role]


@pytest.mark.parametrize("role", ROLES)
def test_assignments_are_seen_and_answered_only_by_their_annotator(world, role):
    client = world.client(role)
    url = f"/api/annotate/assignments/{world.lease.pk}/"
    assert client.get(url).status_code == ANNOTATE[role]
    submitted = client.post(url + "submit/", {"answers": answers(world.campaign)}, format="json")
    assert submitted.status_code == ANNOTATE[role]
    assert Judgment.objects.filter(annotator__isnull=False).count() == (
        2 if role == "annotator" else 0
    )
    assert client.post(f"/api/annotate/campaigns/{world.campaign.pk}/next/").status_code == (
        ANNOTATE[role] if role != "annotator" else 200
    )


def test_submitting_twice_stores_one_judgment_and_a_change_keeps_the_history(world):
    client = world.client("annotator")
    url = f"/api/annotate/assignments/{world.lease.pk}/submit/"
    first = client.post(url, {"answers": answers(world.campaign, 3)}, format="json")
    again = client.post(url, {"answers": answers(world.campaign, 3)}, format="json")
    assert first.status_code == again.status_code == 200
    assert first.json()["status"] == "done"
    mine = Judgment.objects.filter(annotator=world.users["annotator"])
    assert mine.count() == 2 and set(mine.values_list("value", flat=True)) == {3.0}
    changed = client.post(url, {"answers": answers(world.campaign, 5)}, format="json")
    assert changed.json()["answers"] == {k: 5.0 for k in answers(world.campaign)}
    assert mine.count() == 2 and AnswerRevision.objects.count() == 4


@pytest.mark.parametrize(
    "given",
    [{}, {"answers": {}}, {"answers": "4"}, {"answers": {"1": 4}}, "values"],
)
def test_bad_answers_are_a_400_and_store_nothing(world, given):
    if given == "values":
        given = {"answers": answers(world.campaign, 9)}
    response = world.client("annotator").post(
        f"/api/annotate/assignments/{world.lease.pk}/submit/", given, format="json"
    )
    assert response.status_code == 400 and "answers" in errors_body(response)["errors"]
    assert not Judgment.objects.filter(annotator__isnull=False).exists()
    assert Assignment.objects.get(pk=world.lease.pk).status == "leased"


def test_a_closed_campaign_refuses_answers_with_409(world):
    Campaign.objects.filter(pk=world.campaign.pk).update(status="closed")
    response = world.client("annotator").post(
        f"/api/annotate/assignments/{world.lease.pk}/submit/",
        {"answers": answers(world.campaign)},
        format="json",
    )
    assert response.status_code == 409 and "closed" in errors_body(response)["detail"]


def test_next_renews_the_lease_then_gives_new_items_and_skip_records_the_reason(world):
    client = world.client("annotator")
    renewed = client.post(f"/api/annotate/campaigns/{world.campaign.pk}/next/").json()
    assert renewed["id"] == world.lease.pk and renewed["content"]["outputs"]
    skipped = client.post(
        f"/api/annotate/assignments/{world.lease.pk}/skip/", {"reason": "unclear"}, format="json"
    )
    assert skipped.json()["status"] == "skipped" and skipped.json()["skip_reason"] == "unclear"
    following = client.post(f"/api/annotate/campaigns/{world.campaign.pk}/next/").json()
    assert following["id"] != world.lease.pk
    progress = world.client("owner").get(f"/api/campaigns/{world.campaign.pk}/progress/").json()
    assert progress["annotators"][0]["skipped"] == 1
    assert progress["skipped"] == [
        {"item": world.lease.item_id, "annotator": "annotator", "reason": "unclear"}
    ]


def test_researcher_creates_a_study_members_and_a_campaign(world):
    client = world.client("owner")
    coh = Aspect.objects.get(code="COH").pk
    study = client.post(
        "/api/studies/",
        {"name": "New", "dataset": world.dataset.pk, "aspects": [coh]},
        format="json",
    )
    assert study.status_code == 201, study.content
    sid = study.json()["id"]
    member = client.post(
        f"/api/studies/{sid}/members/",
        {"user": "other_researcher", "role": "researcher"},
        format="json",
    )
    assert member.status_code == 400 and "user" in errors_body(member)["errors"]  # no such username
    member = client.post(
        f"/api/studies/{sid}/members/", {"user": "outsider", "role": "researcher"}, format="json"
    )
    assert member.status_code == 201
    campaign = client.post(
        "/api/campaigns/",
        {"study": sid, "name": "C", "aspects": [coh], "overlap": 1, "annotators": ["annotator"]},
        format="json",
    )
    assert campaign.status_code == 201, campaign.content
    assert campaign.json()["n_items"] == 12 and campaign.json()["annotators"] == ["annotator"]
    # the new member now reads the study, its dataset and its campaign
    assert (
        world.client("other_researcher").get(f"/api/campaigns/{campaign.json()['id']}/").status_code
        == 200
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "C", "aspects": []}, "aspects"),
        ({"name": "C", "aspects": ["COH"]}, "aspects"),
        ({"name": "C", "aspects": "coh"}, "aspects"),
        ({"name": "C", "annotators": ["nobody"]}, "annotators"),
        ({"name": "C", "annotators": ["owner"]}, "annotators"),
        ({"name": "C", "selection": "random"}, "non_field_errors"),
        ({"name": "C", "overlap": 0}, "overlap"),
        ({"name": "C", "overlap": 2}, "overlap"),  # more than the one invited annotator
        ({"name": "C", "annotators": []}, "overlap"),
        (
            {
                "name": "",
            },
            "name",
        ),
    ],
)
def test_bad_campaigns_are_a_400_naming_the_field_and_create_nothing(world, body, field):
    before = Campaign.objects.count()
    body = {
        "study": world.study.pk,
        "aspects": [Aspect.objects.get(code="COH").pk],
        "annotators": ["annotator"],
        "overlap": 1,
        **body,
    }
    response = world.client("owner").post("/api/campaigns/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in errors_body(response)["errors"]
    assert Campaign.objects.count() == before


@pytest.mark.parametrize("role", ROLES)
def test_studies_and_campaigns_of_other_researchers_cannot_be_used(world, role):
    client = world.client(role)
    made = client.post("/api/studies/", {"name": "S", "dataset": world.dataset.pk}, format="json")
    # a collaborator reads the owner's dataset but may not put it in a study of their own
    shares = {**RESEARCH, "owner": 201, "admin": 201, "collaborator": 403, "other_researcher": 400}
    assert made.status_code == shares[role]
    made = client.post(
        "/api/campaigns/",
        {
            "study": world.study.pk,
            "name": "C",
            "overlap": 1,
            "annotators": ["annotator"],
            "aspects": [Aspect.objects.get(code="COH").pk],
        },
        format="json",
    )
    # ... but runs campaigns in the study with its annotators
    campaigns = {
        **RESEARCH,
        "owner": 201,
        "admin": 201,
        "collaborator": 201,
        "other_researcher": 400,
    }
    assert made.status_code == campaigns[role]
    assert Study.objects.filter(name="S").count() == (1 if role in ("owner", "admin") else 0)


@pytest.mark.parametrize("field", ["seed", "sample_size"])
def test_a_campaign_number_beyond_the_database_range_is_a_400_on_the_page_and_the_api(
    world, client, field
):
    """Found by the schema fuzzer: a huge seed reached the database and answered 500."""
    coh = Aspect.objects.get(code="COH").pk
    before = Campaign.objects.count()
    body = {
        "study": world.study.pk,
        "name": "C",
        "aspects": [coh],
        field: 2**70,
        "selection": "random",
    }
    response = world.client("owner").post("/api/campaigns/", body, format="json")
    assert response.status_code == 400 and field in errors_body(response)["errors"]
    client.force_login(world.users["owner"])
    page = client.post(
        "/campaigns/new/",
        {
            **body,
            "mode": "likert",
            "overlap": 1,
            "lease_seconds": 300,
            "gold_threshold": 0.7,
            "seed": body.get("seed", 0),
        },
    )
    assert page.status_code == 400
    assert Campaign.objects.count() == before


def test_an_aspect_id_beyond_the_database_range_is_a_400_on_the_page_and_the_api(world, client):
    """Found by the schema fuzzer: the choice lookup overflowed in the database (500)."""
    before = Campaign.objects.count()
    body = {"study": world.study.pk, "name": "C", "aspects": [2**70]}
    response = world.client("owner").post("/api/campaigns/", body, format="json")
    assert response.status_code == 400 and "aspects" in errors_body(response)["errors"]
    runs = world.client("owner").post(
        "/api/runs/", {"dataset": world.dataset.pk, "aspects": [2**70]}, format="json"
    )
    assert runs.status_code == 400 and "aspects" in errors_body(runs)["errors"]
    client.force_login(world.users["owner"])
    page = client.post(
        "/campaigns/new/",
        {
            **body,
            "mode": "likert",
            "overlap": 1,
            "lease_seconds": 300,
            "gold_threshold": 0.7,
            "seed": 0,
            "selection": "all",
        },
    )
    assert page.status_code == 400
    assert Campaign.objects.count() == before


def test_an_annotator_sees_no_other_annotators_of_a_campaign(world):
    body = world.client("annotator").get(f"/api/annotate/campaigns/{world.campaign.pk}/").json()
    assert body["name"] == "Campaign" and "annotators" not in body and "seed" not in body
