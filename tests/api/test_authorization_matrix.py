"""Every URL pattern of the site, pages and API, for seven roles: anonymous, annotator,
another annotator, the owner researcher, a collaborator (a researcher member of the
owner's study), another researcher and an admin (routes: :mod:`tests.api.routes`).

The Django admin is summarised: its index and one changelist per registered model
(every admin page is guarded by the same ``admin_view`` wrapper), not every admin pattern.
The access model these rules encode is written in ``studies/permissions.py`` and the
README ("Who may do what"); :mod:`tests.api.test_access_sequences` walks the same routes
through sharing and revocation.
"""

from __future__ import annotations

import re

import pytest

from studies.models import MetricRun
from tests.api.conftest import ROLES
from tests.api.routes import (
    FORBIDDEN,
    GLOBAL_OBJECTS,
    HIDDEN,
    LOGIN,
    OK,
    UNAUTH,
    Route,
    admin_urls,
    answer,
    client_for,
    kwarg_value,
    requests,
    routes,
)

pytestmark = pytest.mark.django_db

RESEARCH_PAGE = {
    "anonymous": LOGIN,
    "annotator": FORBIDDEN,
    "other_annotator": FORBIDDEN,
    "owner": OK,
    "collaborator": OK,
    "other_researcher": HIDDEN,
    "admin": OK,
}
RESEARCH_API = {**RESEARCH_PAGE, "anonymous": UNAUTH}
ANNOTATE_PAGE = {
    "anonymous": LOGIN,
    "annotator": OK,
    "other_annotator": HIDDEN,
    "owner": HIDDEN,
    "collaborator": HIDDEN,
    "other_researcher": HIDDEN,
    "admin": HIDDEN,
}
ANNOTATE_API = {**ANNOTATE_PAGE, "anonymous": UNAUTH}
PUBLIC = dict.fromkeys(ROLES, OK)
LOGGED_IN = {**PUBLIC, "anonymous": LOGIN}

# What only a dataset's owner (or an admin) may do, so a collaborator is refused (403):
# share it (a study's members: invite, remove, create accounts), write into it, and rename
# its runs (a collaborator renames only the runs they started: the world's run is the
# owner's import).
OWNER_ONLY = (
    r"^api:study-(member|annotators)$",
    r"^api:dataset-upload$",
    r"^(studies|api):run-rename$",
)
# The owner's upload (an import job) and served endpoint are theirs alone: collaborators
# see the dataset, not them.
UPLOADER_ONLY = (r"^(studies|api):(import|endpoint)-",)
# A resumable upload under way is its uploader's alone: not even an admin reads or writes it.
UPLOADER_ALONE = (r"^api:upload-session-",)


def expected(route: Route) -> dict[str, str]:
    name = route.full_name
    owned = bool(set(route.kwargs) - {"format", "file_format", "task", "aspect"}) and not any(
        re.search(p, name) for p in GLOBAL_OBJECTS
    )
    if name == "logout":
        return dict.fromkeys(ROLES, LOGIN)  # logs out, then shows the login page
    if name in ("login", "favicon") or name in ("api:schema", "api:docs", "api:token"):
        return PUBLIC
    if name in ("studies:home", "studies:api-token", "annotation:home"):
        return LOGGED_IN
    if name == "api:no-route":  # the API's last route: any other URL under /api/
        return dict.fromkeys(ROLES, HIDDEN)
    if name == "api:api-root":
        return {**PUBLIC, "anonymous": UNAUTH}
    if name.startswith(("api:annotate-campaign-", "api:assignment-")):
        return ANNOTATE_API if owned else {**PUBLIC, "anonymous": UNAUTH}
    if name in (
        "annotation:guidelines",
        "annotation:next",
        "annotation:item",
        "annotation:submit",
        "annotation:skip",
    ):
        return ANNOTATE_PAGE
    table = RESEARCH_API if name.startswith("api:") else RESEARCH_PAGE
    if name == "api:study-annotators":  # the owner too needs create_annotator_accounts
        return {**table, "collaborator": FORBIDDEN, "owner": FORBIDDEN}
    if any(re.search(p, name) for p in OWNER_ONLY):
        return {**table, "collaborator": FORBIDDEN}
    if owned and any(re.search(p, name) for p in UPLOADER_ALONE):
        return {**table, "collaborator": HIDDEN, "admin": HIDDEN}
    if owned and any(re.search(p, name) for p in UPLOADER_ONLY):
        return {**table, "collaborator": HIDDEN}
    if name.startswith(("studies:", "annotation:", "api:", "learned:")):
        return table if owned else {**table, "other_researcher": OK}
    pytest.fail(
        f"No expectation for the route {name} ({route.regex}): add one to expected() in "
        "tests/api/test_authorization_matrix.py"
    )


def test_every_route_answers_each_role_as_the_rules_say(world, capsys):
    clients = {role: client_for(world, role) for role in ROLES}
    checks, problems = 0, []
    found = requests(world)
    assert len(found) > 50 and any(r.route.full_name.startswith("api:") for r in found)
    for request in found:
        for role, want in expected(request.route).items():
            logout = request.route.full_name == "logout"
            client = client_for(world, role) if logout else clients[role]
            got, response = answer(client, request, world)
            checks += 1
            if got != want:
                problems.append(
                    f"{request.method.upper()} {request.url} [{request.route.full_name}] as "
                    f"{role}: {response.status_code}, expected {want}"
                )
    for url in admin_urls():
        for role in ROLES:
            response = clients[role].get(url)
            checks += 1
            want = 200 if role == "admin" else 302
            if response.status_code != want or (
                want == 302 and "/admin/login/" not in response["Location"]
            ):
                problems.append(f"GET {url} as {role}: {response.status_code}, expected {want}")
    with capsys.disabled():
        print(
            f"\nauthorization matrix: {len(found)} routes + {len(admin_urls())} admin pages "
            f"× {len(ROLES)} roles = {checks} checks"
        )
    assert not problems, "\n".join(problems)


def test_the_pairwise_judge_routes_are_walked():
    # a run's pairs page and its API (issue 25): research routes of the run's dataset
    found = {route.full_name: route for route in routes()}
    assert {"studies:run-pairwise", "api:run-pairwise"} <= set(found)
    assert expected(found["api:run-pairwise"]) == RESEARCH_API
    assert expected(found["studies:run-pairwise"]) == RESEARCH_PAGE


def test_the_tuning_routes_are_walked_as_the_runs(world):
    # a tuned run's evidence page and its API (issue 40): research routes of the run's
    # dataset, requested for a tuned run (a run no tuner made has neither: 404)
    found = {r.route.full_name: r for r in requests(world)}
    assert expected(found["api:run-tuning"].route) == RESEARCH_API
    assert expected(found["studies:run-tuning"].route) == RESEARCH_PAGE
    assert expected(found["studies:run-detail"].route) == RESEARCH_PAGE
    tuned = found["api:run-tuning"].url
    assert tuned != f"/api/runs/{world.run.pk}/tuning/"
    owner = world.client("owner")
    assert owner.get(tuned).status_code == 200
    assert owner.get(f"/api/runs/{world.run.pk}/tuning/").status_code == 404
    # starting a tuning (a worker's job) is a research route of the run's dataset too
    assert expected(found["api:run-tune"].route) == RESEARCH_API
    assert found["api:run-tune"].method == "post"
    refused = owner.post(found["api:run-tune"].url, {}, content_type="application/json")
    assert refused.status_code == 400 and {"aspect", "tuner"} <= set(refused.json()["errors"])
    # and so is the run page's form that starts one (its own page: GET shows the form)
    assert expected(found["studies:run-tune"].route) == RESEARCH_PAGE
    assert found["studies:run-tune"].method == "get"


def test_a_route_with_an_unknown_kwarg_fails_with_a_message(world):
    route = Route(
        "api:new-thing", r"api/things/(?P<widget>[0-9]+)/", ("widget",), {"widget": "IntConverter"}
    )
    with pytest.raises(pytest.fail.Exception, match="add it to kwarg_value"):
        kwarg_value(world, route, "widget")


def test_the_resumable_upload_routes_are_walked_as_the_uploaders_alone(world):
    names = {r.route.full_name: r for r in requests(world)}
    for name in ("api:upload-session-detail", "api:upload-session-complete"):
        assert expected(names[name].route) == {
            **RESEARCH_API,
            "collaborator": HIDDEN,
            "other_researcher": HIDDEN,
            "admin": HIDDEN,
        }, name
    assert names["api:upload-session-complete"].method == "post"
    assert expected(names["api:upload-session-list"].route) == {
        **RESEARCH_API,
        "other_researcher": OK,
    }


def test_favicon_ico_is_the_pages_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("img/favicon.svg")
    from django.contrib.staticfiles import finders

    assert finders.find("img/favicon.svg")  # the file it points at


def test_the_judge_report_card_routes_are_walked_as_research_pages(world):
    names = {r.route.full_name: r for r in requests(world)}
    for name in (
        "studies:dataset-report-card",
        "studies:dataset-report-card-export",
        "studies:study-report-card",
    ):
        assert name in names and expected(names[name].route) == RESEARCH_PAGE, name
    for name in ("api:dataset-report-card", "api:study-report-card"):
        assert expected(names[name].route) == RESEARCH_API, name


def test_a_collaborator_renames_their_own_runs_never_the_owners(world):
    """Issue 36: collaborators could rename the owner's runs. The page and the API refuse
    them (403, the name unchanged) before reading the body; their own run they rename, and
    the owner and an admin rename any run of the dataset."""
    own = MetricRun.objects.create(
        dataset=world.dataset,
        metric="rougeL",
        label="theirs",
        kind=MetricRun.Kind.COMPUTED,
        status=MetricRun.Status.SUCCEEDED,
        created_by=world.users["collaborator"],
    )
    collaborator = world.client("collaborator")
    page = client_for(world, "collaborator")
    label = world.run.label
    for response in (
        collaborator.post(f"/api/runs/{world.run.pk}/rename/", {"label": "mine now"}),
        page.post(f"/runs/{world.run.pk}/rename/", {"label": "mine now"}),
    ):
        assert response.status_code == 403, response.content[:200]
    world.run.refresh_from_db()
    assert world.run.label == label
    assert "rename" not in page.get(f"/runs/{world.run.pk}/").content.decode()
    renamed = collaborator.post(f"/api/runs/{own.pk}/rename/", {"label": "my rouge"})
    assert renamed.status_code == 200 and renamed.json()["label"] == "my rouge"
    for role, name in (("owner", "owner's name"), ("admin", "admin's name")):
        response = world.client(role).post(f"/api/runs/{own.pk}/rename/", {"label": name})
        assert response.status_code == 200 and response.json()["label"] == name, role


def test_the_adjudication_routes_are_walked_as_research_routes():
    # the disagreement review (issue 40, item 4): a study's owner and its researchers
    # adjudicate, an annotator is refused, another researcher does not see it
    found = {route.full_name: route for route in routes()}
    assert expected(found["studies:study-adjudicate"]) == RESEARCH_PAGE
    assert expected(found["api:study-adjudication"]) == RESEARCH_API
