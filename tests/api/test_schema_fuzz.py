"""Schema-driven fuzzing: schemathesis generates requests for every operation of the
OpenAPI schema and sends them, authenticated with a token, to a live server. No answer
may be a 5xx, and every answer must match the schema (status code, content type, body).
"""

from __future__ import annotations

import time

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from studies.services.tokens import token_for
from tests.api.conftest import build_world

EXAMPLES_PER_OPERATION = 10
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]  # fmt: skip


def purge_queues() -> None:
    """Runs and imports the fuzzer started were enqueued on commit: drop their messages,
    so no later worker picks them up."""
    from evalsite.celery import app

    with app.connection_for_write() as connection:
        for queue in ("cpu", "gpu"):
            app.amqp.queues[queue](connection.default_channel).declare()
            connection.default_channel.queue_purge(queue)


@pytest.mark.django_db(transaction=True)
def test_every_operation_survives_generated_requests(live_server, defaults_restored, cast,
                                                     write_jsonl, capsys):  # fmt: skip
    world = build_world(cast, write_jsonl)
    auth = {"Authorization": f"Token {token_for(world.users['owner']).key}"}
    schema = schemathesis.openapi.from_url(
        f"{live_server.url}/api/schema/?format=json", headers=auth
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    counts = {"cases": 0, "operations": 0}
    failures: list[str] = []
    started = time.monotonic()
    for operation in operations:
        counts["operations"] += 1

        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  phases=[Phase.explicit, Phase.generate], derandomize=True,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(case=operation.as_strategy())
        def send(case):  # type: ignore[no-untyped-def]
            counts["cases"] += 1
            response = case.call(base_url=live_server.url, headers=auth)
            try:
                case.validate_response(response, checks=CHECKS)
            except (Exception, BaseExceptionGroup) as exc:  # collected: one run reports them all
                failures.append(f"{case.operation.label}: {str(exc)[:1500]}")

        send()
    purge_queues()
    with capsys.disabled():
        print(f"\nschemathesis: {counts['cases']} cases over {counts['operations']} operations "
              f"in {time.monotonic() - started:.1f} s")  # fmt: skip
    assert counts["operations"] >= 40
    assert not failures, "\n\n".join(failures[:20])
