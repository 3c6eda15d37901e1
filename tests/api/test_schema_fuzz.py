"""Schema conformance: schemathesis derives requests from the OpenAPI schema for every
operation, requests the schema allows and requests it forbids, sends them with an owner's
token to a live server and checks that the API and its schema agree. Its phases: coverage
(each parameter's boundaries, enum values, missing and mistyped values, methods no route
takes), fuzzing (random requests, valid and invalid) and stateful (chains of calls).

Every conformance check runs: no 5xx; every status code, content type, header and body is
the documented one; a request the schema allows is accepted and one it forbids refused; a
method the schema does not list is a 405 naming the allowed ones; a request without
credentials is refused; a created object can be read and a deleted one cannot. Only
``max_response_time`` is off: it measures speed, not conformance.

The server runs with DEBUG on, as a development server does, so a URL no route matches
must be the API's JSON 404 there too (Django shows an HTML page).
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from typing import Any

import pytest
import schemathesis
from django.core.servers import basehttp
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events

from studies.api.serializers.tuning import option_fields
from studies.services.tokens import token_for
from tests.api.conftest import build_world

EXAMPLES_PER_OPERATION = 5  # fuzzing; the coverage phase sends what the schema calls for
SEED = 1
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
]

# A 400 to a request the schema allows is a disagreement, unless it names only fields
# whose rule no schema can state: an id or a name that must be one of yours (or a new
# one), a rule across fields, a file's name and content, credentials, a password's quality.
STATISTIC_RULES = {"coef", "average", "ties"}  # which statistic exists at which level
SEMANTIC: dict[str, set[str]] = {
    "POST /api/auth/token/": {"non_field_errors"},
    "POST /api/datasets/": {"name"},  # unique among the writer's own datasets
    # unique among the writer's own endpoints; a host that resolves to a public address
    # (looked up when it is saved: beyond what a schema states)
    "POST /api/endpoints/": {"name", "base_url"},
    "POST /api/studies/": {"dataset", "aspects"},
    "POST /api/studies/{id}/members/": {"user", "role"},
    "POST /api/campaigns/": {
        "study",
        "aspects",
        "annotators",
        "systems",
        "overlap",
        "sample_size",
        "question_run_a",
        "question_run_b",
        "question_aspect",
    },
    "POST /api/learned/": {"dataset", "aspect", "datasets", "backbone"},
    "POST /api/runs/": {"aspects", "model", "non_field_errors"},
    # an aspect of the run's owner, a study of its dataset with a split, the run succeeded,
    # only the chosen tuner's options
    "POST /api/runs/{id}/tune/": {"aspect", "study", "non_field_errors", *option_fields()},
    "POST /api/imports/": {"file"},  # its name says its format
    "POST /api/runs/{id}/batch/results/": {"file"},  # JSON lines of the run's custom_ids
    "POST /api/datasets/{id}/upload/": {"file"},
    "POST /api/uploads/": {"file_name", "rescale"},  # its name says its format
    "POST /api/benchmarks/": {"accept_licence"},  # a non-commercial licence must be accepted
    # the browser's runs, systems and aspects are the dataset's; a range needs its run or
    # aspect and low <= high; the browser's parameters need a dataset
    "GET /api/outputs/": {"dataset", "run", "system", "aspect", "sort", "min", "hmin"},
    "GET /api/datasets/{id}/correlations/": STATISTIC_RULES,
    "GET /api/datasets/{id}/correlations/cell/{run}/{aspect}/": STATISTIC_RULES,
    "GET /api/datasets/{id}/correlations/paper/": STATISTIC_RULES,
    "GET /api/datasets/{id}/correlations/export/": STATISTIC_RULES,
    "GET /api/datasets/{id}/report-card/": STATISTIC_RULES,
    "GET /api/studies/{id}/report-card/": STATISTIC_RULES,
    # the study's aspects, its dataset's runs, an output judged on the aspect, a point of
    # the aspect's scale
    "GET /api/studies/{id}/adjudication/": {"aspect", "run"},
    "POST /api/studies/{id}/adjudication/": {"aspect", "run", "output", "value"},
}


# A chunk longer than what its upload session still expects is refused with 413 (the
# session's declared size and offset against the body's length: state, not schema).
PAST_DECLARED_SIZE = {"PATCH /api/uploads/{id}/"}


def is_semantic_refusal(failure: Any, case: Any, response: Any) -> bool:
    """A schema-valid request's 400 whose ``errors`` name only fields listed above, or a
    chunk past its session's declared size (413, whatever the fuzzer thought of it)."""
    if response.status_code == 413 and case.operation.label in PAST_DECLARED_SIZE:
        return type(failure).__name__ in ("RejectedPositiveData", "AcceptedNegativeData")
    if type(failure).__name__ != "RejectedPositiveData" or response.status_code != 400:
        return False
    try:
        fields = set(response.json()["errors"])
    except (ValueError, KeyError, TypeError):
        return False
    return bool(fields) and fields <= SEMANTIC.get(case.operation.label, set())


def purge_queues() -> None:
    """Runs and imports the fuzzer started were enqueued on commit: drop their messages,
    so no later worker picks them up."""
    from evalsite.celery import app

    with app.connection_for_write() as connection:
        for queue in ("cpu", "gpu", "io"):
            app.amqp.queues[queue](connection.default_channel).declare()
            connection.default_channel.queue_purge(queue)


def collect(stream: Any) -> tuple[list[str], Counter[str], Counter[str]]:
    """The run's failures (one per check, operation and kind, with a curl line to
    reproduce it) and errors, failures by check, and cases by phase."""
    found: list[str] = []
    by_check: Counter[str] = Counter()
    cases: Counter[str] = Counter()
    seen: set[tuple[str, str, str]] = set()
    for event in stream:
        if isinstance(event, events.NonFatalError | events.FatalError):
            info = event.info.format() if isinstance(event, events.NonFatalError) else ""
            found.append(f"error: {getattr(event, 'label', '')} {info or event}"[:2000])
            by_check["error"] += 1
        elif isinstance(event, events.ScenarioFinished):
            cases[str(event.phase.value)] += len(event.recorder.cases)
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.failure_info is None:
                        continue
                    failure = check.failure_info.failure
                    key = (check.name, failure.operation, failure.title)
                    if key not in seen:
                        seen.add(key)
                        by_check[check.name] += 1
                        response = event.recorder.find_response(case_id=case_id)
                        body = response.text[:300] if response is not None else ""
                        found.append(
                            f"{check.name}: {failure.operation}: {failure.title}\n"
                            f"{failure.message[:600]}\n{body}\n"
                            f"{check.failure_info.code_sample[:1500]}"
                        )
        elif isinstance(event, events.EngineFinished):
            for failure in event.failures:
                by_check["after_run"] += 1
                found.append(f"{failure.operation}: {failure.title}\n{failure.message[:600]}")
    return found, by_check, cases


@pytest.fixture
def no_delay(monkeypatch):  # type: ignore[no-untyped-def]
    """Django's test server writes a response's headers and body apart: with Nagle's
    algorithm on, each response then waits ~40 ms for the client's delayed ACK."""
    setup = basehttp.WSGIRequestHandler.setup

    def setup_no_delay(handler: Any) -> None:
        setup(handler)
        handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    monkeypatch.setattr(basehttp.WSGIRequestHandler, "setup", setup_no_delay)


@pytest.mark.django_db(transaction=True)
def test_the_api_and_its_schema_agree(
    live_server, no_delay, defaults_restored, cast, write_jsonl, settings, capsys
):  # type: ignore[no-untyped-def]
    settings.DEBUG = True
    world = build_world(cast, write_jsonl)
    auth = {"Authorization": f"Token {token_for(world.users['owner']).key}"}
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "headers": auth,
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
            "phases": {
                "examples": {"enabled": False},  # the schema has none
                "coverage": {"enabled": True},
                "fuzzing": {"enabled": True},
                "stateful": {"enabled": True},
            },
            "generation": {"max-examples": EXAMPLES_PER_OPERATION, "deterministic": True},
            "workers": 1,
            # a slow answer on a loaded machine is no disagreement with the schema (the
            # default, 10 s, failed a listing under CI's two passes)
            "request-timeout": 120,
        }
    )
    # a resumable upload's chunk is raw bytes, as any octet stream
    schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")
    schema = schemathesis.openapi.from_url(
        f"{live_server.url}/api/schema/?format=json", config=config, headers=auth, timeout=120
    )
    semantic: Counter[str] = Counter()

    @schema.hook
    def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
        if is_semantic_refusal(failure, case, response):
            semantic[case.operation.label] += 1
            return False
        return True

    started = time.monotonic()
    found, by_check, cases = collect(schemathesis.engine.from_schema(schema).execute())
    purge_queues()
    operations = len(list(schema.get_all_operations()))
    with capsys.disabled():
        print(
            f"\nschemathesis: {sum(cases.values())} cases ({dict(cases)}) over {operations} "
            f"operations in {time.monotonic() - started:.0f} s, {len(CHECKS)} checks: "
            f"{len(found)} failures {dict(by_check)}; {sum(semantic.values())} refusals "
            f"on rules no schema states"
        )
    assert operations >= 60 and cases["coverage"] > 1000 and cases["fuzzing"] > operations
    assert not found, f"{len(found)} failures:\n\n" + "\n\n".join(found[:20])
