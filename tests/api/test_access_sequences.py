"""Access follows membership, through sequences: share → use → remove, walked over every
route of the site (pages and API, :mod:`tests.api.routes`), not only static roles.

A *leak* is a route that answers a user "ok" where a researcher who was never let in
gets 401/403/404 or the login page. The counts are printed; every sequence asserts 0.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment, CampaignAnnotator
from studies.models import Judgment, Study, StudyMember
from tests.api.conftest import World
from tests.api.routes import OK, Request, answer, client_for, requests
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def walk(world: World) -> list[Request]:
    """Every route but logout (which would end the session the sequence goes on with)."""
    return [r for r in requests(world) if r.route.full_name != "logout"]


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def compare(world: World, who: Client, like: Client, found: list[Request]) -> list[str]:
    """Routes where ``who`` is answered otherwise than ``like`` (asked back to back, so a
    route that changes something changes it for both)."""
    differences = []
    for request in found:
        got, response = answer(who, request, world)
        want, _ = answer(like, request, world)
        if got != want:
            differences.append(
                f"{request.method.upper()} {request.url} [{request.route.full_name}]: "
                f"{response.status_code} ({got}), expected {want}"
            )
    return differences


def leaks(world: World, who: Client, outsider: Client, found: list[Request]) -> list[str]:
    """Routes that answer ``who`` "ok" where a never-admitted researcher is refused."""
    opened = []
    for request in found:
        got, response = answer(who, request, world)
        want, _ = answer(outsider, request, world)
        if got == OK and want != OK:
            opened.append(f"{request.method.upper()} {request.url}: {response.status_code}")
    return opened


def report(capsys: Any, sequence: str, checks: int, found: list[str]) -> None:
    with capsys.disabled():
        print(f"\naccess sequence {sequence}: {checks} route checks, {len(found)} leaks")


def test_sharing_then_removing_a_researcher_opens_then_closes_every_route(world, capsys):
    newcomer = UserFactory(username="newcomer", role="researcher")
    owner = client_for(world, "owner")
    outsider, collaborator = (
        client_for(world, "other_researcher"),
        client_for(world, "collaborator"),
    )
    found = walk(world)
    who = login(newcomer)

    before = leaks(world, who, outsider, found)
    shared = owner.post(
        f"/api/studies/{world.study.pk}/members/",
        {"user": "newcomer", "role": "researcher"},
        content_type="application/json",
    )
    assert shared.status_code == 201, shared.content
    # shared: exactly what the owner's existing collaborator gets, route by route
    assert compare(world, who, collaborator, found) == []
    export = who.get(f"/api/datasets/{world.dataset.pk}/export/?file_format=jsonl")
    assert export.status_code == 200 and b"".join(export.streaming_content)

    removed = owner.delete(f"/api/studies/{world.study.pk}/members/{newcomer.pk}/")
    assert removed.status_code == 204
    after = leaks(world, who, outsider, found)
    assert who.get(f"/api/datasets/{world.dataset.pk}/export/?file_format=csv").status_code == 404
    assert who.get(f"/datasets/{world.dataset.pk}/export/jsonl/").status_code == 404
    report(capsys, "share → remove (researcher)", 4 * len(found), before + after)
    assert before == [] and after == []


def test_a_collaborator_cannot_share_the_owners_dataset(world):
    collaborator = client_for(world, "collaborator")
    study, dataset = world.study, world.dataset
    studies_before = Study.objects.count()
    made = collaborator.post(
        "/api/studies/", {"name": "Mine", "dataset": dataset.pk}, content_type="application/json"
    )
    assert made.status_code == 403 and "owner" in made.json()["detail"]
    page = collaborator.post("/studies/new/", {"name": "Mine", "dataset": dataset.pk})
    assert page.status_code == 400  # the form offers only the user's own datasets
    assert dataset.pk not in [d.pk for d in page.context["form"].fields["dataset"].queryset]
    assert Study.objects.count() == studies_before
    invited = collaborator.post(
        f"/api/studies/{study.pk}/members/",
        {"user": "other_researcher_x", "role": "researcher"},
        content_type="application/json",
    )
    assert invited.status_code == 403
    annotator = world.users["annotator"]
    assert collaborator.delete(f"/api/studies/{study.pk}/members/{annotator.pk}/").status_code == (
        403
    )
    members_page = collaborator.post(
        f"/studies/{study.pk}/members/", {"action": "invite", "username": "outsider"}
    )
    assert members_page.status_code == 403
    removal_page = collaborator.post(
        f"/studies/{study.pk}/members/", {"action": "remove", "user": annotator.pk}
    )
    assert removal_page.status_code == 403
    read_only = collaborator.get(f"/studies/{study.pk}/members/")
    assert read_only.status_code == 200 and b'id="members-read-only"' in read_only.content
    assert b"invite-form" not in read_only.content and b'id="remove-' not in read_only.content
    assert StudyMember.objects.filter(study=study, user=annotator).exists()


def test_a_collaborators_campaign_takes_only_the_studys_annotators(world):
    stranger = UserFactory(username="stranger-ann", role="annotator")
    base = {
        "study": world.study.pk,
        "mode": "likert",
        "aspects": [world.campaign.aspects.first().pk],
        "overlap": 1,
        "selection": "all",
    }
    collaborator = client_for(world, "collaborator")
    refused = collaborator.post(
        "/api/campaigns/",
        {**base, "name": "C2", "annotators": ["stranger-ann"]},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "stranger-ann" in refused.json()["detail"]
    assert not StudyMember.objects.filter(user=stranger).exists()
    allowed = collaborator.post(
        "/api/campaigns/",
        {**base, "name": "C3", "annotators": [world.users["annotator"].username]},
        content_type="application/json",
    )
    assert allowed.status_code == 201, allowed.content
    # the owner may invite anyone: the campaign makes them an annotator member
    owner = client_for(world, "owner")
    invited = owner.post(
        "/api/campaigns/",
        {**base, "name": "C4", "annotators": ["stranger-ann"]},
        content_type="application/json",
    )
    assert invited.status_code == 201, invited.content
    assert StudyMember.objects.filter(user=stranger, study=world.study).exists()


def test_the_owner_sees_and_manages_a_study_someone_else_made_on_their_dataset(world, capsys):
    """A study made on the owner's dataset by a collaborator (as the old rules allowed),
    with a researcher the collaborator invited: the owner sees it, removes them both, and
    neither keeps any way in (the reported leak: 404 before, 200 with the file after)."""
    collaborator = world.users["collaborator"]
    friend = UserFactory(username="friend", role="researcher")
    legacy = Study.objects.create(name="Side study", dataset=world.dataset, owner=collaborator)
    StudyMember.objects.create(study=legacy, user=friend, role="researcher")
    owner = client_for(world, "owner")
    listed = owner.get("/api/studies/").json()["results"]
    assert legacy.pk in [s["id"] for s in listed]
    assert owner.get(f"/api/studies/{legacy.pk}/").status_code == 200
    assert owner.get(f"/studies/{legacy.pk}/").status_code == 200
    assert b"Side study" in owner.get(f"/datasets/{world.dataset.pk}/").content

    assert owner.delete(f"/api/studies/{legacy.pk}/members/{friend.pk}/").status_code == 204
    removed = owner.post(
        f"/studies/{world.study.pk}/members/", {"action": "remove", "user": collaborator.pk}
    )
    assert removed.status_code == 302
    found = walk(world)
    outsider = client_for(world, "other_researcher")
    opened = leaks(world, login(friend), outsider, found) + leaks(
        world, login(collaborator), outsider, found
    )
    report(capsys, "legacy study → remove both", 4 * len(found), opened)
    assert opened == []
    # the collaborator made the study, yet it no longer opens the dataset to them
    assert login(collaborator).get(f"/api/studies/{legacy.pk}/").status_code == 404


def test_removing_an_annotator_closes_their_queue_and_keeps_their_answers(world, capsys):
    annotator = world.users["annotator"]
    lease = world.lease
    aspects = {str(a.pk): 3 for a in lease.item.campaign.aspects.all()}
    submitted = client_for(world, "annotator").post(
        f"/api/annotate/assignments/{lease.pk}/submit/",
        {"answers": aspects},
        content_type="application/json",
    )
    assert submitted.status_code == 200, submitted.content
    answers = Judgment.objects.filter(annotator=annotator).count()
    assert answers > 0
    # a second item leased and left open
    assert client_for(world, "annotator").post(
        f"/api/annotate/campaigns/{world.campaign.pk}/next/"
    ).status_code in (200, 204)
    found = [
        r
        for r in walk(world)
        if r.route.full_name.startswith(("annotation:", "api:annotate-", "api:assignment-"))
    ]
    who, other = client_for(world, "annotator"), client_for(world, "other_annotator")
    assert any(answer(who, r, world)[0] == OK for r in found)

    removed = client_for(world, "owner").post(
        f"/studies/{world.study.pk}/members/", {"action": "remove", "user": annotator.pk}
    )
    assert removed.status_code == 302
    opened = leaks(world, who, other, found)
    report(capsys, "annotator → remove", 2 * len(found), opened)
    assert opened == []
    # every route of the campaign (its queue, items, guidelines, assignments) is closed
    still = [r.url for r in found if r.route.kwargs and answer(who, r, world)[0] == OK]
    assert still == []
    assert not CampaignAnnotator.objects.filter(user=annotator).exists()
    assert not Assignment.objects.filter(
        annotator=annotator, status=Assignment.Status.LEASED
    ).exists()
    assert Judgment.objects.filter(annotator=annotator).count() == answers
