"""A run's model: the frozen fields that name it, loading it in the worker, and the
record of how it scored. The one seam between metrics and model backends: a run whose
configuration names a served endpoint gets a :class:`~scoring.lm.served.ServedModel`
(:mod:`.served`), any other the local engine; runners never ask which. A leaf of the
runs package (runner modules import it)."""

from __future__ import annotations

import math
from typing import Any

from django.db import transaction

from scoring.lm.encoder import HFEncoder
from scoring.lm.hf import HFLanguageModel  # cheap: torch loads with a model
from scoring.lm.precision import PRECISIONS
from studies.models import AspectVersion, Dataset, MetricRun
from studies.services.catalog import endpoints
from studies.services.catalog.model_catalog import fingerprint, resolve_model
from studies.services.runs.served import load_served_model, served_label
from studies.services.runs.types import RunError, RunRequest


def model_config(
    metric: str, dataset: Dataset, aspect_version: AspectVersion, request: RunRequest, user: Any
) -> dict[str, Any]:
    """The frozen fields every model-based run shares: the metric, the model (as asked,
    its label, location and files' hashes; or the served endpoint, with its host, model
    id and the model version its probe found, never its key, and the cost cap: a run on
    a redeployed model shows as a different run), the precision policy, the aspect
    version and the task."""
    precision, model = request.precision, request.model
    if precision not in PRECISIONS:
        raise RunError(f"Unknown precision {precision!r}; use {', '.join(PRECISIONS)}.")
    served: dict[str, Any] = {}
    if request.endpoint:
        if request.cost_cap is not None and not (
            math.isfinite(request.cost_cap) and request.cost_cap >= 0
        ):
            raise RunError("The cost cap must be a finite number, not negative.")
        try:  # the stored probe's findings: the model's version
            endpoint = endpoints.find_endpoint(request.endpoint, user)
        except endpoints.EndpointProblem as exc:
            raise RunError(str(exc)) from exc
        found = endpoints.stored_capabilities(endpoint)
        location, files = "", {}
        model = endpoint.model_id
        model_label = served_label(endpoint.name, found)
        served = {
            "endpoint": endpoints.describe(endpoint),
            "model_version": found.model_version if found else "",
            "model_version_source": found.version_source if found else "",
            "cost_cap": request.cost_cap,
        }
        if found is None:  # never probed: the worker probes before the run scores
            served["awaiting_probe"] = True
    else:
        location, model_label = resolve_model(model)
        files = fingerprint(location)
    return {
        "metric": metric,
        "model": model,
        "model_label": model_label,
        "model_location": location,
        "model_files": files,
        **served,
        "precision": precision,
        "aspect": aspect_version.aspect.code,
        "aspect_version": aspect_version.version,
        "aspect_definition": aspect_version.definition,
        "task": dataset.task.code,
    }


def load_language_model(run: MetricRun) -> Any:
    """The run's language model (GPTScore, G-Eval), loaded in the run's precision; how
    the engine scores (device, dtype, attention, versions) goes into the run's
    provenance, one entry per distinct engine (a run resumed on another worker adds one).
    A run on a served endpoint gets its :class:`~scoring.lm.served.ServedModel`."""
    if run.config.get("endpoint"):
        served = load_served_model(run)
        record_engine(run, {k: v for k, v in served.provenance().items() if k != "usage"})
        return served
    model = HFLanguageModel(
        run.config["model_location"],
        batch_size=run.config.get("batch_size", 8),
        precision=run.config.get("precision", "auto"),
    )
    record_engine(run, model.provenance())
    return model


def load_encoder(run: MetricRun) -> Any:
    """The run's sentence encoder (BERTScore-style similarity)."""
    c = run.config
    return HFEncoder(c["model_location"], layer=c.get("layer"), batch_size=c.get("batch_size", 32))


def record_engine(run: MetricRun, engine: dict[str, Any]) -> None:
    """Add ``engine`` to the run's provenance unless it is the latest one already there."""
    with transaction.atomic():
        row = MetricRun.objects.select_for_update().only("provenance").get(pk=run.pk)
        provenance = dict(row.provenance or {})
        engines = list(provenance.get("engines", []))
        if not engines or engines[-1] != engine:
            engines.append(engine)
        provenance["engines"] = engines
        MetricRun.objects.filter(pk=run.pk).update(provenance=provenance)
    run.provenance = provenance
