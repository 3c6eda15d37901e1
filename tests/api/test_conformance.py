"""The API answers as its OpenAPI schema says (each case was a disagreement schemathesis
found): bad query values are a 400 naming the parameter, a URL no route matches is the
JSON 404 under DEBUG too, bodies are JSON of the documented types, and the schema says
what the API refuses."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from studies.api.schema import NO_NUL, NOT_BLANK
from studies.models import Dataset
from tests.api.conftest import errors_body

pytestmark = pytest.mark.django_db


def parameters(schema: dict[str, Any], path: str, method: str = "get") -> dict[str, Any]:
    return {p["name"]: p for p in schema["paths"][path][method].get("parameters", [])}


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize(
    "url",
    [
        "/api/templates/0.5/",
        "/api/datasets/null,null/correlations/",
        "/api/runs/1/nothing/",
        "/api/no-such-thing/",
    ],
)
def test_a_url_no_route_matches_is_the_json_404_under_debug_too(world, settings, url, debug):
    settings.DEBUG = debug
    for method in ("get", "post", "put"):
        response = getattr(world.client("owner"), method)(url)
        assert response.status_code == 404, (method, url)
        assert response["Content-Type"] == "application/json", (method, url)
        assert errors_body(response) == {"detail": "Not found.", "errors": {}}


def test_a_url_without_its_slash_is_still_redirected_to_it(world):
    response = world.client("owner").get("/api/datasets")
    assert response.status_code == 301 and response["Location"] == "/api/datasets/"


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("page_size=null", "page_size"),
        ("page_size=0", "page_size"),
        ("page_size=1001", "page_size"),
        ("page_size=", "page_size"),
        ("page_size=2.5", "page_size"),
        ("page=0", "page"),
        ("page=abc", "page"),
        ("page_size=1&page_size=2", "page_size"),
        ("page_size=null&page_size=null", "page_size"),
        ("ordering=nonsense", "ordering"),
        ("ordering=id,secret", "ordering"),
        ("ordering=", "ordering"),
    ],
)
def test_bad_paging_and_ordering_are_a_400_naming_the_parameter(world, query, name):
    response = world.client("owner").get(f"/api/runs/?{query}")
    assert response.status_code == 400, response.content
    assert list(errors_body(response)["errors"]) == [name]


def test_paging_and_ordering_within_the_schema_still_work(world):
    client = world.client("owner")
    first = client.get("/api/runs/?page_size=1&ordering=-id").json()
    assert first["count"] == 2 and len(first["results"]) == 1
    assert first["results"][0]["id"] == max(r.pk for r in world.dataset.runs.all())
    assert client.get("/api/runs/?page=3&page_size=1").status_code == 404  # past the last page


@pytest.mark.parametrize(
    "query",
    [
        "weights=",
        "coef=",
        "level=",
        "ci=",
        "mincov=",
        "weights=equal&weights=competence",
        "weights=equal&weights=equal",
    ],
)
def test_an_empty_or_repeated_query_value_is_a_400_not_the_default(world, query):
    url = f"/api/datasets/{world.dataset.pk}/correlations/?{query}"
    response = world.client("owner").get(url)
    assert response.status_code == 400, response.content
    assert list(errors_body(response)["errors"]) == [query.split("=")[0]]


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/api/campaigns/?status=", "status"),
        ("/api/runs/?dataset=", "dataset"),
        ("/api/judgments/?source=", "source"),
        ("/api/outputs/?dataset=1&run=", "run"),
        ("/api/outputs/?hmax=", "hmax"),
        ("/api/outputs/?include=", "include"),
        ("/api/outputs/?include=judgments,,scores", "include"),
    ],
)
def test_an_empty_filter_value_is_a_400_unless_the_filter_takes_text(world, url, name):
    response = world.client("owner").get(url)
    assert response.status_code == 400, response.content
    assert list(errors_body(response)["errors"]) == [name]
    assert world.client("owner").get("/api/runs/?metric=").status_code == 200  # text: any


@pytest.mark.parametrize(
    "url",
    [
        "/api/runs/",
        "/api/studies/",
        "/api/imports/",
        "/api/judgments/",
        "/api/learned/",
        "/api/campaigns/",
    ],
)
def test_an_object_filter_answers_alike_for_no_object_and_another_researchers(world, url):
    """Filtering by an id that names nothing you can see lists nothing, the same answer
    for a missing object and someone else's (a "Select a valid choice" 400 told them
    apart); an id out of range is a 400 naming the filter."""
    client = world.client("owner")
    name = {"/api/judgments/": "output", "/api/campaigns/": "study"}.get(url, "dataset")
    theirs = {
        "output": world.other_dataset.documents.first().outputs.first().pk,
        "study": world.other_dataset.studies.first().pk,
    }.get(name, world.other_dataset.pk)
    missing = client.get(f"{url}?{name}=987654321")
    hidden = client.get(f"{url}?{name}={theirs}")
    assert missing.status_code == hidden.status_code == 200
    assert missing.json()["count"] == hidden.json()["count"] == 0
    for bad in ("0", "-3", "1.5", str(2**63)):
        response = client.get(f"{url}?{name}={bad}")
        assert response.status_code == 400 and name in errors_body(response)["errors"], bad


def test_bodies_are_json_and_a_form_encoded_one_is_a_415(world):
    body = {"name": "S", "dataset": world.dataset.pk}
    form = world.client("owner").post("/api/studies/", body, format="multipart")
    assert form.status_code == 415 and errors_body(form)["errors"] == {}
    assert world.dataset.studies.count() == 1
    made = world.client("owner").post("/api/studies/", body, format="json")
    assert made.status_code == 201, made.content


def test_a_body_over_the_upload_limit_is_a_413_with_the_error_body(world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = world.client("owner")
    body = {"name": "x" * 2000, "dataset": world.dataset.pk}
    for url in ("/api/studies/", "/api/auth/token/"):
        response = client.post(url, body, format="json")
        assert response.status_code == 413 and errors_body(response)["errors"] == {}, url
    upload = client.post(
        "/api/imports/",
        {"file": SimpleUploadedFile("a.jsonl", b"{}"), "dataset": "x" * 2000},
        format="multipart",
    )
    assert upload.status_code == 413 and errors_body(upload)["errors"] == {}
    assert world.dataset.studies.count() == 1


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("sentinels", {"model": 0}, "model"),
        ("sentinels", {"seed": "5"}, "seed"),
        ("sentinels", {"aspect": ["COH"]}, "aspect"),
        ("studies", {"name": 7}, "name"),
        ("studies", {"aspects": ["1"]}, "aspects"),
        ("datasets", {"name": True}, "name"),
        ("runs", {"limit_docs": "2"}, "limit_docs"),
        ("campaigns", {"show_references": "yes"}, "show_references"),
        ("studies", {"name": "S" + " " * 200}, "name"),
        ("studies", {"name": " \u3000"}, "name"),
    ],
)
def test_a_json_value_of_another_type_than_documented_is_a_400_naming_it(world, url, body, field):
    base = {
        "dataset": world.dataset.pk,
        "name": "N",
        "task": "summarization",
        "metric": "rouge",
        "study": world.study.pk,
        "aspects": [world.study.aspects.first().pk],
    }
    path = f"/api/datasets/{world.dataset.pk}/sentinels/" if url == "sentinels" else f"/api/{url}/"
    before = Dataset.objects.count(), world.dataset.runs.count(), world.study.campaigns.count()
    response = world.client("owner").post(path, {**base, **body}, format="json")
    assert response.status_code == 400, response.content
    assert list(errors_body(response)["errors"]) == [field]
    assert (
        Dataset.objects.count(),
        world.dataset.runs.count(),
        world.study.campaigns.count(),
    ) == before


def test_text_with_nul_is_a_400_naming_it_before_any_lookup(world):
    """Found on PostgreSQL: a name with NUL reached the lookup, which raised a DataError
    (a 500); the schema documents request text as NUL-free."""
    client = world.client("owner")
    for path, body, field in (
        ("/api/datasets/", {"name": "N", "task": "summari\x00zation"}, "task"),
        (
            f"/api/studies/{world.study.pk}/members/",
            {"user": "ann\x00", "role": "annotator"},
            "user",
        ),
    ):
        response = client.post(path, body, format="json")
        assert response.status_code == 400, response.content
        assert errors_body(response)["errors"] == {field: ["Null characters are not allowed."]}


def test_a_browse_error_names_its_parameter(world):
    url = f"/api/outputs/?dataset={world.dataset.pk}"
    for query, name in (
        ("&run=987654", "run"),
        ("&system=nobody", "system"),
        ("&sort=run:987654", "sort"),
        ("&min=1", "run"),
        ("&hmin=1", "aspect"),
        ("&aspect=COH&hmin=3&hmax=2", "hmin"),
    ):
        response = world.client("owner").get(url + query)
        assert response.status_code == 400, query
        assert list(errors_body(response)["errors"]) == [name], query


def test_the_schema_says_what_the_api_refuses(schema):
    runs = parameters(schema, "/api/runs/")
    assert runs["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert runs["page"]["schema"]["minimum"] == 1
    assert (
        runs["dataset"]["schema"]["type"] == "integer" and runs["dataset"]["schema"]["minimum"] == 1
    )
    assert runs["ordering"]["schema"]["items"]["enum"] == [
        "id",
        "-id",
        "label",
        "-label",
        "created_at",
        "-created_at",
        "status",
        "-status",
    ]
    assert parameters(schema, "/api/outputs/")["include"]["schema"]["items"]["enum"] == [
        "judgments",
        "scores",
    ]
    assert "ordering" not in parameters(schema, "/api/studies/{id}/members/")  # it orders by name
    # a POST answering a list is neither filtered nor paginated
    start = schema["paths"]["/api/runs/"]["post"]
    assert "parameters" not in start or not parameters(schema, "/api/runs/", "post")
    assert start["responses"]["201"]["content"]["application/json"]["schema"]["type"] == "array"
    # bodies are JSON but for the uploads (and the token endpoint, which takes forms too)
    # and a resumable upload's chunks (raw bytes)
    chunks = {"application/offset+octet-stream"}
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            media = set(op.get("requestBody", {}).get("content", {}))
            if media and path not in ("/api/auth/token/",):
                allowed = [{"application/json"}, {"multipart/form-data"}]
                if (method, path) == ("patch", "/api/uploads/{id}/"):
                    allowed = [chunks]
                assert media in allowed, (method, path)
    components = schema["components"]["schemas"]
    study = components["StudyRequest"]["properties"]
    assert (study["name"]["pattern"], study["description"]["pattern"]) == (NOT_BLANK, NO_NUL)
    assert components["CampaignCreateRequest"]["properties"]["aspects"]["minItems"] == 1
