"""The site's routes, discovered from the URL resolver, with their URL kwargs filled from
the API world's objects: what the authorization matrix and the access sequences walk.

Routes are discovered recursively (``get_resolver()``), so a new route is checked as soon
as it exists; a route with a kwarg this module does not know fails with a message saying
where to add it. Each route is requested with GET; a route that answers an admin 405 is
requested with the method its ``Allow`` header names (POST, DELETE), with an empty body.
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

from learned.models import TrainedMetric
from studies.models import (
    Aspect,
    Endpoint,
    MetricRun,
    PromptTemplate,
    StudyMember,
    TaskKind,
    UploadSession,
)
from studies.services.uploads import start_upload
from tests.api.conftest import World
from tests.factories import UserFactory

OK, LOGIN, UNAUTH, FORBIDDEN, HIDDEN = "ok", "login", "401", "403", "404"

# which fixture object a ``pk`` kwarg names, by URL name (first match wins)
PK_RULES: tuple[tuple[str, Callable[[World], Any]], ...] = (
    (r"^(studies|api):run-tuning$", lambda w: tuned_run(w).pk),
    (r"^studies:(dataset-|run-new|correlations|sentinels|planner)", lambda w: w.dataset.pk),
    (r"^studies:run-", lambda w: w.run.pk),
    (r"^studies:study-", lambda w: w.study.pk),
    (r"^studies:import-", lambda w: w.job.pk),
    (r"^studies:endpoint-", lambda w: owners_endpoint(w).pk),
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
    (r"^api:endpoint-", lambda w: owners_endpoint(w).pk),
    (r"^api:upload-session-", lambda w: owners_upload(w).pk),
    (r"^learned:", lambda w: trained_metric(w).pk),
)


def trained_metric(world: World) -> Any:
    """A finished learned metric of the owner's dataset (its pages are the owner's)."""
    trained, _ = TrainedMetric.objects.get_or_create(
        label="matrix",
        dataset=world.dataset,
        aspect=Aspect.objects.get(code="COH"),
        defaults={"created_by": world.users["owner"], "status": TrainedMetric.Status.SUCCEEDED},
    )
    return trained


def tuned_run(world: World) -> Any:
    """A tuned run of the owner's dataset (a run no tuner made has no tuning page)."""
    found, _ = MetricRun.objects.get_or_create(
        dataset=world.dataset,
        label="matrix tuned",
        defaults={
            "metric": "tuned:calibration",
            "kind": MetricRun.Kind.IMPORTED,
            "status": MetricRun.Status.SUCCEEDED,
            "created_by": world.users["owner"],
            "config": {
                "tuning": {
                    "tuner": "calibration",
                    "options": {"method": "auto"},
                    "method": "isotonic",
                    "start_run": world.run.pk,
                    "seed": 0,
                    "tuned_on_documents": 2,
                }
            },
        },
    )
    return found


def owners_endpoint(world: World) -> Any:
    """A served endpoint of the owner's (theirs alone: collaborators do not see it)."""
    found, _ = Endpoint.objects.get_or_create(
        name="owners-endpoint",
        owner=world.users["owner"],
        defaults={"base_url": "http://127.0.0.1:9", "model_id": "m"},
    )
    return found


def owners_upload(world: World) -> Any:
    """A resumable upload of the owner's, under way (theirs alone: nobody else reaches it)."""
    found = UploadSession.objects.filter(owner=world.users["owner"], file_name="matrix.jsonl")
    return found.first() or start_upload(
        user=world.users["owner"],
        file_name="matrix.jsonl",
        file_format="jsonl",
        size=100,
        dataset_name="matrix",
        task=TaskKind.objects.get(code="summarization"),
    )


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
    elif name == "user_id":
        return spare_member(world).user_id
    elif name in ("format", "file_format"):
        choices = re.search(rf"\(\?P<{name}>\(?([^)]*)\)", route.regex)
        return "json" if name == "format" else choices[1].split("|")[0]  # type: ignore[index]
    pytest.fail(
        f"The route {route.full_name} ({route.regex}) has the URL kwarg {name!r} "
        f"(converter {converter or 'regex'}) that this test cannot fill: add it to kwarg_value() "
        "(or PK_RULES) in tests/api/routes.py with its expected statuses."
    )


@dataclass(frozen=True)
class Route:
    full_name: str  # namespace:name
    regex: str
    kwargs: tuple[str, ...]
    converters: dict[str, str]


def walk(
    patterns: list[Any],
    prefix: str = "",
    namespace: str = "",
    converters: dict[str, str] | None = None,
) -> Iterator[Route]:
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


@dataclass(frozen=True)
class Request:
    """One route's URL and the method it is requested with."""

    route: Route
    url: str
    method: str


def requests(world: World) -> list[Request]:
    """Every route of the site as a request (the admin's probe picks the method)."""
    admin_client = client_for(world, "admin")
    found = []
    for route in routes():
        kwargs = {k: kwarg_value(world, route, k) for k in route.kwargs}
        url = reverse(route.full_name, kwargs=kwargs)
        method = "get"
        probe = admin_client.get(url)
        if probe.status_code == 405:
            # the first method besides OPTIONS (DRF's @api_view lists them in set order)
            allowed = [m.strip().lower() for m in probe["Allow"].split(",")]
            method = next(m for m in allowed if m != "options")
            assert method in ("post", "put", "patch", "delete"), (url, probe["Allow"])
        found.append(Request(route, url, method))
    return found


def spare_member(world: World) -> Any:
    """A member of the owner's study whom nothing else in the world needs: removing a
    member is checked on them, and :func:`answer` puts them back before each request."""
    user = UserFactory(username="spare-member", role="annotator")
    member, _ = StudyMember.objects.get_or_create(
        study=world.study, user=user, defaults={"role": "annotator"}
    )
    return member


# what a route changes that the next request needs back, by URL name
PREPARE: dict[str, Callable[[World], Any]] = {"api:study-member": spare_member}


def answer(client: Client, request: Request, world: World) -> tuple[str, Any]:
    """The outcome of ``request`` for ``client``, and the response."""
    prepare = PREPARE.get(request.route.full_name)
    if prepare is not None:
        prepare(world)
    response = getattr(client, request.method)(request.url)
    return outcome(response), response
