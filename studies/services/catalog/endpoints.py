"""Served endpoints: create one, probe what it can do, find one by name for a user, and
turn one into the scoring engine's :class:`~scoring.lm.served.EndpointSpec` (with its
key: the one place a stored key is decrypted; its egress policy and cache scope), with
the deployment's shared rate limiter and the database's response cache.

The key never leaves this module but in the spec's request header: messages name the
endpoint, its host and model, never the key (:func:`scrub` takes it out of any text
that passed a server). What an endpoint may be (its key's source, its host) is
:mod:`.endpoint_policy`'s; how many workers it may hold, :mod:`.endpoint_slots`'s.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.fernet import InvalidToken
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Sum
from django.db.models.functions import Length
from django.utils import timezone

from scoring.lm.served import (
    Capabilities,
    EndpointError,
    EndpointSpec,
    EndpointUnavailable,
    FileLimiter,
    Limiter,
    RedisLimiter,
    ServedClient,
    probe,
)
from studies.models import Dataset, Endpoint, Output, ServedResponse
from studies.models.endpoints import LIMIT_FIELDS, KeyUnavailable, rekeyed
from studies.permissions import visible_endpoints
from studies.services import queue
from studies.services.catalog import endpoint_policy, endpoint_slots

PROBE_TIMEOUT = 30.0  # seconds, at most, per probe request (tiny ones): a slow server
PROBE_SLOT_SECONDS = 1800.0  # the lease of a probe's slot (given back when it ends)

log = logging.getLogger(__name__)


class EndpointProblem(Exception):
    """An endpoint cannot be created, found or reached as asked; the message says why
    (and never contains a key). ``unavailable``: it did not answer (down, overloaded),
    so trying again later may work."""

    def __init__(self, message: str, *, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable


def create_endpoint(
    name: str,
    base_url: str,
    model_id: str,
    *,
    owner: Any = None,
    api_key: str | None = None,
    api_key_env: str = "",
    protocol: str = Endpoint.Protocol.OPENAI,
    **limits: Any,
) -> Endpoint:
    """Save a new endpoint (validated, the key and egress policies included; its key
    encrypted; an environment key bound to its URL). ``owner`` None: shared. The
    operator's shell and the API call it (the API never passes ``api_key_env``)."""
    unknown = set(limits) - set(LIMIT_FIELDS)
    if unknown:
        raise TypeError(f"unknown endpoint settings: {', '.join(sorted(unknown))}")
    endpoint = Endpoint(
        name=name,
        base_url=base_url,
        model_id=model_id,
        owner=owner,
        api_key_env=api_key_env,
        protocol=protocol,
        **{k: v for k, v in limits.items() if v is not None},
    )
    endpoint.set_api_key(api_key)
    whose = f"{owner}'s" if owner else "shared"
    if Endpoint.objects.filter(name=name, owner=owner).exists():
        raise EndpointProblem(f"There is already a {whose} endpoint named {name!r}.")
    try:
        endpoint.full_clean()
        endpoint_policy.check_endpoint(endpoint)
    except ValidationError as exc:
        raise EndpointProblem(_messages(exc)) from exc
    endpoint_policy.bind_key_env(endpoint)
    try:
        with transaction.atomic():
            endpoint.save()
    except IntegrityError as exc:  # created meanwhile
        raise EndpointProblem(f"There is already a {whose} endpoint named {name!r}.") from exc
    return endpoint


def _messages(exc: ValidationError) -> str:
    if hasattr(exc, "message_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return " ".join(exc.messages)


def find_endpoint(name: str, user: Any = None) -> Endpoint:
    """The endpoint ``name`` that ``user`` may use (theirs before a shared one of the
    same name); ``user`` None (the operator's shell): any, shared first. Another
    researcher's endpoint is "not found", as one that does not exist."""
    query = Endpoint.objects.all() if user is None else visible_endpoints(user)
    mine = getattr(user, "pk", None)
    candidates = sorted(
        query.filter(name=name),
        key=lambda e: (0 if mine and e.owner_id == mine else 1 if e.owner_id is None else 2, e.pk),
    )
    found = candidates[0] if candidates else None
    if found is None:
        raise EndpointProblem(f"No endpoint named {name!r} that you may use.")
    return found


def api_key_of(endpoint: Endpoint, environ: Mapping[str, str] | None = None) -> str | None:
    """The key requests send: the stored one, else the environment variable's when the
    key policy allows it for this endpoint and its URL (else nothing is sent at all)."""
    try:
        stored = endpoint.api_key()
    except KeyUnavailable as exc:
        raise EndpointProblem(str(exc)) from exc
    if stored:
        return stored
    if endpoint.api_key_env:
        refused = endpoint_policy.env_key_refusal(endpoint)
        if refused:
            raise EndpointProblem(f"Endpoint {endpoint.name!r}: {refused}")
        value = (os.environ if environ is None else environ).get(endpoint.api_key_env)
        if not value:
            raise EndpointProblem(
                f"Endpoint {endpoint.name!r} reads its key from ${endpoint.api_key_env}, "
                "which is not set in this worker's environment."
            )
        return value
    return None


def cache_scope(endpoint: Endpoint, data_owner: int | None = None) -> str:
    """Who answers (the host, and the researcher whose endpoint it is, or "shared") and
    for whom (``data_owner``, the researcher whose dataset the requests carry; None: the
    operator's): no other server's answer is taken for this one's, and a cache hit tells
    nobody what another researcher's data asked."""
    whose = "shared" if endpoint.owner_id is None else f"user:{endpoint.owner_id}"
    return f"{whose}@{endpoint.host}|for:{data_owner if data_owner is not None else 'operator'}"


def spec_of(
    endpoint: Endpoint, *, model_version: str | None = None, data_owner: int | None = None
) -> EndpointSpec:
    """The scoring engine's spec of ``endpoint``, with its key (never logged or shown),
    its egress policy (a researcher's) and its cache scope (``data_owner``: whose dataset
    a run scores); ``model_version`` (default: what its last probe found) keys its
    cached responses."""
    if model_version is None:
        model_version = str((endpoint.capabilities or {}).get("model_version") or "")
    try:
        return EndpointSpec(
            base_url=endpoint.base_url,
            model_id=endpoint.model_id,
            api_key=api_key_of(endpoint),
            max_concurrency=endpoint.max_concurrency,
            rpm=endpoint.rpm,
            tpm=endpoint.tpm,
            timeout=endpoint.timeout,
            price_in=endpoint.price_in,
            price_out=endpoint.price_out,
            protocol=endpoint.protocol,
            model_version=model_version,
            egress=endpoint_policy.egress_of(endpoint),
            cache_scope=cache_scope(endpoint, data_owner),
            max_response_bytes=settings.CONCORDIA["SERVED_MAX_RESPONSE_BYTES"],
        )
    except ValueError as exc:
        raise EndpointProblem(f"Endpoint {endpoint.name!r}: {exc}") from exc


def rekey_endpoints() -> tuple[int, list[str]]:
    """Every stored key encrypted again with the current endpoint key: (how many, the
    names of those no key can read)."""
    done, unreadable = 0, []
    for endpoint in Endpoint.objects.exclude(api_key_encrypted=""):
        try:
            token = rekeyed(endpoint.api_key_encrypted)
        except InvalidToken:
            unreadable.append(endpoint.name)
            continue
        Endpoint.objects.filter(pk=endpoint.pk).update(api_key_encrypted=token)
        done += 1
    return done, unreadable


def scrub(text: str, endpoint: Endpoint) -> str:
    """``text`` without the endpoint's key (a belt to the client's braces)."""
    try:
        key = api_key_of(endpoint)
    except EndpointProblem:
        return text
    return text.replace(key, "[api key]") if key else text


def shared_limiter() -> Limiter:
    """Rate limits shared by every worker: on Redis when the broker is Redis, else in a
    file under the data directory (every process of this machine)."""
    broker = str(settings.CELERY_BROKER_URL)
    if broker.startswith(("redis://", "rediss://")):
        return RedisLimiter.from_url(broker)
    return FileLimiter(Path(settings.DATA_DIR) / "served-limits.json")


class DatabaseCache:
    """The response cache in the database (:class:`~studies.models.ServedResponse`),
    shared by every worker and kept across runs; one query to read a batch, one to
    write it, from the caller's thread and its connection."""

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return ServedResponse.lookup_many(list(keys))

    def set_many(self, values: Mapping[str, dict[str, Any]]) -> None:
        rows = [
            ServedResponse(key=key, response=value, model_id=str(value.get("model") or "")[:200])
            for key, value in values.items()
        ]
        ServedResponse.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["key"], update_fields=["response"]
        )


def request_probe(endpoint: Endpoint) -> None:
    """Probe the endpoint in an ``io`` worker once the transaction commits (a page's
    save or Probe button; the page shows the probe waiting until it is done)."""
    endpoint.probe_requested_at = timezone.now()
    Endpoint.objects.filter(pk=endpoint.pk).update(probe_requested_at=endpoint.probe_requested_at)
    queue.send_on_commit(queue.PROBE_ENDPOINT, endpoint.pk, queue="io")


def probe_job(endpoint_id: int) -> str:
    """What the Celery task runs: probe (holding one of the endpoint's slots; when none is
    free, the probe is sent again a little later), store the findings or the error."""
    endpoint = Endpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        return "endpoint gone"
    with endpoint_slots.held(endpoint, PROBE_SLOT_SECONDS) as slot:
        if slot is None:
            queue.send(
                queue.PROBE_ENDPOINT,
                endpoint_id,
                queue="io",
                countdown=endpoint_slots.RETRY_SECONDS,
            )
            return f"{endpoint.name}: its slots are taken; sent again"
        try:
            probe_endpoint(endpoint)
        except EndpointProblem as exc:
            return str(exc)
    return f"probed {endpoint.name}"


def probe_endpoint(
    endpoint: Endpoint, client: ServedClient | None = None, *, ignore: Sequence[str] | None = None
) -> Capabilities:
    """Ask the endpoint what it can do (a dozen tiny requests, each within
    ``PROBE_TIMEOUT``) and store the findings; a failure (any: the probe never stays
    "requested") is stored as the probe's error and raised. ``client``: the one to ask
    with (a run's, which counts the requests as the run's own). ``ignore``: capabilities
    to record as absent (:data:`scoring.lm.served.probe.IGNORABLE`; an endpoint treated
    as top-k only); None keeps what the last probe was told."""
    if ignore is None:
        ignore = tuple((endpoint.capabilities or {}).get("ignored") or ())
    try:
        if client is None:
            spec = spec_of(endpoint)
            spec = dataclasses.replace(spec, timeout=min(spec.timeout, PROBE_TIMEOUT))
            client = ServedClient(spec, limiter=shared_limiter(), max_retries=2)
        found = probe(client, ignore=ignore)
    except Exception as exc:
        if isinstance(exc, EndpointError | EndpointProblem):
            message = scrub(str(exc), endpoint)
        else:  # a fault of ours: logged with its traceback, said without details
            log.exception("the probe of endpoint %s failed", endpoint.pk)
            message = f"the probe stopped on an unexpected error ({type(exc).__name__})"
        Endpoint.objects.filter(pk=endpoint.pk).update(probe_error=message, probe_requested_at=None)
        endpoint.probe_error, endpoint.probe_requested_at = message, None
        raise EndpointProblem(
            f"The probe of {endpoint.name!r} failed: {message}",
            unavailable=isinstance(exc, EndpointUnavailable),
        ) from exc
    endpoint.capabilities = found.as_dict()
    endpoint.probed_at = timezone.now()
    endpoint.probe_error = ""
    endpoint.probe_requested_at = None
    Endpoint.objects.filter(pk=endpoint.pk).update(
        capabilities=endpoint.capabilities,
        probed_at=endpoint.probed_at,
        probe_error="",
        probe_requested_at=None,
    )
    log.info("probed endpoint %s (%s)", endpoint.name, endpoint.host)
    return found


def stored_capabilities(endpoint: Endpoint) -> Capabilities | None:
    """What the last probe found; None when the endpoint was never probed (a web request
    never probes: a run waits for its probe in the worker)."""
    if endpoint.probed_at is None or not endpoint.capabilities:
        return None
    return Capabilities.from_dict(endpoint.capabilities)


def describe(endpoint: Endpoint) -> dict[str, Any]:
    """What provenance and pages record of an endpoint: never its key."""
    return {
        "id": endpoint.pk,
        "name": endpoint.name,
        "protocol": endpoint.protocol,
        "host": endpoint.host,
        "model_id": endpoint.model_id,
    }


CHARS_PER_TOKEN = 4  # English text with a modern tokenizer: about 4 characters a token
CHAT_TOKENS = 40  # a chat template's own tokens (roles, markers, a default system prompt)
# a template's, a rating form's or a pairwise question's own text, when the run's frozen
# configuration is not at hand (the run form's estimates)
PROMPT_CHARS = {"gptscore": 120, "geval": 900, "pairwise": 700}
STEPS_CHARS = 700  # G-Eval's evaluation steps, when they are still to be written
STEPS_TOKENS = 256  # and their generation (the most it may write)
EXACT_BELOW = 100  # an endpoint's top-k under this: assume every G-Eval output needs exact labels


def dataset_text(dataset: Dataset, limit_docs: int | None = None) -> dict[str, int]:
    """What a run's requests carry of ``dataset`` (its first ``limit_docs`` documents):
    the outputs, and the characters of their texts and of their documents' sources."""
    outputs = Output.objects.filter(document__dataset=dataset)
    if limit_docs:
        keys = dataset.documents.order_by("doc_key").values_list("doc_key", flat=True)
        outputs = outputs.filter(document__doc_key__in=list(keys[:limit_docs]))
    found = outputs.aggregate(
        n=Count("pk"), text=Sum(Length("text")), source=Sum(Length("document__source"))
    )
    return {key: int(value or 0) for key, value in found.items()}


def prompt_shape(metric: str, config: dict[str, Any]) -> dict[str, Any]:
    """A run's own prompt text per output, from its frozen configuration: G-Eval's form
    (introduction, criteria, steps, labels), GPTScore's template (without its slots); its
    G-Eval scale and whether the steps are still to be written."""
    if metric == "geval":
        steps = (config.get("steps") or {}).get("text")
        to_write = config.get("steps_mode") == "auto" and steps is None
        parts = [
            config.get("introduction") or "",
            config.get("criteria") or "",
            config.get("source_label") or "",
            config.get("output_label") or "",
            config.get("aspect_name") or "",
            steps or ("x" * STEPS_CHARS if to_write else ""),
        ]
        # the headers build_prompt adds ("Evaluation Criteria:", "Example:", the form…)
        chars = sum(len(p) for p in parts) + 110
        return {
            "form_chars": chars,
            "labels": [str(v) for v in config.get("scale") or ()],
            "steps_to_write": to_write,
            "chat": bool(config.get("use_chat_template", True)),
        }
    if metric == "gptscore":
        template = str((config.get("template") or {}).get("text") or "")
        slots = sum(template.count(s) for s in ("{src}", "{ref}", "{hypo}"))
        return {"form_chars": max(0, len(template) - 5 * slots), "chat": False}
    return {}


def _geval_requests(
    n: int, prompt_tokens: float, shape: dict[str, Any], found: Capabilities | None
) -> tuple[int, float, int]:
    """(requests, prompt tokens, completion tokens) of a G-Eval run's label reading: one
    next-token request per output (a second for labels of two tokens), and, where the
    endpoint's top-k is small and it gives prompt log-probabilities, one more per label
    (each label scored exactly: the prompt and the label)."""
    labels = shape.get("labels") or [str(v) for v in range(1, 6)]
    nodes = 1 + int(any(len(label) > 1 for label in labels))
    requests, tokens, completion = n * nodes, n * nodes * prompt_tokens, n * nodes
    if found is not None and found.exact_labels and found.chat_top_logprobs < EXACT_BELOW:
        extra = n * len(labels)
        requests += extra
        tokens += extra * (prompt_tokens + 1)
        completion += extra  # a chat request generates its one token
    return requests, tokens, completion


def estimate_cost(
    endpoint: Endpoint,
    dataset: Dataset,
    metric: str = "gptscore",
    *,
    limit_docs: int | None = None,
    n_samples: int = 0,
    directions: int = 1,
    text: dict[str, int] | None = None,
    pairs: int | None = None,
    shape: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What a run would spend on ``endpoint``, before it starts, from the per-metric
    prompt shape: the dataset's sources and outputs in tokens (characters / 4) plus the
    prompt's own text (``shape``: :func:`prompt_shape` of the run's configuration, else
    the metric's typical one), times the requests each output takes, times the
    endpoint's prices. GPTScore: one request per output and direction (``directions``:
    avg-f scores each output twice). G-Eval: the label reading
    (:func:`_geval_requests`, exact labels on an endpoint with a small top-k), a chat
    template's own tokens, and the evaluation steps' generation when they are still to
    be written; ``n_samples``: the sampled estimate instead (8 tokens a sample).
    ``text``: the dataset's :func:`dataset_text`, when the caller prices several runs of
    it; ``pairs``: a pairwise judge's pairs, each asked in two orders (a source and two
    outputs of the average length, one answer token; or 8 a sample). ``batch_cost``: the
    same tokens at the endpoint's batch prices (None when it has none)."""
    found = text if text is not None else dataset_text(dataset, limit_docs)
    n = int(found["n"] or 0)
    shape = shape or {}
    own = shape.get("form_chars", PROMPT_CHARS.get(metric, 500))
    extra: dict[str, Any] = {}
    if pairs is not None:  # each prompt: the source, two outputs and the question
        per_request = (int(found["source"] or 0) + 2 * int(found["text"] or 0)) / max(n, 1)
        requests = 2 * pairs
        prompt = int(requests * (per_request + own)) // CHARS_PER_TOKEN
        completion = requests * (8 * n_samples if n_samples else 1)
        extra = {"pairs": pairs}
    else:
        chars = (int(found["text"] or 0) + int(found["source"] or 0)) / max(n, 1) + own
        per_output = chars / CHARS_PER_TOKEN
        if metric == "geval":
            per_output += CHAT_TOKENS if shape.get("chat", True) else 0
            if n_samples:
                requests, tokens, completion = n, n * per_output, n * 8 * n_samples
            else:
                requests, tokens, completion = _geval_requests(
                    n, per_output, shape, stored_capabilities(endpoint)
                )
            if shape.get("steps_to_write") and n:
                requests += 1
                tokens += own / CHARS_PER_TOKEN
                completion += STEPS_TOKENS
            prompt = int(tokens)
        else:
            requests = n * max(1, directions)
            prompt = int(requests * per_output)
            completion = requests  # a server counts the token it generates (or echoes)
    return {
        "outputs": n,
        **extra,
        "requests": requests,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost": round((prompt * endpoint.price_in + completion * endpoint.price_out) / 1e6, 6),
        # the same requests through the endpoint's batch interface (None: no batch price)
        "batch_cost": round(
            (
                prompt * (endpoint.batch_price_in or 0.0)
                + completion * (endpoint.batch_price_out or 0.0)
            )
            / 1e6,
            6,
        )
        if endpoint.has_batch_price
        else None,
    }
