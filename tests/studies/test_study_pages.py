"""Studies from an upload: the service (create, members, annotator accounts), the pages
(create, members, overview, the researcher's home), the campaign form's guardrails and
the API, each with bad input that names its field and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from annotation.models import Campaign
from studies.models import Aspect, MetricRun, Study, StudyMember, TaskKind
from studies.services import studies as service
from tests.annotation.conftest import make_study
from tests.factories import (
    DatasetFactory,
    DocumentFactory,
    MetricRunFactory,
    OutputFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def grant_create(user: Any) -> Any:
    user.user_permissions.add(Permission.objects.get(codename="create_annotator_accounts"))
    return get_user_model().objects.get(pk=user.pk)  # drop the permission cache


def other_task_aspect(owner: Any = None) -> Aspect:
    """An aspect of another task than summarisation (dialogue)."""
    task, _ = TaskKind.objects.get_or_create(code="dialogue-x", defaults={"name": "Dialogue X"})
    aspect = Aspect.objects.create(code="ZZX", name="Zany x", definition="Engaging?", owner=owner)
    aspect.tasks.set([task])
    return aspect


def aspects(*codes: str) -> list[Aspect]:
    return list(Aspect.objects.filter(code__in=codes, owner__isnull=True).order_by("code"))


# --- service ---------------------------------------------------------------------------------


def test_a_study_takes_only_aspects_of_its_datasets_task(cast):
    dataset = DatasetFactory(owner=cast["owner"])
    allowed = set(service.task_aspects(dataset).values_list("code", flat=True))
    summarization = set(
        Aspect.objects.filter(tasks__code="summarization", owner__isnull=True).values_list(
            "code", flat=True
        )
    )
    assert allowed == summarization and {"COH", "FLU"} <= allowed
    wrong = other_task_aspect()
    assert "ZZX" not in allowed
    with pytest.raises(service.StudyError) as err:
        service.create_study(dataset, "S", cast["owner"], aspects=[*aspects("COH"), wrong])
    assert err.value.field == "aspects" and "ZZX" in str(err.value)
    assert not Study.objects.exists()
    study = service.create_study(dataset, " S ", cast["owner"], aspects=aspects("COH", "FLU"))
    assert study.name == "S" and study.owner == cast["owner"]
    assert [a.code for a in service.campaign_aspects(study)] == ["COH", "FLU"]


def test_a_custom_task_dataset_offers_the_aspects_its_judgments_use(cast):
    """The upload form's first task, ``custom``, lists no aspects: a study of such a
    dataset still offers the aspects its imported judgments name, and only those."""
    from studies.models import Judgment

    custom = TaskKind.objects.get(code="custom")
    assert not Aspect.objects.filter(tasks=custom).exists()
    dataset = DatasetFactory(owner=cast["owner"], task=custom)
    output = OutputFactory(document=DocumentFactory(dataset=dataset))
    Judgment.objects.create(
        output=output,
        aspect=Aspect.objects.get(code="COH", owner__isnull=True),
        value=3.0,
        import_file="custom.jsonl",
    )
    assert [a.code for a in service.task_aspects(dataset)] == ["COH"]
    study = service.create_study(dataset, "Custom", cast["owner"], aspects=aspects("COH"))
    assert [a.code for a in service.campaign_aspects(study)] == ["COH"]
    with pytest.raises(service.StudyError):  # a summarization aspect it does not judge: no
        service.create_study(dataset, "Other", cast["owner"], aspects=aspects("FLU"))


def test_another_researchers_aspect_is_not_offered(cast):
    dataset = DatasetFactory(owner=cast["owner"])
    theirs = Aspect.objects.create(
        code="THR", name="Theirs", definition="?", owner=cast["outsider"]
    )
    theirs.tasks.set([dataset.task])
    assert "THR" not in set(service.task_aspects(dataset).values_list("code", flat=True))


def test_members_are_existing_accounts_of_the_right_kind(cast):
    study = make_study(cast["owner"])
    member = service.add_member(study, "annotator", "annotator")
    assert member.role == "annotator" and member.user == cast["annotator"]
    cases = [
        ("nobody", "annotator", "username"),
        ("outsider", "annotator", "username"),
        ("annotator", "researcher", "role"),
        ("owner", "annotator", "username"),
        ("annotator", "boss", "role"),
    ]
    for username, role, field in cases:
        with pytest.raises(service.StudyError) as err:
            service.add_member(study, username, role)
        assert err.value.field == field, (username, role)
    assert service.add_member(study, "outsider", "researcher").role == "researcher"
    assert StudyMember.objects.filter(study=study).count() == 2


def test_creating_annotator_accounts_needs_the_permission(cast):
    study = make_study(cast["owner"])
    assert not service.may_create_annotators(cast["owner"])
    with pytest.raises(service.StudyError):
        service.create_annotator(study, "newbie", "a-Long-pass-42", cast["owner"])
    owner = grant_create(cast["owner"])
    assert service.may_create_annotators(owner) and service.may_create_annotators(cast["admin"])
    for username, password, field in [
        ("annotator", "a-Long-pass-42", "username"),
        ("bad name!", "a-Long-pass-42", "username"),
        ("newbie", "123", "password"),
    ]:
        with pytest.raises(service.StudyError) as err:
            service.create_annotator(study, username, password, owner)
        assert err.value.field == field, username
    assert not get_user_model().objects.filter(username="newbie").exists()
    member = service.create_annotator(study, "newbie", "a-Long-pass-42", owner)
    assert member.role == "annotator" and member.user.check_password("a-Long-pass-42")
    assert member.user.groups.filter(name="annotator").exists()
    assert not member.user.is_staff and not member.user.is_superuser
    assert list(service.study_annotators(study)) == [member.user]


# --- pages -----------------------------------------------------------------------------------


def test_a_researcher_creates_a_study_on_an_uploaded_dataset(client, cast):
    dataset = DatasetFactory(owner=cast["owner"])
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:study-new") + f"?dataset={dataset.pk}")
    assert page.status_code == 200
    offered = {a.code for a in page.context["form"].fields["aspects"].queryset}
    assert offered == set(service.task_aspects(dataset).values_list("code", flat=True))
    coh, flu = aspects("COH", "FLU")
    response = client.post(
        reverse("studies:study-new"),
        {
            "dataset": dataset.pk,
            "name": "Round one",
            "aspects": [coh.pk, flu.pk],
            "description": "Two aspects.",
        },
    )
    study = Study.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("studies:study-members", args=[study.pk])
    assert study.owner == cast["owner"] and set(study.aspects.all()) == {coh, flu}
    # the owner, also made a member (as the demo does), is listed once, as the owner
    StudyMember.objects.create(study=study, user=cast["owner"], role=StudyMember.Role.RESEARCHER)
    StudyMember.objects.create(study=study, user=cast["annotator"], role=StudyMember.Role.ANNOTATOR)
    overview = client.get(reverse("studies:study-detail", args=[study.pk])).content.decode()
    listed = overview.split('id="study-member-list">', 1)[1].split("</p>", 1)[0]
    assert (
        listed.startswith("owner (owner), annotator (annotator).") and "(researcher)" not in listed
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": ""}, "name"),
        ({"dataset": 0}, "dataset"),
        ({"dataset": "theirs"}, "dataset"),
        ({"dataset": 2**70}, "dataset"),
        ({"name": "   "}, "name"),
        ({"aspects": ["eng"]}, "aspects"),
        ({"aspects": [2**70]}, "aspects"),
    ],
)
def test_a_bad_study_is_a_400_naming_the_field_and_creates_nothing(client, cast, change, field):
    mine, theirs = DatasetFactory(owner=cast["owner"]), DatasetFactory(owner=cast["outsider"])
    wrong = other_task_aspect(cast["owner"])
    data = {"dataset": mine.pk, "name": "S", "aspects": [aspects("COH")[0].pk], **change}
    if data["dataset"] == "theirs":
        data["dataset"] = theirs.pk
    if data["aspects"] == ["eng"]:
        data["aspects"] = [wrong.pk]
    client.force_login(cast["owner"])
    response = client.post(reverse("studies:study-new"), data)
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert not Study.objects.exists()


def test_the_members_page_invites_and_creates_accounts(client, cast):
    study = make_study(cast["owner"])
    client.force_login(cast["owner"])
    url = reverse("studies:study-members", args=[study.pk])
    page = client.get(url)
    assert page.status_code == 200 and b'id="no-create"' in page.content
    bad = client.post(url, {"action": "invite", "username": "nobody", "role": "annotator"})
    assert bad.status_code == 400 and "username" in bad.context["invite"].errors
    forged = client.post(
        url, {"action": "create", "new_username": "x1", "password": "a-Long-pass-42"}
    )
    assert forged.status_code == 400 and "new_username" in forged.context["create"].errors
    assert not StudyMember.objects.exists()
    assert not get_user_model().objects.filter(username="x1").exists()
    ok = client.post(
        url, {"action": "invite", "username": "annotator", "role": "annotator"}, follow=True
    )
    assert ok.redirect_chain[-1][1] == 302
    assert StudyMember.objects.get().user == cast["annotator"]
    said = [str(m) for m in ok.context["messages"]]
    assert said == [f"annotator is now an annotator of {study.name}."], said

    client.force_login(grant_create(cast["owner"]))
    page = client.get(url)
    assert b'id="create-form"' in page.content
    weak = client.post(url, {"action": "create", "new_username": "x1", "password": "1"})
    assert weak.status_code == 400 and "password" in weak.context["create"].errors
    made = client.post(
        url, {"action": "create", "new_username": "x1", "password": "a-Long-pass-42"}
    )
    assert made.status_code == 302
    assert set(service.study_annotators(study).values_list("username", flat=True)) == {
        "annotator",
        "x1",
    }


def test_another_researcher_cannot_see_or_change_a_study(client, cast):
    study = make_study(cast["owner"])
    client.force_login(cast["outsider"])
    for name in ("studies:study-detail", "studies:study-members"):
        assert client.get(reverse(name, args=[study.pk])).status_code == 404
    post = client.post(
        reverse("studies:study-members", args=[study.pk]),
        {"action": "invite", "username": "annotator", "role": "annotator"},
    )
    assert post.status_code == 404 and not StudyMember.objects.exists()
    # a researcher member reads it
    service.add_member(study, "outsider", "researcher")
    assert client.get(reverse("studies:study-detail", args=[study.pk])).status_code == 200


def test_the_overview_shows_campaigns_runs_and_correlations(client, cast):
    study = make_study(cast["owner"])
    MetricRun.objects.create(
        dataset=study.dataset,
        metric="rouge",
        label="rouge-run-x",
        status=MetricRun.Status.SUCCEEDED,
    )
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:study-detail", args=[study.pk])).content.decode()
    assert 'id="no-campaigns"' in page and "rouge-run-x" in page
    assert reverse("studies:correlations", args=[study.dataset_id]) in page
    from tests.annotation.conftest import new_campaign

    campaign = new_campaign(study, cast["owner"], [cast["annotator"]], overlap=1, name="Round-x")
    page = client.get(reverse("studies:study-detail", args=[study.pk])).content.decode()
    assert reverse("annotation:campaign-detail", args=[campaign.pk]) in page
    assert 'id="no-campaigns"' not in page


def test_a_researchers_home_lists_their_studies_datasets_and_runs(client, cast):
    mine = make_study(cast["owner"])
    theirs = service.create_study(
        DatasetFactory(owner=cast["outsider"], name="their-data"), "Their study", cast["outsider"]
    )
    MetricRun.objects.create(dataset=mine.dataset, metric="rouge", label="my-recent-run")
    client.force_login(cast["owner"])
    response = client.get(reverse("studies:home"))
    page = response.content.decode()
    assert response.status_code == 200
    assert reverse("studies:study-detail", args=[mine.pk]) in page and "my-recent-run" in page
    assert reverse("studies:dataset-detail", args=[mine.dataset_id]) in page
    assert theirs.name not in page and "their-data" not in page
    fresh = UserFactory(username="fresh", role="researcher")
    client.force_login(fresh)
    page = client.get(reverse("studies:home")).content.decode()
    assert 'id="no-studies"' in page and 'id="no-datasets"' in page
    client.force_login(cast["annotator"])
    assert client.get(reverse("studies:home"))["Location"] == reverse("annotation:home")


# --- campaign form guardrails ----------------------------------------------------------------


def campaign_data(study: Study, **change: Any) -> dict[str, Any]:
    return {
        "study": study.pk,
        "name": "Round 1",
        "mode": "likert",
        "aspects": [aspects("COH")[0].pk],
        "overlap": 1,
        "selection": "all",
        "seed": 0,
        "annotators": [get_user_model().objects.get(username="annotator").pk],
        "lease_seconds": 300,
        "gold_threshold": 0.7,
        **change,
    }


def test_the_campaign_form_offers_the_studys_aspects_and_members(client, cast):
    study = make_study(cast["owner"])
    study.aspects.set(aspects("COH", "FLU"))
    service.add_member(study, "annotator", "annotator")
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-new") + f"?study={study.pk}")
    form = page.context["form"]
    assert [a.code for a in form.fields["aspects"].queryset] == ["COH", "FLU"]
    assert form.fields["annotators"].initial == [cast["annotator"].pk]
    assert form.fields["study"].initial == study.pk
    assert form.fields["overlap"].initial == 1  # no more than the one invited annotator
    html = page.content.decode()
    for words in ("different annotators judge each item", "stays reserved", "gold items"):
        assert words in html
    assert 'id="campaign-study-note"' in html
    chooser = client.get(reverse("annotation:campaign-new")).content.decode()
    assert f'href="?study={study.pk}"' in chooser
    client.force_login(UserFactory(username="fresh", role="researcher"))
    assert b'id="campaign-no-study"' in client.get(reverse("annotation:campaign-new")).content


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"overlap": 2}, "overlap"),
        ({"annotators": [], "overlap": 1}, "overlap"),
        ({"aspects": "REL"}, "aspects"),
    ],
)
def test_campaign_guardrails_name_the_field_and_create_nothing(client, cast, change, field):
    study = make_study(cast["owner"])
    study.aspects.set(aspects("COH", "FLU"))
    if change.get("aspects") == "REL":
        change["aspects"] = [aspects("REL")[0].pk]
    client.force_login(cast["owner"])
    response = client.post(reverse("annotation:campaign-new"), campaign_data(study, **change))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors, errors
    if field == "overlap":
        assert "invite more or lower the overlap" in errors["overlap"][0]
    assert not Campaign.objects.exists()
    ok = client.post(reverse("annotation:campaign-new"), campaign_data(study))
    assert ok.status_code == 302 and Campaign.objects.count() == 1


def test_gold_items_are_chosen_from_the_campaigns_outputs(client, cast):
    from tests.annotation.conftest import new_campaign

    study = make_study(cast["owner"])
    campaign = new_campaign(
        study, cast["owner"], [cast["annotator"]], overlap=1, aspect_codes=("COH",)
    )
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk]))
    field = page.context["gold_form"].fields["item"]
    labels = [label for value, label in field.choices if value != ""]
    assert len(labels) == campaign.items.count() == 12
    assert "d0 · s1 · item" in page.content.decode()
    item = campaign.items.get(document__doc_key="d2", output_a__system_id="s3")
    coh = aspects("COH")[0]
    response = client.post(
        reverse("annotation:campaign-gold", args=[campaign.pk]),
        {"item": item.pk, f"aspect-{coh.pk}": 4, "tolerance": 0},
    )
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.gold_answer == {str(coh.pk): 4.0} or item.gold_answer == {coh.pk: 4.0}
    other = new_campaign(make_other_study(cast), cast["outsider"], [cast["annotator"]], overlap=1)
    foreign = other.items.first()
    bad = client.post(
        reverse("annotation:campaign-gold", args=[campaign.pk]),
        {"item": foreign.pk, f"aspect-{coh.pk}": 4},
    )
    assert bad.status_code == 400 and "item" in bad.context["gold_form"].errors
    for value in (2**70, "d0", ""):  # beyond the database's range, not a number, missing
        bad = client.post(
            reverse("annotation:campaign-gold", args=[campaign.pk]),
            {"item": value, f"aspect-{coh.pk}": 4},
        )
        assert bad.status_code == 400 and "item" in bad.context["gold_form"].errors, value
    foreign.refresh_from_db()
    assert foreign.gold_answer is None


def make_other_study(cast: dict[str, Any]) -> Study:
    dataset = DatasetFactory(name="other", owner=cast["outsider"])
    OutputFactory(document=DocumentFactory(dataset=dataset), system_id="z")
    return Study.objects.create(name="Other", dataset=dataset, owner=cast["outsider"])


# --- API -------------------------------------------------------------------------------------


def api(user: Any) -> Any:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_creates_studies_members_and_accounts_with_the_same_rules(cast):
    dataset = DatasetFactory(owner=cast["owner"])
    coh = aspects("COH")[0]
    wrong = other_task_aspect()
    client = api(cast["owner"])
    bad = client.post(
        "/api/studies/",
        {"name": "S", "dataset": dataset.pk, "aspects": [coh.pk, wrong.pk]},
        format="json",
    )
    assert bad.status_code == 400 and "aspects" in bad.json()["errors"]
    assert not Study.objects.exists()
    made = client.post(
        "/api/studies/", {"name": "S", "dataset": dataset.pk, "aspects": [coh.pk]}, format="json"
    )
    assert made.status_code == 201, made.content
    sid = made.json()["id"]
    body = client.get(f"/api/studies/{sid}/").json()
    assert body["aspects"] == [coh.pk] and body["campaigns"] == []
    assert body["correlations"] == f"/api/datasets/{dataset.pk}/correlations/"
    not_annotator = client.post(
        f"/api/studies/{sid}/members/", {"user": "outsider", "role": "annotator"}, format="json"
    )
    assert not_annotator.status_code == 400 and "user" in not_annotator.json()["errors"]
    ok = client.post(
        f"/api/studies/{sid}/members/", {"user": "annotator", "role": "annotator"}, format="json"
    )
    assert ok.status_code == 201 and ok.json()["role"] == "annotator"
    denied = client.post(
        f"/api/studies/{sid}/annotators/",
        {"username": "api-ann", "password": "a-Long-pass-42"},
        format="json",
    )
    # a permission the owner lacks: 403, as the schema says, before the body is read
    assert denied.status_code == 403
    assert denied.json() == {"detail": "You may not create accounts: ask an admin.", "errors": {}}
    owner = grant_create(cast["owner"])
    created = api(owner).post(
        f"/api/studies/{sid}/annotators/",
        {"username": "api-ann", "password": "a-Long-pass-42"},
        format="json",
    )
    assert created.status_code == 201 and created.json()["user"] == "api-ann"
    assert api(cast["outsider"]).get(f"/api/studies/{sid}/").status_code == 404
    assert (
        api(cast["outsider"])
        .post(
            f"/api/studies/{sid}/annotators/",
            {"username": "x", "password": "a-Long-pass-42"},
            format="json",
        )
        .status_code
        == 404
    )


def test_the_question_runs_are_the_studys_datasets_own(client, cast):
    study = make_study(cast["owner"])
    study.aspects.set(aspects("COH"))
    elsewhere = DatasetFactory(name="elsewhere", owner=cast["owner"])
    ours = MetricRunFactory(dataset=study.dataset, status="succeeded", label="ours")
    theirs = MetricRunFactory(dataset=elsewhere, status="succeeded", label="theirs")
    client.force_login(cast["owner"])
    form = client.get(reverse("annotation:campaign-new") + f"?study={study.pk}").context["form"]
    assert list(form.fields["question_run_a"].queryset) == [ours]
    data = campaign_data(
        study,
        question_run_a=theirs.pk,
        question_run_b=ours.pk,
        question_aspect=aspects("COH")[0].pk,
    )
    response = client.post(reverse("annotation:campaign-new"), data)
    assert response.status_code == 400 and not Campaign.objects.exists()
    assert "question_run_a" in response.context["form"].errors
