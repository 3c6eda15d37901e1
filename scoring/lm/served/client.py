"""The HTTP engine behind every served model: bounded concurrency, shared rate limits,
retries, a response cache, usage and cost, and the bounds that keep a hostile server
from holding a worker or its memory.

:class:`ServedClient` sends JSON requests to an OpenAI-compatible endpoint with httpx
(async). Per batch, the cache is looked up at once in the calling thread (a hit costs
nothing and sends nothing), the misses are sent concurrently on a private event loop in
a helper thread, and each answer is stored as it arrives, again by the calling thread
(those that arrived together in one write): a process killed mid-batch has lost only
the answers in flight, and its job started again sends none of the others twice. The
event loop never touches the cache's store (a database connection opened by a helper
thread of a loop that ends with the batch is one never closed). Per request: the cost cap is
checked; the shared limiter grants a request and its estimated tokens; the request runs
under a semaphore of ``max_concurrency``.

Every request has a total deadline (``timeout``: connect, send, headers and every byte
of the answer, so a server dripping one byte at a time is cut off), its answer is read
while it streams and refused past ``max_response_bytes``, redirects are not followed,
and a researcher's endpoint is reached only where its egress policy allows, at the
address that was checked (:mod:`.egress`). A 429, a 5xx, a timeout or a refused
connection is retried with exponential backoff and full jitter (``Retry-After`` wins
when the server sends it), counted by reason in :class:`Usage`; after ``max_retries``
the endpoint is declared unavailable (:class:`EndpointUnavailable`) and the rest of the
batch is not sent. Any other 4xx is the request's own error (:class:`RequestRefused`);
an answer that cannot be read (not JSON, NaN or Infinity, a usage that is no token
count, too large) is that request's :class:`BadAnswer`. No message ever contains the
API key, and none quotes what a researcher's endpoint answered: a status and our own
reason only.

:meth:`ServedClient.run` is the synchronous facade a Celery worker calls: it runs one
batch of requests on a private event loop and returns one outcome per request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import httpx

from scoring.lm.served.answers import (
    TooLarge,
    Unreadable,
    read_capped,
    retry_after,
    strict_json,
)
from scoring.lm.served.cache import ResponseCache, cache_key
from scoring.lm.served.egress import EgressRefused, PinnedTransport
from scoring.lm.served.errors import (
    BadAnswer,
    CostCapReached,
    EndpointBlocked,
    EndpointError,
    EndpointUnavailable,
    ModelChanged,
    RequestRefused,
)
from scoring.lm.served.limits import Limiter, MemoryLimiter, acquire
from scoring.lm.served.protocols import WireProtocol, protocol_of
from scoring.lm.served.protocols.base import Call
from scoring.lm.served.spec import EndpointSpec, Usage

logger = logging.getLogger(__name__)

ERROR_BODY_BYTES = 64 * 1024  # of an error answer, read for its message, the rest left
MAX_LABEL = 200  # characters kept of a version or model name a server reports
T = TypeVar("T")


Outcome = dict[str, Any] | EndpointError


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
        if cost_cap is not None and not cost_cap >= 0:
            raise ValueError("the cost cap must be a number, not negative")
        self.spec = spec
        self.wire: WireProtocol = protocol_of(spec.protocol)
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
        or the :class:`EndpointError` that ended it. Identical calls are sent once. The
        cache is read before and written after, in this thread, in bulk."""
        if not calls:
            return []
        keys: list[str] = []
        unique: dict[str, tuple[str, dict[str, Any]]] = {}
        for call in calls:
            body = self.wire.with_model(call.body, self.spec.model_id)
            keys.append(self.key_of(call.route, body))
            unique.setdefault(keys[-1], (call.route, body))
        cache = self.cache if use_cache else None
        found = cache.get_many(list(unique)) if cache is not None else {}
        for answer in found.values():
            self._note(answer)
        with self._lock:
            self.usage.cache_hits += len(found)
        todo = {key: request for key, request in unique.items() if key not in found}
        answers = self._sent_and_stored(todo, cache) if todo else {}
        outcomes: dict[str, Outcome] = {**found, **answers}
        return [outcomes[key] for key in keys]

    def _sent_and_stored(
        self, todo: dict[str, tuple[str, dict[str, Any]]], cache: ResponseCache | None
    ) -> dict[str, Outcome]:
        """Send ``todo`` on a private event loop in a helper thread; meanwhile store in
        ``cache``, in this thread, each answer as it arrives (an error is not stored)."""
        arrived: queue.SimpleQueue[tuple[str, Outcome]] = queue.SimpleQueue()
        answers: dict[str, Outcome] = {}

        def store(wait: float) -> None:  # what arrived (waiting up to ``wait`` for a first)
            fresh: dict[str, dict[str, Any]] = {}
            try:
                key, outcome = arrived.get(timeout=wait) if wait else arrived.get_nowait()
                while True:
                    answers[key] = outcome
                    if not isinstance(outcome, EndpointError):
                        fresh[key] = outcome
                    key, outcome = arrived.get_nowait()
            except queue.Empty:
                pass
            if cache is not None and fresh:
                cache.set_many(fresh)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            sending = pool.submit(asyncio.run, self._send_all(todo, arrived.put))
            while not sending.done():
                store(0.2)
            store(0)
            sending.result()  # what went wrong in the loop itself, raised here
        return answers

    def key_of(self, route: str, body: dict[str, Any]) -> str:
        """The cache key of a request (``body`` with the model id)."""
        spec = self.spec
        return cache_key(spec.model_id, body, route, spec.model_version, spec.cache_scope)

    def post(self, route: str, body: dict[str, Any], *, use_cache: bool = True) -> dict[str, Any]:
        """One request; its answer, or its error raised."""
        outcome = self.run([Call(route, body)], use_cache=use_cache)[0]
        if isinstance(outcome, EndpointError):
            raise outcome
        return outcome

    def get(self, route: str) -> dict[str, Any] | None:
        """``GET route`` (say ``/v1/models``), once, uncached and unlimited, within the
        same bounds as every request: its JSON object, or ``None`` when the server gives
        none (a probe's optional question)."""

        async def once() -> dict[str, Any] | None:
            async with self._http() as http:
                try:
                    status, _, content = await self._exchange(http, "GET", route, None)
                    data = strict_json(content)
                except (httpx.HTTPError, TimeoutError, EgressRefused, TooLarge, Unreadable):
                    return None
                except (ValueError, RecursionError):  # not JSON
                    return None
            return data if status == 200 and isinstance(data, dict) else None

        return self._in_loop(once())

    @staticmethod
    def _in_loop(coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on a private event loop (in a helper thread when the caller
        is already inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coroutine).result()

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": "concordia-served/1", "Accept-Encoding": "identity"}
        if self.spec.api_key:
            headers["Authorization"] = f"Bearer {self.spec.api_key}"
        return headers

    def _http(self) -> httpx.AsyncClient:
        """A client of the endpoint: no redirects followed, no proxy from the
        environment for a researcher's endpoint (it would bypass the policy), which is
        reached through :class:`~scoring.lm.served.egress.PinnedTransport`."""
        spec = self.spec
        limits = httpx.Limits(
            max_connections=spec.max_concurrency,
            max_keepalive_connections=spec.max_concurrency,
        )
        transport: httpx.AsyncBaseTransport = httpx.AsyncHTTPTransport(
            limits=limits, trust_env=spec.trusted
        )
        if spec.egress is not None:
            transport = PinnedTransport(spec.egress, transport)
        return httpx.AsyncClient(
            base_url=spec.root,
            headers=self._headers(),
            timeout=httpx.Timeout(spec.timeout),
            transport=transport,
            follow_redirects=False,
            trust_env=spec.trusted,
        )

    # -- the async engine ---------------------------------------------------------------

    async def _send_all(
        self,
        todo: dict[str, tuple[str, dict[str, Any]]],
        arrived: Callable[[tuple[str, Outcome]], None],
    ) -> None:
        """Send ``todo``; each (key, outcome) handed to ``arrived`` as it comes."""
        async with self._http() as http:
            batch = _Batch(http, self.spec.max_concurrency)
            tasks = [
                asyncio.create_task(self._one(batch, key, route, body, arrived))
                for key, (route, body) in todo.items()
            ]
            await asyncio.gather(*tasks)

    async def _one(
        self,
        batch: _Batch,
        key: str,
        route: str,
        body: dict[str, Any],
        arrived: Callable[[tuple[str, Outcome]], None],
    ) -> None:
        outcome: Outcome
        try:
            outcome = await self._send(batch, route, body)
        except EndpointError as exc:
            with self._lock:
                self.usage.failures += 1
            outcome = exc
        arrived((key, outcome))

    async def _exchange(
        self, http: httpx.AsyncClient, method: str, route: str, body: dict[str, Any] | None
    ) -> tuple[int, httpx.Headers, bytes]:
        """(status, headers, body) of one exchange, all of it within the timeout; the
        body read while it streams, up to the size cap (an error's, up to a little)."""
        async with asyncio.timeout(self.spec.timeout):
            async with http.stream(method, route, json=body) as response:
                ok = response.status_code == 200
                cap = self.spec.max_response_bytes if ok else ERROR_BODY_BYTES
                content = await read_capped(response, cap, truncate=not ok)
                return response.status_code, response.headers, content

    def _check_cost(self, body: dict[str, Any]) -> float:
        """Reserve the request's estimated cost; raise when the cap would be passed."""
        prompt, completion = self.wire.estimate_tokens(body)
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

    def _no_answer(self, detail: str) -> str:
        """What a failed exchange says: the detail for an operator's endpoint; for a
        researcher's, one sentence whatever happened (refused, cut, silent), so failures
        tell nothing of what listens where."""
        if self.spec.trusted:
            return detail
        return (
            "no complete answer (the connection was refused or cut, or the answer took "
            f"longer than the {self.spec.timeout:g} s timeout)"
        )

    async def _send(self, batch: _Batch, route: str, body: dict[str, Any]) -> dict[str, Any]:
        spec = self.spec
        what = f"POST {route} to {spec.host} ({spec.model_id})"
        tokens = sum(self.wire.estimate_tokens(body))
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
                        status, headers, content = await self._exchange(
                            batch.http, "POST", route, body
                        )
                    except EgressRefused as exc:
                        batch.abort = EndpointBlocked(f"{what} was not sent: {exc}")
                        raise batch.abort from None
                    except TooLarge:
                        raise BadAnswer(
                            f"{what}: the answer is larger than {spec.max_response_bytes} "
                            "bytes; it was not read further"
                        ) from None
                    except Unreadable:
                        raise BadAnswer(
                            f"{what}: the answer is in a content encoding that cannot be read"
                        ) from None
                    except (TimeoutError, httpx.TimeoutException):
                        reason, wait = "timeout", None
                        last = self._no_answer(f"no answer within {spec.timeout:g} s")
                    except httpx.TransportError as exc:
                        reason, wait, last = "connect", None, self._no_answer(type(exc).__name__)
                    else:
                        seconds = time.perf_counter() - started
                        if status == 200:
                            self.failing_since = None
                            try:
                                return self._accept(content, seconds, what, body)
                            except ModelChanged as exc:
                                batch.abort = exc
                                raise
                        last = str(status)
                        if spec.trusted:
                            last += f": {self._scrub(self.wire.error_message(content))}"
                        if status == 429:
                            reason, wait = "429", retry_after(headers)
                        elif status >= 500:
                            reason, wait = "5xx", retry_after(headers)
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
        over = f" over {time.monotonic() - first_failure:.0f} s" if spec.trusted else ""
        error = EndpointUnavailable(
            f"{what} failed {attempt + 1} times in a row{over}; the last answer: {last}"
        )
        batch.abort = error
        raise error

    def _refused(self, what: str, last: str, status: int, batch: _Batch) -> RequestRefused:
        hint = {
            401: " (is the API key right?)",
            403: " (does the API key allow this model?)",
            404: " (is the model id served there, and the base URL right?)",
        }.get(status, "")
        if 300 <= status < 400:
            hint = " (it redirects, and redirects are not followed: give the final URL)"
        error = RequestRefused(f"{what} was refused{hint}: {last}", status)
        if error.endpoint_wide:
            batch.abort = error
        return error

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_max)
        with self._lock:
            return self._rng.uniform(0.0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def _accept(
        self, content: bytes, seconds: float, what: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        try:
            data = strict_json(content)
        except (ValueError, RecursionError):
            raise BadAnswer(
                f"{what} answered 200 with a body that is not JSON (NaN and Infinity are not)"
            ) from None
        if not isinstance(data, dict):
            raise BadAnswer(f"{what} answered 200 with JSON that is not an object")
        prompt, completion, implausible = self.wire.usage(data, body, what)
        with self._lock:
            self.usage.add_response(seconds, prompt, completion, self.spec.cost(prompt, completion))
            self.usage.implausible += implausible
        self._note(data)
        found = self.wire.model_version(data)[:MAX_LABEL]
        if self.expected_fingerprint and found and found != self.expected_fingerprint:
            raise ModelChanged(
                f"{what} answered from model version {found!r}, not "
                f"{self.expected_fingerprint!r}: the server's model changed"
            )
        return data

    def _note(self, data: dict[str, Any]) -> None:
        """Keep the model version the server reports (provenance)."""
        version, model = self.wire.model_version(data), self.wire.model_reported(data)
        with self._lock:
            if version:
                self.fingerprints.add(version[:MAX_LABEL])
            if model:
                self.models_seen.add(model[:MAX_LABEL])

    def _scrub(self, text: str) -> str:
        key = self.spec.api_key
        return text.replace(key, "[api key]") if key else text
