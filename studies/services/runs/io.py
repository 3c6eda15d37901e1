"""A run on a served endpoint as an ``io`` worker runs it: holding one of its endpoint's
slots (:mod:`~studies.services.catalog.endpoint_slots`) while it scores, renewed before
each chunk, so one endpoint never holds every ``io`` process. A run's message that finds
every slot taken comes back a little later (the run stays PENDING); a message for one
of its shards is left to the workers already on the run, which score every shard."""

from __future__ import annotations

from django.conf import settings

from studies.models import Endpoint, MetricRun
from studies.services import queue
from studies.services.catalog import endpoint_slots
from studies.services.runs.core import TASKS, execute_run


def execute_io_run(run_id: int, shard: int | None = None, on: str | None = None) -> str:
    """:func:`~studies.services.runs.core.execute_run` within a slot of the run's endpoint
    (``on``: the queue the message came from, where the shards' messages go)."""
    run = MetricRun.objects.filter(pk=run_id).only("config", "status").first()
    frozen = ((run.config or {}).get("endpoint") or {}) if run is not None else {}
    endpoint = Endpoint.objects.filter(pk=frozen.get("id")).first()
    if run is None or endpoint is None:  # the run says so when it fails
        return execute_run(run_id, shard=shard, fan_out=True, queue=on)
    lease = float(settings.CONCORDIA["RUN_LEASE_SECONDS"])
    with endpoint_slots.held(endpoint, lease) as slot:
        if slot is None:
            if shard is None and run.status == MetricRun.Status.PENDING:
                queue.send(TASKS["io"], run_id, queue=on, countdown=endpoint_slots.RETRY_SECONDS)
            return f"the slots of endpoint {endpoint.name} are taken; later"
        return execute_run(run_id, shard=shard, fan_out=True, queue=on, keepalive=slot.renew)
