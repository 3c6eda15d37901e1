"""A run on a served endpoint: its model (a :class:`~scoring.lm.served.ServedModel`
over the endpoint's client, with the deployment's shared rate limiter, the database's
response cache and what is left of the run's cost cap), and its usage, added to the
run's ``usage`` after every batch of requests by every worker (so a resumed run, or one
shared by several workers, counts everything once).

A leaf of the runs package, beside :mod:`.model` (which loads through it)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scoring.lm.served import Call, Capabilities, EndpointUnavailable, ServedClient, ServedModel
from scoring.lm.served.client import Outcome
from scoring.lm.served.spec import quantile
from studies.models import Endpoint, MetricRun
from studies.services.catalog import endpoints
from studies.services.runs.types import RunError

MAX_RETRIES = 6  # per request, before the endpoint counts as unavailable (tests lower it)
KEPT_LATENCIES = 2000  # the latest request latencies a run keeps for its p50/p95
COUNTS = ("requests", "prompt_tokens", "completion_tokens", "cache_hits", "failures", "implausible")
Needs = Callable[[dict[str, Any], Capabilities], str]  # a runner's served needs: what is missing
# this process's clients of each run, which the run's heartbeat asks about an outage
_clients: dict[int, weakref.WeakSet[RunClient]] = {}


class RunClient(ServedClient):
    """A client that adds what it spent to its run's ``usage`` after each batch."""

    def __init__(self, run_id: int, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run_id = run_id
        _clients.setdefault(run_id, weakref.WeakSet()).add(self)
        self._saved: dict[str, Any] = {
            **dict.fromkeys(COUNTS, 0),
            "cost": 0.0,
            "retries": {},
            "latencies": 0,
        }

    def run(self, calls: Sequence[Call], *, use_cache: bool = True) -> list[Outcome]:
        try:
            return super().run(calls, use_cache=use_cache)
        finally:
            self.save_usage()

    def save_usage(self) -> None:
        """Add what was spent since the last save to the run's ``usage``."""
        usage, saved = self.usage, self._saved
        with self._lock:
            delta = {k: getattr(usage, k) - saved[k] for k in COUNTS}
            cost = usage.cost - saved["cost"]
            retries = {r: n - saved["retries"].get(r, 0) for r, n in usage.retries.items()}
            latencies = usage.latencies[saved["latencies"] :]
            fingerprints, models = sorted(self.fingerprints), sorted(self.models_seen)
            self._saved = {
                **{k: getattr(usage, k) for k in COUNTS},
                "cost": usage.cost,
                "retries": dict(usage.retries),
                "latencies": len(usage.latencies),
            }
        if not any(delta.values()) and not any(retries.values()) and not latencies:
            return
        with transaction.atomic():
            row = MetricRun.objects.select_for_update().only("usage").get(pk=self.run_id)
            merged = add_usage(
                dict(row.usage or {}), delta, cost, retries, latencies, fingerprints, models
            )
            MetricRun.objects.filter(pk=self.run_id).update(usage=merged)


def outage(run_id: int) -> dict[str, Any] | None:
    """The outage this process's clients of run ``run_id`` are in while they retry:
    ``since`` (epoch seconds of the first failure in a row) and the ``last`` failure;
    None while their requests succeed."""
    failing = [c for c in list(_clients.get(run_id, ())) if c.failing_since is not None]
    if not failing:
        return None
    first = min(failing, key=lambda c: c.failing_since or 0.0)
    return {"since": round(first.failing_since or 0.0, 3), "last": first.last_failure}


def add_usage(
    total: dict[str, Any],
    delta: dict[str, int],
    cost: float,
    retries: dict[str, int],
    latencies: list[float],
    fingerprints: list[str],
    models: list[str],
) -> dict[str, Any]:
    """``total`` (a run's ``usage``) with one client's spending since its last save."""
    for key, value in delta.items():
        total[key] = int(total.get(key, 0)) + value
    total["cost"] = round(float(total.get("cost", 0.0)) + cost, 10)
    merged = dict(total.get("retries") or {})
    for reason, n in retries.items():
        merged[reason] = int(merged.get(reason, 0)) + n
    total["retries"] = merged
    kept = [*total.get("latencies_ms", []), *(round(s * 1000, 1) for s in latencies)]
    total["latencies_ms"] = kept[-KEPT_LATENCIES:]
    ordered = sorted(total["latencies_ms"])
    p50, p95 = quantile(ordered, 0.5), quantile(ordered, 0.95)
    total["latency_p50_s"] = None if p50 is None else round(p50 / 1000, 4)
    total["latency_p95_s"] = None if p95 is None else round(p95 / 1000, 4)
    total["system_fingerprints"] = sorted({*total.get("system_fingerprints", []), *fingerprints})
    total["models_reported"] = sorted({*total.get("models_reported", []), *models})
    return total


def endpoint_of(run: MetricRun) -> Endpoint:
    """The endpoint a run was started on (its frozen ``endpoint`` entry)."""
    frozen = run.config.get("endpoint") or {}
    found = Endpoint.objects.filter(pk=frozen.get("id")).first()
    if found is None:
        raise RunError(f"The endpoint {frozen.get('name')!r} this run was started on is gone.")
    return found


def served_label(name: str, capabilities: Capabilities | None) -> str:
    """The model part of a served run's label: the endpoint and its model's version."""
    version = capabilities.version_label if capabilities else ""
    return f"{name}@{version}" if version else name


def settle_probe(run: MetricRun, needs: Needs | None) -> None:
    """A run started on an endpoint never probed (the web request that started it did
    not probe): probe it here, in the worker, refuse the run when the endpoint lacks what
    its metric ``needs`` (saying what), and freeze the model version found into the run's
    configuration and label, as a probed endpoint's run has from its start."""
    if not run.config.get("awaiting_probe"):
        return
    endpoint = endpoint_of(run)
    try:
        found = endpoints.stored_capabilities(endpoint) or endpoints.probe_endpoint(endpoint)
    except endpoints.EndpointProblem as exc:
        if exc.unavailable:  # down now: the run waits (pending) and is sent again later
            raise EndpointUnavailable(str(exc)) from exc
        raise RunError(str(exc)) from exc
    missing = needs(run.config, found) if needs else "it runs on no endpoint"
    if missing:
        raise RunError(f"The endpoint {endpoint.name!r} cannot run {run.label}: {missing}.")
    config = dict(run.config)
    config.pop("awaiting_probe")
    old_label = config["model_label"]
    config.update(
        model_version=found.model_version,
        model_version_source=found.version_source,
        model_label=served_label(endpoint.name, found),
    )
    parts = run.label.split(":")
    if len(parts) > 1 and parts[1] == old_label:  # metric:model_label:…
        parts[1] = config["model_label"]
    run.config, run.label = config, ":".join(parts)
    MetricRun.objects.filter(pk=run.pk).update(config=config, label=run.label)


def load_served_model(run: MetricRun) -> ServedModel:
    """The run's served model: the endpoint probed again before the run scores when its
    last probe is older than ``SERVED_PROBE_MAX_AGE_SECONDS`` (the probe's requests
    count as the run's), the shared limiter, the database cache (keyed on the model's
    version), and the cost cap less what the run has spent.

    A run whose endpoint now serves another model version than the one it was started
    on stops, saying so: found by that probe, or by an answer's ``system_fingerprint``
    (:class:`~scoring.lm.served.ModelChanged`, never cached). Its scores would mix two
    models; a new run shows as a different run."""
    endpoint = endpoint_of(run)
    started_on = str(run.config.get("model_version") or "")
    fingerprinted = run.config.get("model_version_source") == "system_fingerprint"
    cap = run.config.get("cost_cap")
    spent = float((run.usage or {}).get("cost", 0.0))
    try:
        client = RunClient(
            run.pk,
            endpoints.spec_of(endpoint, model_version=started_on, data_owner=run.dataset.owner_id),
            limiter=endpoints.shared_limiter(),
            cache=endpoints.DatabaseCache(),
            cost_cap=None if cap is None else max(0.0, float(cap) - spent),
            max_retries=MAX_RETRIES,
            patience=float(settings.CONCORDIA["SERVED_PATIENCE_SECONDS"]),
        )
        max_age = timedelta(seconds=settings.CONCORDIA["SERVED_PROBE_MAX_AGE_SECONDS"])
        stored = endpoints.stored_capabilities(endpoint)
        if (
            stored is None
            or endpoint.probed_at is None
            or (timezone.now() - endpoint.probed_at > max_age)
        ):
            capabilities = endpoints.probe_endpoint(endpoint, client)
        else:
            capabilities = stored
    except endpoints.EndpointProblem as exc:
        if exc.unavailable:  # down now: the run waits (pending) and is sent again later
            raise EndpointUnavailable(str(exc)) from exc
        raise RunError(str(exc)) from exc
    if fingerprinted:  # from now on every answer must come from the run's model version
        client.expected_fingerprint = started_on
    if started_on and capabilities.model_version != started_on:
        raise RunError(
            f"The endpoint {endpoint.name!r} now serves model version "
            f"{capabilities.model_version or 'unknown'!r}; this run was started on "
            f"{started_on!r}, and its scores would mix the two. Start a new run: it shows "
            "as a different run."
        )
    return ServedModel(client, capabilities=capabilities)
