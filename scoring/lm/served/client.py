"""The HTTP engine behind every served model: bounded concurrency, shared rate limits,
retries, a response cache, usage and cost.

:class:`ServedClient` sends JSON requests to an OpenAI-compatible endpoint with httpx
(async). Per request: the cache is looked up (a hit costs nothing and sends nothing);
the cost cap is checked; the shared limiter grants a request and its estimated tokens;
the request runs under a semaphore of ``max_concurrency``. A 429, a 5xx, a timeout or a
refused connection is retried with exponential backoff and full jitter (``Retry-After``
wins when the server sends it), counted by reason in :class:`Usage`; after
``max_retries`` the endpoint is declared unavailable (:class:`EndpointUnavailable`) and
the rest of the batch is not sent. Any other 4xx is the request's own error
(:class:`RequestRefused`). No message ever contains the API key.

:meth:`ServedClient.run` is the synchronous facade a Celery worker calls: it runs one
batch of requests on a private event loop and returns one outcome per request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import itertools
import json
import logging
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from scoring.lm.served.cache import ResponseCache, cache_key
from scoring.lm.served.limits import Limiter, MemoryLimiter, acquire
from scoring.lm.served.spec import EndpointSpec, Usage

logger = logging.getLogger(__name__)

MAX_MESSAGE = 300  # characters of a server's error message kept in ours
ENDPOINT_WIDE = (401, 403, 404)  # refusals that no request of the batch can escape


class EndpointError(Exception):
    """Something went wrong talking to an endpoint; the message is safe to show."""


class EndpointUnavailable(EndpointError):
    """The endpoint kept failing (5xx, 429, timeouts, no connection) past the retries."""


class RequestRefused(EndpointError):
    """The endpoint answered a request with a 4xx other than 429: the request is at fault
    (a prompt longer than the model's context, a parameter it does not take), or, for
    401/403/404 (:attr:`endpoint_wide`), the endpoint's settings (key, model id, URL)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status

    @property
    def endpoint_wide(self) -> bool:
        return self.status in ENDPOINT_WIDE


class ModelChanged(EndpointError):
    """The server answered from another model version (``system_fingerprint``) than the
    one the client expects: its answers would mix two models, so nothing more is sent
    and the answer is not cached."""


class CostCapReached(EndpointError):
    """Sending the request would take the spending past the cost cap.

    ``partial`` (set by the model backends) holds the results finished before the cap,
    aligned with the requests (``None`` where nothing was scored)."""

    partial: list[Any] | None = None


@dataclass(frozen=True)
class Call:
    """One request: the route under the endpoint's root and the JSON body (without the
    model id, which the client adds)."""

    route: str
    body: dict[str, Any]


Outcome = dict[str, Any] | EndpointError


def estimate_tokens(body: dict[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens a request may use, for limits and the cost cap: the
    prompt's characters / 3 (few tokenizers do better than 3 characters a token on
    English) and the requested ``max_tokens`` times ``n``."""
    prompt = body.get("prompt", "")
    messages = body.get("messages", ())
    chars = len(prompt) if isinstance(prompt, str) else len(json.dumps(prompt))
    chars += sum(len(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    n = int(body.get("n") or 1)
    out = body.get("max_tokens")
    completion = (16 if out is None else int(out)) * n
    return chars // 3 + 1, completion


def retry_after(response: httpx.Response) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date), or ``None``."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def server_message(response: httpx.Response) -> str:
    """The error text a server put in its answer (OpenAI's ``{"error": {"message"}}``,
    vLLM's ``{"message"}``, or the raw body), cut short."""
    text = response.text
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            text = str(error["message"])
        elif isinstance(error, str):
            text = error
        elif data.get("message"):
            text = str(data["message"])
        elif data.get("detail"):
            text = str(data["detail"])
    text = " ".join(text.split())
    return text[:MAX_MESSAGE] + ("…" if len(text) > MAX_MESSAGE else "")


class _Batch:
    """State one batch's requests share: the semaphore, the abort signal, the client."""

    def __init__(self, http: httpx.AsyncClient, concurrency: int) -> None:
        self.http = http
        self.semaphore = asyncio.Semaphore(concurrency)
        self.abort: EndpointError | None = None


class ServedClient:
    """Requests to one endpoint, with its limits, retries, cache and accounting.

    ``limiter`` (default: one in this process's memory) enforces the spec's rpm/tpm;
    ``cache`` (default: none) answers repeated requests; ``cost_cap`` stops sending once
    the spending would pass it. Backoff before retry ``k`` (from 0) is uniform in
    ``[0, min(backoff_max, backoff_base·2^k)]`` unless the server says ``Retry-After``
    (then that, up to ``retry_after_max``). A request is given up after ``max_retries``
    retries and, besides, not before ``patience`` seconds of failures (a server being
    restarted: minutes), then the endpoint counts as unavailable. With
    ``expected_fingerprint``, an answer reporting another ``system_fingerprint`` raises
    :class:`ModelChanged` (a redeployed model) and stops the batch.
    """

    def __init__(
        self,
        spec: EndpointSpec,
        *,
        limiter: Limiter | None = None,
        cache: ResponseCache | None = None,
        cost_cap: float | None = None,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        retry_after_max: float = 120.0,
        patience: float = 0.0,
        expected_fingerprint: str = "",
        rng: random.Random | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries cannot be negative")
        if cost_cap is not None and cost_cap < 0:
            raise ValueError("the cost cap cannot be negative")
        self.spec = spec
        self.limiter: Limiter = limiter if limiter is not None else MemoryLimiter()
        self.cache = cache
        self.cost_cap = cost_cap
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.patience = patience
        self.expected_fingerprint = expected_fingerprint
        self.usage = Usage()
        self.fingerprints: set[str] = set()
        self.models_seen: set[str] = set()
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._reserved_cost = 0.0
        # an outage while it lasts: when requests began failing (time.time(), None while
        # they succeed) and the last failure, for whoever watches the client (a run page)
        self.failing_since: float | None = None
        self.last_failure = ""

    def __repr__(self) -> str:
        return f"ServedClient({self.spec!r})"

    # -- the synchronous facade -------------------------------------------------------

    def run(self, calls: Sequence[Call], *, use_cache: bool = True) -> list[Outcome]:
        """Send ``calls`` concurrently; one outcome per call, in order: the parsed answer
        or the :class:`EndpointError` that ended it. Runs its own event loop (in a
        helper thread when the caller is already inside one)."""
        if not calls:
            return []
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(calls, use_cache=use_cache))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self.arun(calls, use_cache=use_cache)).result()

    def post(self, route: str, body: dict[str, Any], *, use_cache: bool = True) -> dict[str, Any]:
        """One request; its answer, or its error raised."""
        outcome = self.run([Call(route, body)], use_cache=use_cache)[0]
        if isinstance(outcome, EndpointError):
            raise outcome
        return outcome

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": "concordia-served/1"}
        if self.spec.api_key:
            headers["Authorization"] = f"Bearer {self.spec.api_key}"
        return headers

    def get(self, route: str) -> dict[str, Any] | None:
        """``GET route`` (say ``/v1/models``), once, uncached and unlimited: its JSON
        object, or ``None`` when the server gives none (a probe's optional question)."""
        headers = self._headers()
        try:
            response = httpx.get(self.spec.root + route, headers=headers, timeout=self.spec.timeout)
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    # -- the async engine ---------------------------------------------------------------

    async def arun(self, calls: Sequence[Call], *, use_cache: bool = True) -> list[Outcome]:
        """The async form of :meth:`run`. Identical calls in one batch are sent once."""
        headers = self._headers()
        limits = httpx.Limits(
            max_connections=self.spec.max_concurrency,
            max_keepalive_connections=self.spec.max_concurrency,
        )
        async with httpx.AsyncClient(
            base_url=self.spec.root,
            headers=headers,
            timeout=httpx.Timeout(self.spec.timeout),
            limits=limits,
        ) as http:
            batch = _Batch(http, self.spec.max_concurrency)
            first: dict[str, asyncio.Task[Outcome]] = {}
            tasks: list[asyncio.Task[Outcome]] = []
            for call in calls:
                body = {"model": self.spec.model_id, **call.body}
                key = cache_key(self.spec.model_id, body, call.route, self.spec.model_version)
                if key not in first:
                    first[key] = asyncio.create_task(
                        self._one(batch, call.route, body, key, use_cache)
                    )
                tasks.append(first[key])
            await asyncio.gather(*first.values())
        return [task.result() for task in tasks]

    async def _one(
        self, batch: _Batch, route: str, body: dict[str, Any], key: str, use_cache: bool
    ) -> Outcome:
        try:
            if use_cache and self.cache is not None:
                found = await asyncio.to_thread(self.cache.get, key)
                if found is not None:
                    with self._lock:
                        self.usage.cache_hits += 1
                    self._note(found)
                    return found
            answer = await self._send(batch, route, body)
        except EndpointError as exc:
            with self._lock:
                self.usage.failures += 1
            return exc
        if use_cache and self.cache is not None:
            await asyncio.to_thread(self.cache.set, key, answer)
        return answer

    def _check_cost(self, body: dict[str, Any]) -> float:
        """Reserve the request's estimated cost; raise when the cap would be passed."""
        prompt, completion = estimate_tokens(body)
        estimate = self.spec.cost(prompt, completion)
        if self.cost_cap is None:
            return 0.0
        with self._lock:
            spent = self.usage.cost + self._reserved_cost
            if spent + estimate > self.cost_cap:
                raise CostCapReached(
                    f"the cost cap of {self.cost_cap:g} would be passed: {self.usage.cost:.6g} "
                    f"spent, {self._reserved_cost:.6g} in flight, and this request may cost "
                    f"{estimate:.6g} more"
                )
            self._reserved_cost += estimate
        return estimate

    async def _send(self, batch: _Batch, route: str, body: dict[str, Any]) -> dict[str, Any]:
        spec = self.spec
        what = f"POST {route} to {spec.host} ({spec.model_id})"
        tokens = sum(estimate_tokens(body))
        last, first_failure = "", 0.0
        for attempt in itertools.count():
            if batch.abort is not None:
                raise batch.abort
            try:
                reserved = self._check_cost(body)
            except CostCapReached as exc:
                batch.abort = exc  # the run stops here: nothing more is sent
                raise
            try:
                await acquire(self.limiter, spec.limiter_key, spec.rpm, spec.tpm, tokens)
                async with batch.semaphore:
                    if batch.abort is not None:
                        raise batch.abort
                    started = time.perf_counter()
                    try:
                        response = await batch.http.post(route, json=body)
                    except httpx.TimeoutException:
                        reason, wait, last = "timeout", None, f"no answer within {spec.timeout:g} s"
                    except httpx.TransportError as exc:
                        reason, wait, last = "connect", None, f"{type(exc).__name__}"
                    else:
                        seconds = time.perf_counter() - started
                        status = response.status_code
                        if status == 200:
                            self.failing_since = None
                            try:
                                return self._accept(response, seconds, what)
                            except ModelChanged as exc:
                                batch.abort = exc
                                raise
                        last = f"{status}: {self._scrub(server_message(response))}"
                        if status == 429:
                            reason, wait = "429", retry_after(response)
                        elif status >= 500:
                            reason, wait = "5xx", retry_after(response)
                        else:
                            raise self._refused(what, last, status, batch)
            finally:
                with self._lock:
                    self._reserved_cost -= reserved
            now = time.monotonic()
            first_failure = first_failure or now
            with self._lock:
                self.failing_since = self.failing_since or time.time()
                self.last_failure = last
            if attempt >= self.max_retries and now - first_failure >= self.patience:
                break
            with self._lock:
                self.usage.add_retry(reason)
            delay = self._backoff(attempt, wait)
            logger.info("%s: %s; retry %d in %.2f s", what, last, attempt + 1, delay)
            await asyncio.sleep(delay)
        error = EndpointUnavailable(
            f"{what} failed {attempt + 1} times in a row over "
            f"{time.monotonic() - first_failure:.0f} s; the last answer: {last}"
        )
        batch.abort = error
        raise error

    def _refused(self, what: str, last: str, status: int, batch: _Batch) -> RequestRefused:
        hint = {
            401: " (is the API key right?)",
            403: " (does the API key allow this model?)",
            404: " (is the model id served there, and the base URL right?)",
        }.get(status, "")
        error = RequestRefused(f"{what} was refused{hint}: {last}", status)
        if error.endpoint_wide:
            batch.abort = error
        return error

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_max)
        with self._lock:
            return self._rng.uniform(0.0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def _accept(self, response: httpx.Response, seconds: float, what: str) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            raise EndpointError(f"{what} answered 200 with a body that is not JSON") from exc
        if not isinstance(data, dict):
            raise EndpointError(f"{what} answered 200 with JSON that is not an object")
        usage = data.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        with self._lock:
            self.usage.add_response(seconds, prompt, completion, self.spec.cost(prompt, completion))
        self._note(data)
        found = str(data.get("system_fingerprint") or "")
        if self.expected_fingerprint and found and found != self.expected_fingerprint:
            raise ModelChanged(
                f"{what} answered from model version {found!r}, not "
                f"{self.expected_fingerprint!r}: the server's model changed"
            )
        return data

    def _note(self, data: dict[str, Any]) -> None:
        """Keep the model version the server reports (provenance)."""
        with self._lock:
            if data.get("system_fingerprint"):
                self.fingerprints.add(str(data["system_fingerprint"]))
            if data.get("model"):
                self.models_seen.add(str(data["model"]))

    def _scrub(self, text: str) -> str:
        key = self.spec.api_key
        return text.replace(key, "[api key]") if key else text
