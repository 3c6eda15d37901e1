"""Every URL pattern of the site, pages and API, for six roles: anonymous, annotator,
another annotator, the owner researcher, another researcher and an admin.

Routes are discovered from the URL resolver (``get_resolver()``, recursively), so a new
route is checked as soon as it exists; its URL kwargs are built from the fixture objects
by kwarg name (and converter), and a route with a kwarg this test does not know fails
with a message saying where to add it.

The Django admin is summarised: its index and one changelist per registered model
(every admin page is guarded by the same ``admin_view`` wrapper), not every admin pattern.

Each route is requested with GET; a route that answers an admin 405 is requested with
the method its ``Allow`` header names (POST), with an empty body.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from studies.models import Aspect, PromptTemplate
from tests.api.conftest import ROLES, World

pytestmark = pytest.mark.django_db

# which fixture object a ``pk`` kwarg names, by URL name (first match wins)
PK_RULES: tuple[tuple[str, Callable[[World], Any]], ...] = (
    (r"^studies:(dataset-|run-new|correlations|sentinels|planner)", lambda w: w.dataset.pk),
    (r"^studies:run-", lambda w: w.run.pk),
    (r"^studies:study-", lambda w: w.study.pk),
    (r"^studies:import-", lambda w: w.job.pk),
    (r"^studies:output-", lambda w: w.dataset.documents.first().outputs.first().pk),
    (r"^studies:document-", lambda w: w.dataset.documents.first().pk),
    (r"^annotation:", lambda w: w.campaign.pk),
    (r"^api:(dataset-|correlations)", lambda w: w.dataset.pk),
    (r"^api:import-", lambda w: w.job.pk),
    (r"^api:document-", lambda w: w.dataset.documents.first().pk),
    (r"^api:output-", lambda w: w.dataset.documents.first().outputs.first().pk),
    (r"^api:judgment-", lambda w: w.dataset.documents.first().outputs.first().judgments.first().pk),
    (r"^api:aspect-", lambda w: Aspect.objects.get(code="COH").pk),
    (r"^api:template-", lambda w: PromptTemplate.objects.first().pk),
    (r"^api:run-", lambda w: w.run.pk),
    (r"^api:study-", lambda w: w.study.pk),
    (r"^api:(annotate-)?campaign-", lambda w: w.campaign.pk),
    (r"^api:assignment-", lambda w: w.lease.pk),
    (r"^api:learned-", lambda w: trained_metric(w).pk),
    (r"^learned:", lambda w: trained_metric(w).pk),
)


def trained_metric(world: World) -> Any:
    """A finished learned metric of the owner's dataset (its pages are the owner's)."""
    from learned.models import TrainedMetric

    trained, _ = TrainedMetric.objects.get_or_create(
        label="matrix", dataset=world.dataset, aspect=Aspect.objects.get(code="COH"),
        defaults={"created_by": world.users["owner"], "status": TrainedMetric.Status.SUCCEEDED},
    )  # fmt: skip
    return trained


GLOBAL_OBJECTS = (r"^api:(aspect|template)-",)  # everyone's: not the owner's to hide


def kwarg_value(world: World, route: Route, name: str) -> Any:
    """The value of a URL kwarg, from the fixture objects (both dataset URL forms work:
    ``<slug:name>`` and ``<int:pk>``)."""
    converter = route.converters.get(name, "")
    if name == "pk":
        for pattern, value in PK_RULES:
            if re.search(pattern, route.full_name):
                return value(world)
    elif name == "name":
        return world.dataset.name
    elif name == "run":
        return world.run.pk
    elif name == "aspect":
        coh = Aspect.objects.get(code="COH")
        return coh.pk if converter == "IntConverter" else coh.code
    elif name == "task":
        return "summarization"
    elif name == "item":
        return world.lease.item_id
    elif name in ("format", "file_format"):
        choices = re.search(rf"\(\?P<{name}>\(?([^)]*)\)", route.regex)
        return "json" if name == "format" else choices[1].split("|")[0]  # type: ignore[index]
    pytest.fail(
        f"The route {route.full_name} ({route.regex}) has the URL kwarg {name!r} "
        f"(converter {converter or 'regex'}) that this test cannot fill: add it to kwarg_value() "
        "(or PK_RULES) in tests/api/test_authorization_matrix.py with its expected statuses."
    )


@dataclass(frozen=True)
class Route:
    full_name: str  # namespace:name
    regex: str
    kwargs: tuple[str, ...]
    converters: dict[str, str]


def walk(patterns: list[Any], prefix: str = "", namespace: str = "",
         converters: dict[str, str] | None = None) -> Iterator[Route]:  # fmt: skip
    """Every URLPattern below ``patterns`` with its full regex, namespaced name and kwargs."""
    for entry in patterns:
        regex = prefix + str(entry.pattern.regex.pattern).lstrip("^")
        found = {
            **(converters or {}),
            **{k: type(v).__name__ for k, v in getattr(entry.pattern, "converters", {}).items()},
        }
        if isinstance(entry, URLResolver):
            ns = entry.namespace
            if ns == "admin":
                continue  # summarised below
            yield from walk(
                entry.url_patterns,
                regex,
                f"{namespace}:{ns}".strip(":") if ns else namespace,
                found,
            )
        elif isinstance(entry, URLPattern):
            full = f"{namespace}:{entry.name}" if namespace else str(entry.name)
            assert entry.name, f"unnamed URL pattern {regex}: give it a name so it can be checked"
            yield Route(full, regex, tuple(re.compile(regex).groupindex), found)


def routes() -> list[Route]:
    return list(walk(get_resolver().url_patterns))


def admin_urls() -> list[str]:
    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        urls.append(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
    return urls


# --- expected outcomes --------------------------------------------------------------------
OK, LOGIN, UNAUTH, FORBIDDEN, HIDDEN = "ok", "login", "401", "403", "404"
RESEARCH_PAGE = {"anonymous": LOGIN, "annotator": FORBIDDEN, "other_annotator": FORBIDDEN,
                 "owner": OK, "other_researcher": HIDDEN, "admin": OK}  # fmt: skip
RESEARCH_API = {**RESEARCH_PAGE, "anonymous": UNAUTH}
ANNOTATE_PAGE = {"anonymous": LOGIN, "annotator": OK, "other_annotator": HIDDEN, "owner": HIDDEN,
                 "other_researcher": HIDDEN, "admin": HIDDEN}  # fmt: skip
ANNOTATE_API = {**ANNOTATE_PAGE, "anonymous": UNAUTH}
PUBLIC = dict.fromkeys(ROLES, OK)
LOGGED_IN = {**PUBLIC, "anonymous": LOGIN}


def expected(route: Route) -> dict[str, str]:
    name = route.full_name
    owned = bool(set(route.kwargs) - {"format", "file_format", "task", "aspect"}) and not any(
        re.search(p, name) for p in GLOBAL_OBJECTS
    )
    if name == "logout":
        return dict.fromkeys(ROLES, LOGIN)  # logs out, then shows the login page
    if name == "login" or name in ("api:schema", "api:docs", "api:token"):
        return PUBLIC
    if name in ("studies:home", "studies:api-token", "annotation:home"):
        return LOGGED_IN
    if name == "api:no-route":  # the API's last route: any other URL under /api/
        return dict.fromkeys(ROLES, HIDDEN)
    if name == "api:api-root":
        return {**PUBLIC, "anonymous": UNAUTH}
    if name.startswith(("api:annotate-campaign-", "api:assignment-")):
        return ANNOTATE_API if owned else {**PUBLIC, "anonymous": UNAUTH}
    if name in ("annotation:guidelines", "annotation:next", "annotation:item", "annotation:submit",
                "annotation:skip"):  # fmt: skip
        return ANNOTATE_PAGE
    table = RESEARCH_API if name.startswith("api:") else RESEARCH_PAGE
    if name.startswith(("studies:", "annotation:", "api:", "learned:")):
        return table if owned else {**table, "other_researcher": OK}
    pytest.fail(f"No expectation for the route {name} ({route.regex}): add one to expected() in "
                "tests/api/test_authorization_matrix.py")  # fmt: skip


def outcome(response: Any) -> str:
    code = response.status_code
    assert code < 500, f"server error {code}"
    if code in (401, 403, 404):
        return str(code)
    if code == 302 and "/login/" in response.get("Location", ""):
        return LOGIN
    return OK


def client_for(world: World, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


def test_every_route_answers_each_role_as_the_rules_say(world, capsys):
    clients = {role: client_for(world, role) for role in ROLES}
    checks, problems = 0, []
    found = routes()
    assert len(found) > 50 and any(r.full_name.startswith("api:") for r in found)
    for route in found:
        kwargs = {k: kwarg_value(world, route, k) for k in route.kwargs}
        url = reverse(route.full_name, kwargs=kwargs)
        method = "get"
        probe = clients["admin"].get(url)
        if probe.status_code == 405:
            # the first method besides OPTIONS (DRF's @api_view lists them in set order)
            allowed = [m.strip().lower() for m in probe["Allow"].split(",")]
            method = next(m for m in allowed if m != "options")
            assert method in ("post", "put", "patch", "delete"), (url, probe["Allow"])
        for role, want in expected(route).items():
            client = client_for(world, role) if route.full_name == "logout" else clients[role]
            response = getattr(client, method)(url)
            checks += 1
            got = outcome(response)
            if got != want:
                problems.append(
                    f"{method.upper()} {url} [{route.full_name}] as {role}: {response.status_code}, expected {want}"
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
        print(f"\nauthorization matrix: {len(found)} routes + {len(admin_urls())} admin pages "
              f"× {len(ROLES)} roles = {checks} checks")  # fmt: skip
    assert not problems, "\n".join(problems)


def test_a_route_with_an_unknown_kwarg_fails_with_a_message(world):
    route = Route(
        "api:new-thing", r"api/things/(?P<widget>[0-9]+)/", ("widget",), {"widget": "IntConverter"}
    )
    with pytest.raises(pytest.fail.Exception, match="add it to kwarg_value"):
        kwarg_value(world, route, "widget")
