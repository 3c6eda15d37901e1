"""Documents, outputs (with judgments and scores on request), judgments, aspects and
prompt templates through the API."""

from __future__ import annotations

import pytest

from studies.models import Aspect, AspectVersion, PromptTemplate, PromptTemplateVersion
from tests.api.conftest import ROLES, errors_body

pytestmark = pytest.mark.django_db
READ = {
    "anonymous": 401,
    "annotator": 403,
    "other_annotator": 403,
    "owner": 200,
    "collaborator": 200,
    "other_researcher": 200,
    "admin": 200,
}


@pytest.mark.parametrize("role", ROLES)
def test_documents_outputs_and_judgments_are_scoped_to_visible_datasets(world, role):
    client = world.client(role)
    output = world.dataset.documents.first().outputs.first()
    for url in ("/api/documents/", "/api/outputs/", "/api/judgments/"):
        response = client.get(f"{url}?dataset={world.dataset.pk}")
        assert response.status_code == READ[role]
        if response.status_code == 200:
            assert response.json()["count"] == (
                0
                if role == "other_researcher"
                else {"/api/documents/": 4, "/api/outputs/": 12, "/api/judgments/": 24}[url]
            )
    expected = {**READ, "other_researcher": 404}[role]
    assert client.get(f"/api/outputs/{output.pk}/").status_code == expected
    assert client.get(f"/api/documents/{output.document_id}/").status_code == expected


def test_outputs_filter_by_document_and_system_and_include_judgments_and_scores(world):
    client = world.client("owner")
    plain = client.get("/api/outputs/?doc_key=d1&system_id=s2").json()
    assert plain["count"] == 1
    (row,) = plain["results"]
    assert (row["doc_key"], row["system_id"], row["judgments"], row["scores"]) == (
        "d1",
        "s2",
        None,
        None,
    )
    full = client.get("/api/outputs/?doc_key=d1&system_id=s2&include=judgments,scores").json()[
        "results"
    ][0]
    assert sorted(j["aspect_code"] for j in full["judgments"]) == ["COH", "FLU"]
    assert sorted(s["run_label"] for s in full["scores"]) == ["m_good", "m_noise"]
    bad = client.get("/api/outputs/?include=secrets")
    assert bad.status_code == 400 and "include" in errors_body(bad)["errors"]
    assert (
        client.get("/api/outputs/?ordering=-system_id&page_size=1").json()["results"][0][
            "system_id"
        ]
        == "s2"
    )
    assert client.get("/api/outputs/?dataset=abc").status_code == 400


def test_judgments_filter_by_source_and_aspect(world):
    client = world.client("owner")
    from annotation.services.answers import submit

    submit(
        world.lease.pk, world.users["annotator"], {a.pk: 2.0 for a in world.campaign.aspects.all()}
    )
    assert client.get("/api/judgments/?source=annotator").json()["count"] == 2
    imported = client.get("/api/judgments/?source=import&aspect_code=coh").json()
    assert imported["count"] == 12 and {j["import_file"] for j in imported["results"]} == {
        "scored.jsonl"
    }
    assert client.get("/api/judgments/?annotator=annotator&aspect_code=FLU").json()["count"] == 1
    assert client.get("/api/judgments/?source=robot").status_code == 400


@pytest.mark.parametrize("role", ROLES)
def test_aspects_and_templates_are_read_by_researchers_and_written_by_admins(world, role):
    client = world.client(role)
    aspect = Aspect.objects.get(code="COH")
    template = PromptTemplate.objects.first()
    assert client.get(f"/api/aspects/{aspect.pk}/").status_code == READ[role]
    assert client.get(f"/api/templates/{template.pk}/").status_code == READ[role]
    changed = client.patch(
        f"/api/aspects/{aspect.pk}/", {"definition": "Is it coherent?"}, format="json"
    )
    write = {**READ, "owner": 403, "collaborator": 403, "other_researcher": 403}[role]
    assert changed.status_code == write
    edited = client.patch(
        f"/api/templates/{template.pk}/", {"text": "Rate {src}: {hypo}"}, format="json"
    )
    assert edited.status_code == write
    versions = AspectVersion.objects.filter(aspect=aspect).count()
    assert versions == (2 if role == "admin" else 1)
    if role == "admin":
        body = client.get(f"/api/aspects/{aspect.pk}/").json()
        assert body["version"] == 2 and [v["version"] for v in body["versions"]] == [2, 1]
        assert body["versions"][0]["created_by"] == "boss"
        assert PromptTemplateVersion.objects.filter(template=template).count() == 2


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("aspects", {"scale_min": 5, "scale_max": 1}, "scale_max"),
        ("aspects", {"anchors": "bad"}, "anchors"),
        ("aspects", {"code": "FLU"}, "code"),
        ("templates", {"text": "{src.__class__}"}, "text"),
        ("templates", {"text": "{unknown_field}"}, "text"),
        ("templates", {"task": "nope"}, "task"),
    ],
)
def test_bad_aspect_and_template_writes_are_a_400_and_change_nothing(world, url, body, field):
    obj = Aspect.objects.get(code="COH") if url == "aspects" else PromptTemplate.objects.first()
    response = world.client("admin").patch(f"/api/{url}/{obj.pk}/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in errors_body(response)["errors"]
    obj.refresh_from_db()
    assert obj.version == 1


def test_admin_creates_an_aspect_at_version_one(world):
    response = world.client("admin").post(
        "/api/aspects/",
        {"code": "NEW", "name": "Novelty", "definition": "Is it new?", "tasks": ["dialogue"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["version"] == 1 and response.json()["tasks"] == ["dialogue"]


@pytest.mark.parametrize("value", ["-8.7e22", "1e300", str(2**70), "1.5", "x"])
def test_an_id_filter_out_of_range_is_a_400(world, value):
    """Found by the schema fuzzer: a huge number in an id filter overflowed (500)."""
    for url in ("/api/documents/", "/api/outputs/", "/api/judgments/"):
        response = world.client("owner").get(f"{url}?dataset={value}")
        assert response.status_code == 400 and "dataset" in errors_body(response)["errors"]
